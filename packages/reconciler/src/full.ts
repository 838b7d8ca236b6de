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
//   again at the next prune (./prune.ts);
// - an Update that returns true counts the object as out of sync;
// - a success writes back (done, and the clone as Update left it) an object that was in error, or
//   whose clone Update changed (a property of the clone no longer the one of the stored object: what
//   Update records is kept, as cilium's full reconciliation keeps it); a done object whose clone is
//   unchanged stays as it is, so a full reconciliation of a healthy table writes nothing. Failures
//   are marked error and queued for retry.

import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { OperationRunner, Outcome } from './runner.ts'
import { prune } from './prune.ts'
import { wantsReconcile } from './status.ts'

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
  const pruneError = operations.prune ? (await prune(runner)).error : undefined
  const txn = db.readTxn()
  const ctx = runner.context(txn, true)

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
    await runner.commit(chunk, (o) => o.seenKind === 'error' || o.rewrite)
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
    o.rewrite = o.error === undefined && changedByUpdate(o.object, e.object)
    updated++
    chunk.push(o)
    if (chunk.length >= roundSize) await flush()
  }
  if (chunk.length > 0) await flush()
  const durationMs = performance.now() - started
  metrics?.fullReconciliation(cfg.name, durationMs / 1000, outOfSync)
  return pruneError === undefined ? { updated, outOfSync, errors, durationMs } : { updated, outOfSync, errors, pruneError, durationMs }
}

/** Whether Update changed its clone: an own property added, removed or set to another value. */
function changedByUpdate(clone: unknown, stored: unknown): boolean {
  if (clone === stored || typeof clone !== 'object' || clone === null) return false
  const a = clone as Record<string, unknown>
  const b = stored as Record<string, unknown>
  let n = 0
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue
    if (a[k] !== b[k] || !Object.hasOwn(b, k)) return true
    n++
  }
  for (const k in b) if (Object.hasOwn(b, k)) n--
  return n !== 0
}
