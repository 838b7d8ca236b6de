// GarbageSecondaries: a PrimaryController's pass that deletes the observed secondaries stamped with
// its owner kind whose owner key is not a primary.
// Invariants:
// - The controller runs a pass only once every table is initialized: at start, at every resync and
//   every gcIntervalMs, and when an observed secondary's owner is gone.
// - Each object is judged on the latest snapshot: a primary that appeared since the pass began keeps
//   its secondaries, and a deleted primary whose removal has not succeeded (its onDelete hook fails
//   and is retried, its deletes are in flight) keeps them too: the removal deletes them, not GC.
// - With `primaryKeys` the store decides, not the table: a primary the store no longer holds (a
//   delete the table missed) loses its secondaries and is not synced while the store lacks it; a
//   primary the table got after the pass asked the store is newer than its answer and is kept.
// - Objects without our stamps (the owner-kind annotation: annotations are authoritative, labels are
//   for selectors) are never touched.
import type { ReadTxn, Table } from '@statewright/statedb'
import { SyncError } from './errors.ts'
import type { PrimaryControllerOptions } from './options.ts'
import type { Secondaries } from './secondaries.ts'
import type { Work } from './work.ts'

export class GarbageSecondaries<P> {
  /** A pass has completed (the controller is idle only after the first). */
  done = false
  /** The failures of the last pass (its first three), undefined when it had none. */
  lastError: string | undefined
  /** Primaries the table holds but the store did not at the last pass (see primaryKeys). */
  private goneInStore = new Set<string>()

  constructor(
    private readonly options: PrimaryControllerOptions<P>,
    private readonly work: Table<Work>,
    private readonly secondaries: Secondaries,
    /** A deleted primary whose removal (onDelete, the deletes) has not succeeded yet. */
    private readonly removing: (key: string) => boolean,
  ) {}

  /** The store did not hold this primary at the last pass: it is not synced. */
  goneFromStore(key: string): boolean {
    return this.goneInStore.has(key)
  }

  /** One pass; returns how many secondaries it deleted, throws a SyncError naming the failures. */
  async collect(): Promise<number> {
    const primaries = this.options.primaries
    const inTable = (txn: ReadTxn, owner: string) => primaries.get(txn, primaries.primary.query(owner as never)) !== undefined
    let store: Set<string> | undefined
    let before: ReadTxn | undefined
    if (this.options.primaryKeys) {
      before = this.options.db.readTxn() // a primary the table got after this is newer than the store's answer
      store = new Set(await this.options.primaryKeys(AbortSignal.timeout(60_000)))
      const gone = new Set<string>()
      for (const w of this.work.all(before)) if (!store.has(w.key) && inTable(before, w.key)) gone.add(w.key)
      this.goneInStore = gone
    }
    const { deleted, failures } = await this.secondaries.garbage((owner) => {
      // the latest snapshot for each object: a primary that appeared since keeps its secondaries
      const now = this.options.db.readTxn()
      if (store && before && inTable(before, owner) && !store.has(owner)) return false // the store deleted it
      if (inTable(now, owner)) return true
      return this.removing(owner) // its removal is still running or being retried
    })
    this.done = true
    this.lastError = failures.length ? failures.slice(0, 3).join('; ') : undefined
    if (failures.length)
      throw new SyncError(`garbage secondaries of ${this.options.kind}: ${failures.length} failure(s): ${this.lastError}`)
    return deleted
  }
}
