// Waiting for the reconciler: from outside (the table reconciled) and from a writer (my write, at
// table revision R, has been acted on).
//
// Invariant of RevisionWaiters: `reached` only grows; it is the table revision up to which every
// change (inserts, updates and deletes alike) has been processed, i.e. its outcome (done, error,
// delete reached the target or queued for retry) is committed. A waiter for R resolves as soon as
// `reached >= R`, and is rejected when the reconciler stops first.
//
// The table-level waits read only the table (through its status index): they work without a handle
// on the reconciler, and with none running they wait (for example until one starts).

import { keyText, type DB, type Table, type Watch } from '@statewright/statedb'
import { ReconciliationFailedError } from './errors.ts'
import type { StatusIndex, StatusKind } from './status.ts'

export interface WaitOptions {
  signal?: AbortSignal
  /** For a status set: the reconciler's name in it. */
  name?: string
}

export interface WaitForReconciliationOptions extends WaitOptions {
  /**
   * Objects in error: `'wait'` (the default, as cilium's WaitForReconciliation) waits until their
   * retries succeed; `'reject'` rejects with a ReconciliationFailedError naming them as soon as
   * nothing is pending.
   */
  onError?: 'wait' | 'reject'
}

/**
 * Resolves when every object of the table is reconciled: none pending, refreshing or in error (for
 * the reconciler `name` with a status set). Objects in error are waited for (`onError: 'wait'`) or
 * reject the wait (`onError: 'reject'`). Rejects with the signal's reason when it aborts.
 */
export async function waitForReconciliation<Obj>(
  db: DB,
  table: Table<Obj>,
  statusIndex: StatusIndex<Obj>,
  opts: WaitForReconciliationOptions = {},
): Promise<void> {
  const onError = opts.onError ?? 'wait'
  for (;;) {
    opts.signal?.throwIfAborted()
    const txn = db.readTxn()
    const watches: Watch[] = []
    const busy =
      holds(table, statusIndex, txn, 'pending', opts.name, watches) || holds(table, statusIndex, txn, 'refreshing', opts.name, watches)
    if (!busy) {
      const failed = table.list(txn, statusIndex.kind('error', opts.name)).toArray()
      if (failed.length === 0) return
      if (onError === 'reject') throw reconciliationFailed(table, statusIndex, failed, opts.name)
      watches.push(table.listWatch(txn, statusIndex.kind('error', opts.name))[1])
    }
    await waitOne(watches, opts.signal)
  }
}

/**
 * Resolves when no object of the table is pending (for the reconciler `name` with a status set),
 * with the objects in error at that moment: every object has been attempted, whether or not it
 * succeeded. (Before 0.2 this was `waitForReconciliation`.) Rejects with the signal's reason.
 */
export async function waitForSettled<Obj>(
  db: DB,
  table: Table<Obj>,
  statusIndex: StatusIndex<Obj>,
  opts: WaitOptions = {},
): Promise<Obj[]> {
  for (;;) {
    opts.signal?.throwIfAborted()
    const txn = db.readTxn()
    const watches: Watch[] = []
    if (!holds(table, statusIndex, txn, 'pending', opts.name, watches))
      return table.list(txn, statusIndex.kind('error', opts.name)).toArray()
    await waitOne(watches, opts.signal)
  }
}

/**
 * Whether some object's status (of `name`) is `kind`; pushes the watches that fire when that may
 * change. A status set index that does not key `name` (it was not among its declared names) cannot
 * list the objects whose sets lack it, which read as pending: those are found by a scan.
 */
function holds<Obj>(
  table: Table<Obj>,
  index: StatusIndex<Obj>,
  txn: ReturnType<DB['readTxn']>,
  kind: StatusKind,
  name: string | undefined,
  watches: Watch[],
): boolean {
  const [found, watch] = table.listWatch(txn, index.kind(kind, name))
  watches.push(watch)
  if (found.first() !== undefined) return true
  if (kind !== 'pending' || index.covers(name)) return false
  const [all, any] = table.allWatch(txn)
  watches.push(any)
  for (const obj of all) if (!index.getSet!(obj).has(name!)) return true
  return false
}

function waitOne(watches: Watch[], signal: AbortSignal | undefined): Promise<unknown> {
  return watches.length === 1 ? watches[0]!.wait(signal) : Promise.race(watches.map((w) => w.wait(signal)))
}

function reconciliationFailed<Obj>(
  table: Table<Obj>,
  index: StatusIndex<Obj>,
  failed: Obj[],
  name: string | undefined,
): ReconciliationFailedError {
  const shown = failed.slice(0, 5).map((o) => `${keyText(table.primary.keyOf(o))}: ${index.statusOf(o, name).error ?? 'error'}`)
  const more = failed.length > shown.length ? `; and ${failed.length - shown.length} more` : ''
  const who = name === undefined ? '' : ` (reconciler "${name}")`
  return new ReconciliationFailedError(
    `table "${table.name}"${who}: ${failed.length} object${failed.length === 1 ? '' : 's'} in error: ${shown.join('; ')}${more}`,
    failed,
  )
}

interface Waiter {
  revision: number
  resolve: () => void
  reject: (err: unknown) => void
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
}

export class RevisionWaiters {
  private reachedRevision = 0
  private waiters: Waiter[] = []
  private failure: Error | undefined

  get reached(): number {
    return this.reachedRevision
  }

  wait(revision: number, signal?: AbortSignal): Promise<void> {
    if (revision <= this.reachedRevision) return Promise.resolve()
    if (this.failure) return Promise.reject(this.failure)
    if (signal?.aborted) return Promise.reject(signal.reason)
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { revision, resolve, reject, signal, onAbort: undefined }
      if (signal) {
        w.onAbort = () => {
          this.waiters = this.waiters.filter((x) => x !== w)
          reject(signal.reason)
        }
        signal.addEventListener('abort', w.onAbort, { once: true })
      }
      this.waiters.push(w)
    })
  }

  advance(revision: number): void {
    if (revision <= this.reachedRevision) return
    this.reachedRevision = revision
    if (this.waiters.length === 0) return
    const keep: Waiter[] = []
    for (const w of this.waiters) {
      if (w.revision <= revision) {
        if (w.onAbort) w.signal!.removeEventListener('abort', w.onAbort)
        w.resolve()
      } else keep.push(w)
    }
    this.waiters = keep
  }

  /** Rejects every waiter, now and later (the reconciler stopped). */
  fail(err: Error): void {
    this.failure = err
    const ws = this.waiters
    this.waiters = []
    for (const w of ws) {
      if (w.onAbort) w.signal!.removeEventListener('abort', w.onAbort)
      w.reject(err)
    }
  }

  /** Accepts waiters again (the reconciler restarted). */
  reset(): void {
    this.failure = undefined
  }
}
