// Full reconciliation.
//
// Full: Prune (the target removes what is not in the desired set; it gets every object of one
// snapshot) then Update of every object that is done or in error, in chunks of `roundSize` with one
// write-back per chunk (through `updateBatch`, one call per chunk, when batch operations are given).
// Pending and refreshing objects are left to the incremental round that follows. The caller runs it
// only once the table is initialized: pruning against a partial desired set would delete what the
// writers have not inserted yet.
//
// With a listing hook (`operations.list` and `inSync`), the target says what it holds and the round
// diffs: the listing is taken first, then one snapshot of the table is walked; listed objects the
// snapshot does not hold (pending ones count as held) are deleted first (the prune), then Update runs
// for objects in error and for done objects the listing lacks or `inSync` says differ. A done object
// the listing shows in sync gets no call.
//
// Fresh changes first: after each chunk, `between` runs one incremental round (the loop's), so a
// change made during a long full round waits for one chunk, not for the whole table. An object the
// snapshot holds is then updated only if it is still the version the table holds now (a fresh read
// after the round): a newer version, or its deletion, is the incremental round's, and an Update of
// the snapshot's older copy after it would undo it on the target.
//
// Invariants:
// - a failed prune does not stop the updates; it is reported (health degraded, metrics) and tried
//   again at the next prune (./prune.ts);
// - a failed listing changes nothing (no update, no delete, no status): it is reported as the
//   round's prune error and the full reconciliation is tried again after the reconciler's backoff
//   (./schedule.ts), so the diff is never dropped;
// - an Update that returns true (a batch entry marked `changed`) counts the object as out of sync;
//   with a listing, so does every object sent to Update because the listing lacks it or differs;
// - a success writes back (done, and the clone as Update left it) an object that was in error, or
//   whose clone Update changed (a property of the clone no longer the one of the stored object: what
//   Update records is kept, as cilium's full reconciliation keeps it); a done object whose clone is
//   unchanged stays as it is, so a full reconciliation of a healthy table writes nothing. Failures
//   are marked error and queued for retry; a failed delete of an extra is queued as a delete retry
//   (run only while the key is still absent from the table), as an incremental delete is.

import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Entry, ReadTxn } from '@statewright/statedb'
import type { OpContext } from './config.ts'
import type { OperationRunner, Outcome } from './runner.ts'
import type { RetryKey } from './retries.ts'
import { prune } from './prune.ts'
import { errorMessage, wantsReconcile } from './status.ts'

export interface FullReport {
  /** Objects given to Update. */
  updated: number
  /** Objects whose Update reported a change of the target (with a listing: also those it lacked or that differed). */
  outOfSync: number
  /** Objects whose Update failed (with a listing: also extras whose Delete failed). */
  errors: number
  /** The prune's failure message, when it failed (with a listing: `list failed: ...` when the listing did). */
  pruneError?: string
  durationMs: number
  /** With a listing hook: objects the listing returned. */
  listed?: number
  /** With a listing hook: done objects the listing showed in sync (no Update). */
  inSync?: number
  /** With a listing hook: listed objects the table does not hold, given to Delete. */
  extras?: number
  /** With a listing hook: the listing failed (nothing was done; retried after a backoff). */
  listError?: string
}

/** @internal The bench's switch (bench/storm.ts): off, a full round runs whole before the next incremental round. */
export const FULL_FRESH_FIRST = { enabled: true }

/** Runs one incremental round between chunks; resolves with the objects it acted on. */
export type Between = () => Promise<number>

