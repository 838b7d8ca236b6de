// Change iterators: every write and deletion of a table, in revision order, each once (deletions
// come from the table's graveyard, graveyard.ts).
//
// Invariants:
// - an iterator yields every live object first (in revision order from 0), then every later write
//   and deletion in revision order, each once. An object deleted and inserted again before the
//   iterator reached the deletion is seen as the later insert only (the net change); deleted,
//   inserted and deleted again, as the last deletion only (as cilium's graveyard keeps one per key);
// - `next` returns an open watch only when the batch it returns holds nothing: while changes up to
//   the snapshot are unread (the first call, a batch read in part or not read at all), the watch is
//   already fired, so a consumer that waits before it reads, or reads only part, never sleeps on
//   changes it has (cilium's Test_Regression_Changes_Watch);
// - with `reuse`, every write's change record is one object per iteration, overwritten by the next
//   step (as a Go iterator yields a value): for a consumer that reads `object` and `revision` before
//   it goes on and keeps neither the record nor the iterable's results. Deletions are their
//   tombstones either way.

import { treeRevision } from './btree.ts'
import { TreeIterator } from './treeiterator.ts'
import { TxnError } from './errors.ts'
import { Entry, type TableView, type Tombstone } from './state.ts'
import { ReadTxn, WriteTxn, type TxnHost } from './txn.ts'
import { Watch } from './watch.ts'
import type { Graveyard, Tracker } from './graveyard.ts'

export interface Change<Obj> {
  readonly object: Obj
  readonly revision: number
  readonly deleted: boolean
}

/** How `ChangeIterator.next` hands out changes. */
export interface ChangeOptions {
  /**
   * One change record per iteration for writes, overwritten at each step: no allocation per change.
   * Read `object` and `revision` before the next step, and keep neither the record nor the iterable.
   */
  reuse?: boolean
}

export interface ChangeSource<Obj> {
  readonly name: string
  /** The table's deletions in one database (each database keeps its own, see DB.graveyardOf). */
  graveyardOf(db: TxnHost): Graveyard<Obj>
  anyWatch(txn: ReadTxn): Watch
}

const dropped = new FinalizationRegistry<{ graveyard: Graveyard<unknown>; tracker: Tracker }>(({ graveyard, tracker }) => {
  graveyard.trackers.delete(tracker)
  graveyard.collect()
})

export class ChangeIterator<Obj> {
  private readonly tracker: Tracker
  private readonly graveyard: Graveyard<Obj>
  private closed = false
  /** No batch handed out yet: the first `next` always returns a fired watch. */
  private first = true

  /** @internal */
  constructor(
    private readonly table: ChangeSource<Obj>,
    /** The database whose snapshots it reads (its deletions are logged per database). */
    private readonly db: TxnHost,
    floor: number,
  ) {
    this.tracker = { seen: 0, floor }
    this.graveyard = table.graveyardOf(db)
    this.graveyard.trackers.add(this.tracker)
    dropped.register(this, { graveyard: this.graveyard as Graveyard<unknown>, tracker: this.tracker }, this)
  }

  /**
   * The changes up to the snapshot `txn`, not seen yet, and a watch. Consuming the iterable marks
   * what it yielded as seen (a partial read resumes where it stopped). The watch is already fired
   * while the batch holds changes (read them, then call `next` again); once everything up to the
   * snapshot is read, it fires when the table changes after the snapshot. A write transaction reads
   * as the snapshot it began from: only committed changes are seen.
   */
  next(txn: ReadTxn | WriteTxn, options?: ChangeOptions): [Iterable<Change<Obj>>, Watch] {
    if (this.closed) throw new TxnError(`change iterator of table "${this.table.name}" is closed`)
    if (txn instanceof WriteTxn) txn = new ReadTxn(txn.db, txn.base)
    else if (!(txn instanceof ReadTxn))
      throw new TxnError(`change iterator of table "${this.table.name}": next() takes a transaction, got ${typeof txn}`)
    if (txn.db !== this.db)
      throw new TxnError(
        `change iterator of table "${this.table.name}": next() got a snapshot of another database than the one it was made with`,
      )
    const view = txn.view(this.table as never) as TableView<Obj>
    // A snapshot older than the iterator: the deletions between the two were never kept, so objects
    // read from it could not be followed to their deletion. Nothing to read from it; the (fired)
    // watch sends the caller to a newer snapshot.
    if (view.revision < this.tracker.floor) return [NOTHING, Watch.closed()]
    const unread = this.first || view.revision > this.tracker.seen
    this.first = false
    const watch = unread ? Watch.closed() : this.table.anyWatch(txn)
    const reuse = options?.reuse === true
    return [{ [Symbol.iterator]: () => this.iterate(view, reuse) }, watch]
  }

