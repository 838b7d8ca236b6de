// Full reconciliation and refresh.
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
//
// Refresh: done objects whose status is older than the interval are marked `refreshing` (by
// compare-and-swap, so a newer write wins), at most `maxPerSecond` per second; the incremental round
// then runs Update on them as on pending objects.

import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Engine, Outcome } from './engine.ts'
import { errorMessage, statusRefreshing, wantsReconcile } from './status.ts'

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

export async function fullReconciliation<Obj>(engine: Engine<Obj>): Promise<FullReport> {
  const cfg = engine.cfg
  const { db, table, getObjectStatus, roundSize, operations, metrics } = cfg
  const started = performance.now()
  const txn = db.readTxn()
  const ctx = engine.context(txn, true)
  let pruneError: string | undefined
  if (operations.prune) {
    const t0 = performance.now()
    try {
      const r = operations.prune(table.all(txn), ctx)
      if (r !== undefined) await engine.race(Promise.resolve(r))
    } catch (err) {
      engine.signal.throwIfAborted()
      pruneError = errorMessage(err)
    }
    metrics?.prune(cfg.name, (performance.now() - t0) / 1000, pruneError !== undefined)
  }

  let updated = 0
  let outOfSync = 0
  let errors = 0
  let chunk: Outcome<Obj>[] = []
  const flush = async () => {
    engine.signal.throwIfAborted()
    for (const o of chunk) {
      if (o.changed) outOfSync++
      if (o.error !== undefined) errors++
    }
    await engine.commit(chunk, (o) => o.seenKind === 'error')
    chunk = []
    await yieldToEventLoop() // a large table must not starve timers and I/O
  }
  for (const e of table.all(txn).entries()) {
    const s = getObjectStatus(e.object)
    if (wantsReconcile(s)) continue
    const attempts = engine.retries.size > 0 ? engine.retries.take(engine.key(e.object)) : 0
    const o = engine.updateOutcome(e.object, e.revision, s, attempts)
    const p = engine.run(o, ctx)
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

/** Tokens for refresh marking: at most `perSecond` per second, bursting up to one second's worth. */
export class RefreshBudget {
  private tokens: number
  private last = Date.now()
  constructor(private readonly perSecond: number) {
    this.tokens = perSecond
  }
  take(now: number): number {
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) / 1000) * this.perSecond)
    this.last = now
    const n = Math.floor(this.tokens)
    return n
  }
  spend(n: number): void {
    this.tokens -= n
  }
}

/** Marks up to the budget's worth of stale done objects `refreshing`. Returns how many. */
export async function markForRefresh<Obj>(engine: Engine<Obj>, budget: RefreshBudget, now: number): Promise<number> {
  const { db, table, statusIndex, getObjectStatus, setObjectStatus, cloneObject, intervalMs } = { ...engine.cfg, intervalMs: engine.cfg.refreshIntervalMs }
  const max = budget.take(now)
  if (max <= 0) return 0
  const txn = db.readTxn()
  const stale: Array<{ object: Obj; revision: number }> = []
  for (const e of table.list(txn, statusIndex.kind('done', statusIndex.isSet ? engine.cfg.name : undefined)).entries()) {
    if (getObjectStatus(e.object).updatedAt <= now - intervalMs) {
      stale.push(e)
      if (stale.length >= max) break
    }
  }
  if (stale.length === 0) return 0
  const wtxn = db.tryWriteTxn(table) ?? (await db.writeTxn(table))
  let marked = 0
  try {
    const refreshing = statusRefreshing()
    const batch = table.batch(wtxn)
    for (const e of stale) {
      if (batch.compareAndSwap(e.revision, setObjectStatus(cloneObject(e.object), refreshing))) marked++
    }
    wtxn.commit()
  } finally {
    wtxn.abort()
  }
  budget.spend(marked)
  return marked
}
