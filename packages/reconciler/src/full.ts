// Full reconciliation.
//
// Full: Prune (the target removes what is not in the desired set; it gets every object of one
// snapshot) then Update of every object that is done or in error, in chunks of `roundSize` with one
// write-back per chunk. Pending and refreshing objects are left to the incremental round that
// follows. The caller runs it only once the table is initialized: pruning against a partial desired
// set would delete what the writers have not inserted yet.
//
// Invariants:
// - a failed prune does not stop the updates; it is reported (health degraded, metrics) and tried
//   again at the next full reconciliation;
// - an Update that returns true counts the object as out of sync;
// - successes write back only for objects that were in error (done objects stay as they are: a full
//   reconciliation of a healthy table writes nothing); failures are marked error and queued for retry.

import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { OperationRunner, Outcome } from './runner.ts'
import { errorMessage, wantsReconcile } from './status.ts'

export interface FullReport {
  /** Objects given to Update. */
  updated: number
  /** Objects whose Update reported a change of the target. */
  outOfSync: number
  /** Objects whose Update failed. */
  errors: number
  /** The prune's failure message, when it failed. */
  pruneError?: string
  durationMs: number
}

export async function fullReconciliation<Obj>(runner: OperationRunner<Obj>): Promise<FullReport> {
  const cfg = runner.cfg
  const { db, table, getObjectStatus, roundSize, operations, metrics } = cfg
  const started = performance.now()
  const txn = db.readTxn()
  const ctx = runner.context(txn, true)
  let pruneError: string | undefined
  if (operations.prune) {
    const t0 = performance.now()
    try {
      const r = operations.prune(table.all(txn), ctx)
      if (r !== undefined) await runner.race(Promise.resolve(r))
    } catch (err) {
      runner.signal.throwIfAborted()
      pruneError = errorMessage(err)
    }
    metrics?.prune(cfg.name, (performance.now() - t0) / 1000, pruneError !== undefined)
  }

  let updated = 0
  let outOfSync = 0
  let errors = 0
  let chunk: Outcome<Obj>[] = []
  const flush = async () => {
    runner.signal.throwIfAborted()
    for (const o of chunk) {
      if (o.changed) outOfSync++
      if (o.error !== undefined) errors++
    }
    await runner.commit(chunk, (o) => o.seenKind === 'error')
    chunk = []
    await yieldToEventLoop() // a large table must not starve timers and I/O
  }
  for (const e of table.all(txn).entries()) {
    const s = getObjectStatus(e.object)
    if (wantsReconcile(s)) continue
    const attempts = runner.takeRetry(e.object)
    const o = runner.updateOutcome(e.object, e.revision, s, attempts)
    const p = runner.run(o, ctx)
    if (p !== undefined) await p
    updated++
    chunk.push(o)
    if (chunk.length >= roundSize) await flush()
  }
  if (chunk.length > 0) await flush()
  const durationMs = performance.now() - started
  metrics?.fullReconciliation(cfg.name, durationMs / 1000, outOfSync)
  return pruneError === undefined ? { updated, outOfSync, errors, durationMs } : { updated, outOfSync, errors, pruneError, durationMs }
}