export async function fullReconciliation<Obj>(runner: OperationRunner<Obj>, between?: Between): Promise<FullReport> {
  const cfg = runner.cfg
  if (cfg.operations.list !== undefined) return listedFull(runner, between)
  const { db, table, getObjectStatus, roundSize, operations, metrics } = cfg
  const started = performance.now()
  const pruneError = operations.prune ? (await prune(runner)).error : undefined
  const txn = db.readTxn()
  const ctx = runner.context(txn, true)
  const counts = { updated: 0, outOfSync: 0, errors: 0 }
  const chunk = new Chunk<Obj>(runner, ctx, counts, between)
  for (const e of table.all(txn).entries()) {
    const s = getObjectStatus(e.object)
    if (wantsReconcile(s)) continue
    await chunk.add(e, false)
    if (chunk.length >= roundSize) await chunk.flush()
  }
  await chunk.flush()
  const durationMs = performance.now() - started
  metrics?.fullReconciliation(cfg.name, durationMs / 1000, counts.outOfSync)
  return pruneError === undefined ? { ...counts, durationMs } : { ...counts, pruneError, durationMs }
}

/** The updates of a full reconciliation, written back (and, with batch operations, run) a chunk at a time. */
class Chunk<Obj> {
  private outcomes: Outcome<Obj>[] = []
  /** Per outcome: the stored object (to tell whether Update changed its clone), and whether a listing found it out of sync. */
  private stored: Obj[] = []
  private drifted: boolean[] = []

  constructor(
    private readonly runner: OperationRunner<Obj>,
    private readonly ctx: OpContext,
    private readonly counts: { updated: number; outOfSync: number; errors: number },
    private readonly between: Between | undefined,
  ) {}

  /** Set once an incremental round acted between chunks: the table as it is now, to skip stale snapshot copies. */
  private current: ReadTxn | undefined

  get length(): number {
    return this.outcomes.length
  }

  /** Takes the object's retry (its attempts carry over) and, without batch operations, runs its Update now. */
  async add(e: Entry<Obj>, drifted: boolean): Promise<void> {
    const runner = this.runner
    if (this.current && runner.cfg.table.getEntry(this.current, runner.primaryQuery(e.object))?.revision !== e.revision) return
    const s = runner.cfg.getObjectStatus(e.object)
    const o = runner.updateOutcome(e.object, e.revision, s, runner.takeRetry(e.object))
    if (runner.cfg.batchOperations === undefined) {
      const p = runner.run(o, this.ctx)
      if (p !== undefined) await p
    }
    this.outcomes.push(o)
    this.stored.push(e.object)
    this.drifted.push(drifted)
  }

  async flush(): Promise<void> {
    const outcomes = this.outcomes
    if (outcomes.length === 0) return
    const runner = this.runner
    if (runner.cfg.batchOperations !== undefined) await runner.runBatch(outcomes, this.ctx)
    runner.signal.throwIfAborted()
    const c = this.counts
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!
      c.updated++
      if (o.changed || this.drifted[i]) c.outOfSync++
      if (o.error !== undefined) c.errors++
      o.rewrite = o.error === undefined && changedByUpdate(o.object, this.stored[i])
    }
    await runner.commit(outcomes, (o) => o.seenKind === 'error' || o.rewrite)
    runner.release(outcomes)
    this.outcomes = []
    this.stored = []
    this.drifted = []
    await yieldToEventLoop() // a large table must not starve timers and I/O
    // fresh changes first: what changed meanwhile is reconciled now, not after the whole table
    if (this.between && FULL_FRESH_FIRST.enabled && (await this.between()) > 0) this.current = runner.cfg.db.readTxn()
  }
}

