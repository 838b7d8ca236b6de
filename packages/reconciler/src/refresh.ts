// Refresh: done objects whose status is older than the interval are marked `refreshing` (by
// compare-and-swap, so a newer write wins), at most `maxPerSecond` per second; the incremental round
// then runs Update on them as on pending objects.

import type { OperationRunner } from './runner.ts'
import { statusRefreshing } from './status.ts'

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
export async function markForRefresh<Obj>(runner: OperationRunner<Obj>, budget: RefreshBudget, now: number): Promise<number> {
  const { db, table, statusIndex, getObjectStatus, setObjectStatus, cloneObject, intervalMs } = {
    ...runner.cfg,
    intervalMs: runner.cfg.refreshIntervalMs,
  }
  const max = budget.take(now)
  if (max <= 0) return 0
  const txn = db.readTxn()
  const stale: Array<{ object: Obj; revision: number }> = []
  for (const e of table.list(txn, statusIndex.kind('done', statusIndex.isSet ? runner.cfg.name : undefined)).entries()) {
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
