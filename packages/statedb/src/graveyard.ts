// The graveyard of deleted objects: what change iterators read to see deletions.
//
// Invariants:
// - an append-only log of deletions in revision order (commits of one table are serialized), kept
//   per database and table, shared by all snapshots; a snapshot reads only the entries at or below
//   its revision;
// - an entry is kept while some open iterator (a tracker) has not yet passed its revision and the
//   deletion came after that iterator was created; with no open iterator nothing is kept at all;
// - `last` holds, for every key with an entry kept, its latest deletion, and an earlier deletion of
//   the key kept has `supersededAt` set to the revision of the next one (so an iterator passes over
//   a deletion that a later one of the same key supersedes, as cilium's graveyard, an index by
//   primary key, keeps only the latest).
import type { EncodedKey } from './encoding.ts'
import type { Tombstone } from './state.ts'

/** Where one iterator is: it has seen everything up to `seen`; deletions at or below `floor` predate it. */
export interface Tracker {
  seen: number
  readonly floor: number
}

export class Graveyard<Obj> {
  /** Absolute index of log[0]. */
  private base = 0
  private log: Tombstone<Obj>[] = []
  private readonly last = new Map<EncodedKey, Tombstone<Obj>>()
  readonly trackers = new Set<Tracker>()

  /** The deleted objects kept (one per key: a key deleted twice counts once). */
  get size(): number {
    return this.last.size
  }

  append(deletes: readonly Tombstone<Obj>[]): void {
    if (this.trackers.size === 0) return
    const last = this.last
    for (const e of deletes) {
      this.log.push(e)
      const prev = last.get(e.key)
      if (prev !== undefined) prev.supersededAt = e.revision
      last.set(e.key, e)
    }
  }

  /** Drops the entries no tracker needs. */
  collect(): void {
    if (this.log.length === 0) return
    let mark = Infinity
    for (const t of this.trackers) mark = Math.min(mark, Math.max(t.seen, t.floor))
    let n = 0
    while (n < this.log.length && this.log[n]!.revision <= mark) n++
    if (n === 0) return
    if (n === this.log.length) {
      // everything seen: the common case, one clear instead of a delete per entry
      this.last.clear()
      this.log = []
      this.base += n
      return
    }
    for (let i = 0; i < n; i++) {
      const e = this.log[i]!
      if (this.last.get(e.key) === e) this.last.delete(e.key)
    }
    this.log.splice(0, n)
    this.base += n
  }

  /** Absolute position of the first entry above `revision`. */
  firstAfter(revision: number): number {
    let lo = 0
    let hi = this.log.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.log[mid]!.revision <= revision) lo = mid + 1
      else hi = mid
    }
    return this.base + lo
  }

  /** The entry at an absolute position, if still kept. */
  at(pos: number): Tombstone<Obj> | undefined {
    return this.log[pos - this.base]
  }
}

/** What the iterator needs of its table (kept narrow to avoid a cycle with table.ts). */
