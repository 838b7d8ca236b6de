// Waiting for the reconciler: from outside (the table reconciled) and from a writer (my write, at
// table revision R, has been acted on).
//
// Invariant of RevisionWaiters: `reached` only grows; it is the table revision up to which every
// change (inserts, updates and deletes alike) has been processed, i.e. its outcome (done, error,
// delete reached the target or queued for retry) is committed. A waiter for R resolves as soon as
// `reached >= R`, and is rejected when the reconciler stops first.
//
// The table-level waits read the table (through its status index): they work without a handle on
// the reconciler, and with none running they wait (for example until one starts). A deleted object
// is in no table, so for deletes they read what every running reconciler of the table publishes
// here (DeleteProgress): how far it has processed the table's changes, and its deletes that failed
// (queued for a retry, or being retried now).
//
// Every wait here removes what it added to the caller's signal when it returns (waitAny).

import { keyText, waitAny, type DB, type ReadTxn, type Table, type Watch } from '@statewright/statedb'
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

/** @internal What a running reconciler tells the table-level waits about its deletes. */
export interface DeleteProgress<Obj> {
  readonly name: string
  /** Every change of the table at or below this revision has been acted on. */
  readonly reached: number
  /** Deleted objects whose Delete failed and is queued for a retry or being retried. */
  failedDeletes(): Array<{ key: string; object: Obj; error: string }>
  /** Fires when `reached` or the failed deletes may have changed, or the reconciler stops. */
  changed(): Watch
}

const running = new WeakMap<Table<any>, Set<DeleteProgress<any>>>()

/** @internal A reconciler of `table` started: the table-level waits take its deletes into account until the returned function is called. */
export function publishProgress<Obj>(table: Table<Obj>, p: DeleteProgress<Obj>): () => void {
  let set = running.get(table)
  if (!set) running.set(table, (set = new Set()))
  set.add(p)
  return () => set.delete(p)
}

/**
 * The deletes of the table not done yet for the reconciler `name` (every running one when
 * undefined): whether some change of the snapshot (a delete among them) is not acted on yet, and
 * the deletes that failed. Pushes the watches that fire when that may change.
 */
function deletesOf<Obj>(
  table: Table<Obj>,
  txn: ReadTxn,
  name: string | undefined,
  watches: Watch[],
): { behind: boolean; failed: Array<{ key: string; object: Obj; error: string }> } {
  let behind = false
  const failed: Array<{ key: string; object: Obj; error: string }> = []
  const set = running.get(table)
  if (!set) return { behind, failed }
  const revision = table.revision(txn)
  for (const p of set) {
    if (name !== undefined && p.name !== name) continue
    const f = p.failedDeletes()
    if (p.reached < revision || f.length > 0) watches.push(p.changed())
    if (p.reached < revision) behind = true
    for (const x of f) failed.push(x)
  }
  return { behind, failed }
}

/**
 * Resolves when every object of the table is reconciled: none pending, refreshing or in error (for
 * the reconciler `name` with a status set), and every deleted object removed from the target by
 * each running reconciler of the table: no delete waits to be acted on, none failed and queued for
 * a retry, none being retried. Objects in error and failed deletes are waited for (`onError:
 * 'wait'`) or reject the wait (`onError: 'reject'`). Rejects with the signal's reason when it aborts.
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
    const deletes = deletesOf(table, txn, opts.name, watches)
    const busy =
      deletes.behind ||
      holds(table, statusIndex, txn, 'pending', opts.name, watches) ||
      holds(table, statusIndex, txn, 'refreshing', opts.name, watches)
    if (!busy) {
      const failed = table.list(txn, statusIndex.kind('error', opts.name)).toArray()
      if (failed.length === 0 && deletes.failed.length === 0) return
      if (onError === 'reject') throw reconciliationFailed(table, statusIndex, failed, deletes.failed, opts.name)
      watches.push(table.listWatch(txn, statusIndex.kind('error', opts.name))[1])
    }
    await waitAny(watches, opts.signal)
  }
}

/**
 * Resolves when no object of the table is pending (for the reconciler `name` with a status set)
 * and every running reconciler of the table has acted on every delete, with the objects in error at
 * that moment: every object has been attempted, whether or not it succeeded. Deletes that failed are
 * not in the result (the deleted objects are no longer in the table): `reconciler.failedDeletes()`
 * lists them. (Before 0.2 this was `waitForReconciliation`.) Rejects with the signal's reason.
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
    const behind = deletesOf(table, txn, opts.name, watches).behind
    if (!behind && !holds(table, statusIndex, txn, 'pending', opts.name, watches))
      return table.list(txn, statusIndex.kind('error', opts.name)).toArray()
    await waitAny(watches, opts.signal)
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
  txn: ReadTxn,
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

function reconciliationFailed<Obj>(
  table: Table<Obj>,
  index: StatusIndex<Obj>,
  failed: Obj[],
  deletes: Array<{ key: string; object: Obj; error: string }>,
  name: string | undefined,
): ReconciliationFailedError {
  const all = [
    ...failed.map((o) => `${keyText(table.primary.keyOf(o))}: ${index.statusOf(o, name).error ?? 'error'}`),
    ...deletes.map((d) => `delete ${d.key}: ${d.error}`),
  ]
  const shown = all.slice(0, 5)
  const more = all.length > shown.length ? `; and ${all.length - shown.length} more` : ''
  const who = name === undefined ? '' : ` (reconciler "${name}")`
  const what = [
    failed.length ? `${failed.length} object${failed.length === 1 ? '' : 's'} in error` : '',
    deletes.length ? `${deletes.length} delete${deletes.length === 1 ? '' : 's'} failed` : '',
  ]
    .filter(Boolean)
    .join(', ')
  return new ReconciliationFailedError(`table "${table.name}"${who}: ${what}: ${shown.join('; ')}${more}`, [
    ...failed,
    ...deletes.map((d) => d.object),
  ])
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
