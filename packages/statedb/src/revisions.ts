// The revision index: a table's entries in revision order, for change iterators and revision queries.
//
// Not a second tree: one append-only array shared by the states of a table, each reading its first
// `length` entries. A write appends its entry and marks the entry it replaced or deleted with its own
// revision (`Entry.superseded`); it copies nothing. A tree here cost a path copy and a removal per
// write, about half of a write's time (docs/performance.md, issue 17's third round).
//
// Invariants (checked by validateRevisions, ./validate.ts):
// - entries[0..length) have strictly increasing revisions, all <= the state's revision;
// - an entry is in the state at revision R iff `superseded` is 0 or above R. Only the open write
//   transaction of the table marks entries, with revisions above every published state's, and it
//   undoes its marks and appends when it aborts: what a published state holds never changes;
// - the entries a state holds are exactly its primary index's (so length - size are stale);
// - states of a table form one line (a write transaction starts from the latest state), so entries
//   past a state's length belong to its successors. A writer that finds the array longer than its
//   base (never in normal use) copies it first;
// - a commit whose stale entries exceed an eighth of its live ones (and 32) writes a new, compacted
//   array; older states keep theirs. Stale entries and the objects they hold stay alive until then:
//   an eighth, not a half, because a replaced object is often larger than its entry (the reconciler's
//   pending objects kept 142 B per object alive at a half), at the price of a copy of the live
//   entries every size/8 writes.

import { InternalError } from './errors.ts'
import type { Entry } from './state.ts'

export interface RevisionIndex<Obj> {
  /** Shared with the table's other states: read only [0, length). */
  readonly entries: readonly Entry<Obj>[]
  readonly length: number
}

export function emptyRevisions<Obj>(): RevisionIndex<Obj> {
  // A fresh array per table: states of different tables never share one.
  return { entries: [], length: 0 }
}

const live = (e: Entry<unknown>, revision: number): boolean => e.superseded === 0 || e.superseded > revision

/** Position of the first entry with a revision >= rev (within the index's length). */
function lowerPos(idx: RevisionIndex<unknown>, rev: number): number {
  const entries = idx.entries
  let lo = 0
  let hi = Math.min(idx.length, entries.length)
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (entries[mid]!.revision < rev) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The entry written at `rev`, if the state at `revision` still holds it. */
export function revisionGet<Obj>(idx: RevisionIndex<Obj>, revision: number, rev: number): Entry<Obj> | undefined {
  const e = idx.entries[lowerPos(idx, rev)]
  return e !== undefined && e.revision === rev && live(e, revision) ? e : undefined
}

/**
 * The entries the state at `revision` holds, from the first with a revision >= `from`, in order.
 * Reuses its result object: read `value` before calling `next` again.
 */
export class RevisionIterator<Obj> implements IterableIterator<Entry<Obj>> {
  private i: number
  private readonly end: number
  private readonly result: { done: boolean; value: Entry<Obj> } = { done: false, value: undefined as never }

  constructor(
    private readonly idx: RevisionIndex<Obj>,
    private readonly revision: number,
    from: number,
  ) {
    this.i = from <= 0 ? 0 : lowerPos(idx, from)
    this.end = idx.length
  }

  [Symbol.iterator](): this {
    return this
  }

  next(): IteratorResult<Entry<Obj>> {
    const r = this.result
    const entries = this.idx.entries
    // `entries.length` too: the entries of an aborted transaction are gone from a writer's array.
    const end = Math.min(this.end, entries.length)
    while (this.i < end) {
      const e = entries[this.i++]!
      if (e.superseded === 0 || e.superseded > this.revision) {
        r.value = e
        return r
      }
    }
    r.done = true
    r.value = undefined as never
    return r
  }
}

/** One write transaction's changes to a table's revision index. */
export class RevisionWriter<Obj> {
  /** The array this writer appends to: the base state's (shared), or a copy of its part. */
  private readonly appended: Entry<Obj>[]
  /** What reads see: `appended`, or the compacted array once published. */
  private entries: Entry<Obj>[]
  /** Length of the base state: what abort truncates back to. */
  private readonly start: number
  /** Entries this writer marked superseded, for abort. */
  private readonly marked: Entry<Obj>[] = []

  constructor(base: RevisionIndex<Obj>) {
    const shared = base.entries as Entry<Obj>[]
    this.appended = shared.length === base.length ? shared : shared.slice(0, base.length)
    this.entries = this.appended
    this.start = base.length
  }

  /** The index as the transaction has it now (for reads inside it and for snapshots). */
  view(): RevisionIndex<Obj> {
    return { entries: this.entries, length: this.entries.length }
  }

  append(e: Entry<Obj>): void {
    this.appended.push(e)
  }

  /** `e` was replaced or deleted by the write at `revision`. */
  supersede(e: Entry<Obj>, revision: number): void {
    if (e.superseded !== 0) throw new InternalError(`statedb internal error: entry at revision ${e.revision} superseded twice`)
    e.superseded = revision
    this.marked.push(e)
  }

  /** The committed index: compacted when stale entries exceed an eighth of the `size` live ones. */
  publish(size: number): RevisionIndex<Obj> {
    const entries = this.entries
    const stale = entries.length - size
    if (stale <= 32 || stale * 8 <= size) return { entries, length: entries.length }
    const kept: Entry<Obj>[] = new Array(size)
    let n = 0
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (e.superseded === 0) kept[n++] = e
    }
    if (n !== size) throw new InternalError(`statedb internal error: ${n} live revision entries, ${size} objects`)
    this.entries = kept
    return { entries: kept, length: n }
  }

  /** Undoes every append and mark (the transaction aborted). */
  abort(): void {
    for (const e of this.marked) e.superseded = 0
    this.marked.length = 0
    if (this.appended.length > this.start) this.appended.length = this.start
    this.entries = this.appended
  }
}

/** Checks the invariants above for a state at `revision` with `size` objects; throws InternalError. */
export function validateRevisions(idx: RevisionIndex<unknown>, revision: number, size: number, what: string): void {
  let prev = 0
  let n = 0
  for (let i = 0; i < idx.length; i++) {
    const e = idx.entries[i]
    if (e === undefined) throw new InternalError(`${what}: entry ${i} of ${idx.length} missing`)
    if (e.revision <= prev) throw new InternalError(`${what}: revision ${e.revision} after ${prev}`)
    if (e.revision > revision) throw new InternalError(`${what}: revision ${e.revision} above the state's ${revision}`)
    prev = e.revision
    if (live(e, revision)) n++
  }
  if (n !== size) throw new InternalError(`${what}: ${n} live entries, ${size} objects`)
}
