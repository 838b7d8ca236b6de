// Query results: lazy, re-iterable, in index key order (or in reverse: `reverse()`). What they
// yield is fixed when the query is made (./table.ts: a query in a write transaction reads a frozen
// copy of it).

import type { Entry } from './state.ts'

export class Results<Obj> implements Iterable<Obj> {
  /**
   * @internal `walk`, when given, calls its argument with every entry in order, as the source
   * would yield them, without an iterator (a full scan walks the tree directly).
   */
  constructor(
    private readonly source: () => Iterator<Entry<Obj>>,
    /** The same entries, greatest key first, when the index can walk backwards (a unique index). */
    private readonly backwards?: () => Iterator<Entry<Obj>>,
    private readonly walk?: (fn: (e: Entry<Obj>) => void) => void,
    /** Iterates the objects directly, when the source can (a full scan), instead of wrapping it. */
    private readonly objects?: () => Iterator<Obj>,
  ) {}

  [Symbol.iterator](): Iterator<Obj> {
    return this.objects !== undefined ? this.objects() : new ObjectIterator(this.source())
  }

  /** The results with the revision of each object's last write. */
  entries(): Iterable<Entry<Obj>> {
    return { [Symbol.iterator]: this.source }
  }

  /** Calls fn for each object, without the iterator protocol's per-step cost. */
  forEach(fn: (obj: Obj, revision: number) => void): void {
    if (this.walk !== undefined) return this.walk((e) => fn(e.object, e.revision))
    const it = this.source()
    for (let r = it.next(); !r.done; r = it.next()) fn(r.value.object, r.value.revision)
  }

  /**
   * The same results in descending key order. Lazy on a unique index (the primary index, the
   * revision index: newest write first); a non-unique index's results are collected first.
   */
  reverse(): Results<Obj> {
    if (this.backwards !== undefined) return new Results(this.backwards, this.source)
    return new Results(() => {
      const all: Entry<Obj>[] = []
      const it = this.source()
      // entries are read before the next step (iterators may reuse their result object)
      for (let r = it.next(); !r.done; r = it.next()) all.push(r.value)
      return all.reverse()[Symbol.iterator]()
    }, this.source)
  }

  toArray(): Obj[] {
    const out: Obj[] = []
    this.forEach((o) => out.push(o))
    return out
  }

  first(): Obj | undefined {
    const r = this.source().next()
    return r.done ? undefined : r.value.object
  }

  count(): number {
    let n = 0
    const it = this.source()
    while (!it.next().done) n++
    return n
  }
}

// A hand-written iterator (not a generator): full scans are a hot path.
class ObjectIterator<Obj> implements Iterator<Obj> {
  private readonly result: { done: boolean; value: Obj } = { done: false, value: undefined as Obj }
  constructor(private readonly it: Iterator<Entry<Obj>>) {}
  next(): IteratorResult<Obj> {
    const r = this.it.next()
    if (r.done) return r as IteratorResult<Obj>
    this.result.value = r.value.object
    return this.result
  }
}
