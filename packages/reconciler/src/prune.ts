// Prune: the target removes everything that is not in the desired set (every object of one
// snapshot). It runs on its own (as soon as the table is initialized, on `triggerPrune`, every
// `pruneIntervalMs`) and at the start of each full reconciliation.
//
// Invariants:
// - it runs only on an initialized table (the caller checks): pruning against a partial desired set
//   would delete what the writers have not inserted yet;
// - a failed prune is reported (its error is the health's `pruneError` and the metrics' current
//   prune error until a prune succeeds) and is not retried before the next prune; it changes no
//   object's status.

import type { OperationRunner } from './runner.ts'
import { errorMessage } from './status.ts'

export interface PruneReport {
  /** The prune's failure message, when it failed. */
  error?: string
  durationMs: number
}

export async function prune<Obj>(runner: OperationRunner<Obj>): Promise<PruneReport> {
  const { db, table, operations, metrics, name } = runner.cfg
  const t0 = performance.now()
  let error: string | undefined
  const txn = db.readTxn()
  try {
    const r = operations.prune!(table.all(txn), runner.context(txn, true))
    if (r !== undefined) await runner.race(Promise.resolve(r))
  } catch (err) {
    runner.signal.throwIfAborted()
    error = errorMessage(err)
  }
  const durationMs = performance.now() - t0
  metrics?.prune(name, durationMs / 1000, error !== undefined)
  return error === undefined ? { durationMs } : { error, durationMs }
}
