// Incremental reconciliation: one round = at most `roundSize` objects from the change iterator
// (pending or refreshing objects: Update; deleted objects: Delete) plus the retries that are due,
// then one write-back transaction.
//
// Invariants:
// - the change iterator is consumed only as far as the round goes (a partial read resumes where it
//   stopped), so `processedRevision` after the commit is the revision of the last change consumed,
//   or the snapshot's revision when every change was consumed: every change at or below it has a
//   committed outcome;
// - a change of a key takes that key's retry item first (newest change wins; attempts carry over),
//   and retries are popped after the changes, so a key is acted on at most once per round;
// - a retry acts only if it is still current: an update retry when the object still carries the
//   error status this reconciler wrote (any newer write gave it a newer status id), a delete retry
//   when the key is still absent from the table (cilium's issue #55: a stale delete never undoes
//   a later insert);
// - this reconciler's own write-backs come back as changes whose status is done or error: skipped
//   with one property read. Objects that were in error before `start` (a restart) are retried by
//   treating `error` as actionable for revisions up to the start revision.

import type { ChangeIterator, Watch } from '@statewright/statedb'
import type { OperationRunner, Outcome } from './runner.ts'
import { wantsReconcile } from './status.ts'

const REUSE = { reuse: true }

export interface RoundResult {
  /** Objects acted on (changes and retries). */
  objects: number
  /** Results dropped because the object changed meanwhile. */
  dropped: number
  /** The round stopped at roundSize: there are more changes now. */
  more: boolean
  /** Every change at or below this revision has a committed outcome. */
  processedRevision: number
  /** Fires when the table changes after the round's snapshot. */
  watch: Watch
}

export async function incrementalRound<Obj>(
  runner: OperationRunner<Obj>,
  iter: ChangeIterator<Obj>,
  startRevision: number,
): Promise<RoundResult> {
  const cfg = runner.cfg
  const { db, table, getObjectStatus, roundSize } = cfg
  const retries = runner.retries
  const txn = db.readTxn()
  const [changes, watch] = iter.next(txn, REUSE) // each record is read at once, never kept: none allocated per change
  const updates: Outcome<Obj>[] = []
  const deletes: Outcome<Obj>[] = []
  let n = 0
  let more = false
  let processedRevision = table.revision(txn)
  for (const c of changes) {
    if (c.deleted) {
      const attempts = runner.takeRetry(c.object)
      deletes.push(runner.deleteOutcome(c.object, c.revision, attempts))
    } else {
      const s = getObjectStatus(c.object)
      if (!wantsReconcile(s) && !(s.kind === 'error' && c.revision <= startRevision)) continue
      const attempts = runner.takeRetry(c.object)
      updates.push(runner.updateOutcome(c.object, c.revision, s, attempts))
    }
    if (++n >= roundSize) {
      more = true
      processedRevision = c.revision
      break
    }
  }

  // Retries that are due, in the room left.
  const retried: Outcome<Obj>[] = []
  if (n < roundSize && retries.size > 0) {
    for (const item of retries.popDue(Date.now(), roundSize - n)) {
      // A popped item stays queued until its outcome is written back (it is in flight); a stale
      // one leaves the queue here.
      if (item.deleted) {
        if (table.getEntry(txn, runner.primaryQuery(item.object!)) !== undefined) {
          retries.take(item.key) // re-inserted: stale
          continue
        }
        retried.push(runner.deleteOutcome(item.object!, item.revision, item.attempts))
      } else {
        const cur = table.getEntry(txn, runner.primaryQuery(item.object!))
        const s = cur === undefined ? undefined : getObjectStatus(cur.object)
        if (cur === undefined || s!.id !== item.statusId) {
          // deleted (its delete change supersedes this retry) or rewritten since (the newer version
          // is reconciled instead)
          retries.take(item.key)
          continue
        }
        retried.push(runner.updateOutcome(cur.object, cur.revision, s!, item.attempts))
      }
    }
  }

  const ctx = runner.context(txn, false)
  try {
    if (cfg.batchOperations) {
      // New changes go in batches, deletes first; retries fall back to single operations.
      await runner.runBatch(deletes, ctx)
      await runner.runBatch(updates, ctx)
    } else {
      // Awaited only when some operation returned a promise: an await costs a microtask turn even
      // when there is nothing to wait for.
      let p = runner.runAll(deletes, ctx)
      if (p !== undefined) await p
      p = runner.runAll(updates, ctx)
      if (p !== undefined) await p
    }
    const p = runner.runAll(retried, ctx)
    if (p !== undefined) await p
    runner.signal.throwIfAborted()
  } catch (err) {
    // Stopped mid-round: nothing is written back, but no delete may be lost.
    runner.requeueDeletes(deletes)
    runner.requeueDeletes(retried)
    throw err
  }
  const all = deletes.length === 0 && retried.length === 0 ? updates : deletes.concat(updates, retried)
  const dropped = await runner.commit(all)
  runner.release(all)
  return { objects: deletes.length + updates.length + retried.length, dropped, more, processedRevision, watch }
}
