// Query results: lazy, re-iterable, in index key order (or in reverse: `reverse()`). What they
// yield is fixed when the query is made (./table.ts: a query in a write transaction reads a frozen
// copy of it).
//
// Invariant: a source is a Cursor (./state.ts) that yields the objects themselves with their
// revisions beside them, so iterating or `forEach` allocates nothing per object; `entries()` makes
// an Entry per object (the indexes store none).

import { Entry, type Cursor } from './state.ts'

export class Results<Obj> implements Iterable<Obj> {
  /**
   * @internal `walk`, when given, calls its argument with every object and its revision in order,
   * as the source would yield them, without an iterator (a full scan walks the tree directly).
   */
  constructor(
    private readonly source: () => Cursor<Obj>,
    /** The same objects, greatest key first, when the index can walk backwards (a unique index). */
    private readonly backwards?: () => Cursor<Obj>,
    private readonly walk?: (fn: (obj: Obj, revision: number) => void) => void,
  ) {}

  [Symbol.iterator](): Iterator<Obj> {
    return this.source()
  }

  /** The results with the revision of each object's last write. */
  entries(): Iterable<Entry<Obj>> {
    return { [Symbol.iterator]: () => new EntryIterator(this.source()) }
  }

  /** Calls fn for each object, without the iterator protocol's per-step cost. */
  forEach(fn: (obj: Obj, revision: number) => void): void {
    if (this.walk !== undefined) return this.walk(fn)
    const it = this.source()
    for (let r = it.next(); !r.done; r = it.next()) fn(r.value, it.revision)
  }

  /**
   * The same results in descending key order. Lazy on a unique index (the primary index, the
   * revision index: newest write first); a non-unique index's results are collected first.
   */
  reverse(): Results<Obj> {
    if (this.backwards !== undefined) return new Results(this.backwards, this.source)
    return new Results(() => {
      const objects: Obj[] = []
      const revisions: number[] = []
      const it = this.source()
      // read before the next step (cursors reuse their result object)
      for (let r = it.next(); !r.done; r = it.next()) {
        objects.push(r.value)
        revisions.push(it.revision)
      }
      return new BackwardsCursor(objects, revisions)
    }, this.source)
  }

  toArray(): Obj[] {
    const out: Obj[] = []
    this.forEach((o) => out.push(o))
    return out
  }

  first(): Obj | undefined {
    const r = this.source().next()
    return r.done ? undefined : r.value
  }

  count(): number {
    let n = 0
    const it = this.source()
    while (!it.next().done) n++
    return n
  }
}

/** Objects and revisions collected in ascending order, yielded from the last. */
class BackwardsCursor<Obj> implements Cursor<Obj> {
  revision = 0
  private i: number
  private readonly result: { done: boolean; value: Obj } = { done: false, value: undefined as Obj }
  constructor(
    private readonly objects: Obj[],
    private readonly revisions: number[],
  ) {
    this.i = objects.length
  }
  next(): IteratorResult<Obj> {
    const r = this.result
    if (this.i === 0) {
      r.done = true
      r.value = undefined as Obj
      return r
    }
    const i = --this.i
    this.revision = this.revisions[i]!
    r.value = this.objects[i]!
    return r
  }
}

/** A cursor's objects as entries (one made per step). */
class EntryIterator<Obj> implements Iterator<Entry<Obj>> {
  constructor(private readonly it: Cursor<Obj>) {}
  next(): IteratorResult<Entry<Obj>> {
    const r = this.it.next()
    if (r.done) return r as IteratorResult<Entry<Obj>>
    return { done: false, value: new Entry(r.value, this.it.revision) }
  }
}