/** Full reconciliation against a listing of the target (see the top of the file). */
async function listedFull<Obj>(runner: OperationRunner<Obj>, between: Between | undefined): Promise<FullReport> {
  const cfg = runner.cfg
  const { db, table, getObjectStatus, roundSize, operations, metrics, name } = cfg
  const inSync = operations.inSync!
  const started = performance.now()

  // 1. The listing, keyed as the retry queue keys objects.
  const listed = new Map<RetryKey, Obj>()
  try {
    const r = operations.list!(runner.context(db.readTxn(), true))
    const listing = isThenable(r) ? await runner.race(Promise.resolve(r)) : r
    for (const l of listing) listed.set(runner.key(l), l)
  } catch (err) {
    runner.signal.throwIfAborted()
    const listError = errorMessage(err)
    const durationMs = performance.now() - started
    metrics?.prune(name, durationMs / 1000, true)
    metrics?.fullReconciliation(name, durationMs / 1000, 0)
    return { updated: 0, outOfSync: 0, errors: 0, pruneError: `list failed: ${listError}`, durationMs, listError }
  }
  const listedCount = listed.size

  // 2. The diff against one snapshot: what to update; what is left in `listed` is extra.
  const txn = db.readTxn()
  const ctx = runner.context(txn, true)
  const todo: Entry<Obj>[] = []
  const todoDrifted: boolean[] = []
  let synced = 0
  for (const e of table.all(txn).entries()) {
    const k = runner.key(e.object)
    const l = listed.get(k)
    if (l !== undefined) listed.delete(k)
    const s = getObjectStatus(e.object)
    if (wantsReconcile(s)) continue // the incremental round's
    const same = l !== undefined && safeInSync(inSync, e.object, l)
    if (same && s.kind !== 'error') {
      synced++
      continue
    }
    todo.push(e)
    todoDrifted.push(!same)
  }

  // 3. Extras first (the prune: room on a target with limited capacity, as cilium prunes first).
  const counts = { updated: 0, outOfSync: 0, errors: 0 }
  const extras = listed.size
  const pruneStarted = performance.now()
  if (extras > 0) await deleteExtras(runner, [...listed.values()], txn, ctx, counts)
  metrics?.prune(name, (performance.now() - pruneStarted) / 1000, false)

  // 4. Updates of what is missing, differs or failed, a chunk at a time.
  const chunk = new Chunk<Obj>(runner, ctx, counts, between)
  for (let i = 0; i < todo.length; i++) {
    await chunk.add(todo[i]!, todoDrifted[i]!)
    if (chunk.length >= roundSize) await chunk.flush()
  }
  await chunk.flush()
  const durationMs = performance.now() - started
  metrics?.fullReconciliation(name, durationMs / 1000, counts.outOfSync)
  return { ...counts, durationMs, listed: listedCount, inSync: synced, extras }
}

/** Deletes the extras (batched when batch operations are given); failures go to the retry queue as deletes. */
async function deleteExtras<Obj>(
  runner: OperationRunner<Obj>,
  extras: Obj[],
  txn: ReadTxn,
  ctx: OpContext,
  counts: { errors: number },
): Promise<void> {
  const { table, roundSize, batchOperations } = runner.cfg
  // An extra has no deletion of its own: its revision is the one of the snapshot that lacks it.
  const revision = Math.max(1, table.revision(txn))
  for (let from = 0; from < extras.length; from += roundSize) {
    const outcomes: Outcome<Obj>[] = []
    for (let i = from; i < Math.min(extras.length, from + roundSize); i++) {
      const obj = extras[i]!
      outcomes.push(runner.deleteOutcome(obj, revision, runner.takeRetry(obj)))
    }
    if (batchOperations !== undefined) await runner.runBatch(outcomes, ctx)
    else {
      const p = runner.runAll(outcomes, ctx)
      if (p !== undefined) await p
    }
    runner.signal.throwIfAborted()
    for (const o of outcomes) if (o.error !== undefined) counts.errors++
    await runner.commit(outcomes) // no write: failures are queued for retry, successes clear a queued retry
    runner.release(outcomes)
  }
}

/** inSync, a throw counting as "differs": Update (idempotent) runs, and the loop never fails on it. */
function safeInSync<Obj>(inSync: (desired: Obj, listed: Obj) => boolean, desired: Obj, listed: Obj): boolean {
  try {
    return inSync(desired, listed) === true
  } catch {
    return false
  }
}

function isThenable<T>(v: T | Promise<T>): v is Promise<T> {
  return v !== null && typeof v === 'object' && typeof (v as PromiseLike<T>).then === 'function'
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