  /** Stops tracking deletions for this iterator. */
  close(): void {
    if (this.closed) return
    this.closed = true
    const g = this.graveyard
    g.trackers.delete(this.tracker)
    dropped.unregister(this)
    g.collect()
  }

  private iterate(view: TableView<Obj>, reuse: boolean): Iterator<Change<Obj>> {
    return new ChangeCursor(view, this.tracker, this.graveyard, () => this.closed, reuse)
  }
}

// Merges the live objects (by revision) and the graveyard up to the snapshot's revision. A
// hand-written iterator rather than a generator: every change of a busy table passes through here.
class ChangeCursor<Obj> implements Iterator<Change<Obj>> {
  private readonly upTo: number
  private readonly live: TreeIterator<number, Obj>
  private l: IteratorResult<Obj>
  private g: number
  private dead: Tombstone<Obj> | undefined
  private finished = false
  /** Reused: iterator consumers read `value` before calling next again (as TreeIterator's do). */
  private readonly result: { done: false; value: Change<Obj> } = { done: false, value: undefined as never }
  /** The one write record of a reusing cursor (its fields are overwritten at each step). */
  private readonly entry: { object: Obj; revision: number } | undefined

  constructor(
    private readonly view: TableView<Obj>,
    private readonly tracker: Tracker,
    private readonly graveyard: Graveyard<Obj>,
    private readonly isClosed: () => boolean,
    reuse: boolean,
  ) {
    this.entry = reuse ? (new Entry<Obj>(undefined as Obj, 0) as { object: Obj; revision: number }) : undefined
    this.upTo = view.revision
    this.live = new TreeIterator(view.byRevision.root, tracker.seen + 1, undefined, true)
    this.l = this.live.next()
    this.g = graveyard.firstAfter(Math.max(tracker.seen, tracker.floor))
    this.dead = graveyard.at(this.g)
  }

  next(): IteratorResult<Change<Obj>> {
    const tracker = this.tracker
    for (;;) {
      if (this.finished || this.isClosed()) return DONE
      const lrev = this.l.done ? Infinity : this.live.revision
      const dead = this.dead
      const drev = dead === undefined || dead.revision > this.upTo ? Infinity : dead.revision
      if (lrev === Infinity && drev === Infinity) {
        this.finished = true
        if (this.upTo > tracker.seen) tracker.seen = this.upTo
        this.graveyard.collect()
        return DONE
      }
      if (lrev < drev) {
        const reused = this.entry
        if (reused !== undefined) {
          reused.object = this.l.value
          reused.revision = lrev
        }
        // a write's change record (deleted: false)
        this.result.value = reused !== undefined ? (reused as Entry<Obj>) : new Entry(this.l.value, lrev)
        tracker.seen = lrev
        this.l = this.live.next()
        return this.result
      }
      tracker.seen = dead!.revision
      this.dead = this.graveyard.at(++this.g)
      // Deleted again later (up to the snapshot): that deletion is the net change.
      const later = dead!.supersededAt
      if (later !== 0 && later <= this.upTo) continue
      // Deleted, then inserted again before this iterator got here: the insert is the net change.
      if (this.view.primary.size > 0) {
        if (treeRevision(this.view.primary.root, dead!.key) > dead!.revision) continue
      }
      this.result.value = dead! // a Tombstone (deleted: true)
      return this.result
    }
  }
}

const DONE: IteratorResult<never> = { done: true, value: undefined }
const NOTHING: Iterable<never> = []
