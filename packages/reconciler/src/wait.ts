// Waiting for the reconciler: from outside (nothing pending in the table) and from a writer (my
// write, at table revision R, has been acted on).
//
// Invariant of RevisionWaiters: `reached` only grows; it is the table revision up to which every
// change (inserts, updates and deletes alike) has been processed, i.e. its outcome (done, error,
// delete reached the target or queued for retry) is committed. A waiter for R resolves as soon as
// `reached >= R`, and is rejected when the reconciler stops first.

import type { DB, Table } from '@statewright/statedb'
import type { StatusIndex } from './status.ts'

export interface WaitOptions {
  signal?: AbortSignal
  /** For a status set: the reconciler's name in it. */
  name?: string
}

/**
 * Resolves when no object of the table is pending (for the reconciler `name` with a status set),
 * with the objects in error at that moment. Rejects with the signal's reason when it aborts.
 * It reads only the table: it works without a handle on the reconciler, and with none running it
 * waits (for example until one starts).
 */
export async function waitForReconciliation<Obj>(
  db: DB,
  table: Table<Obj>,
  statusIndex: StatusIndex<Obj>,
  opts: WaitOptions = {},
): Promise<Obj[]> {
  const pendingQ = statusIndex.kind('pending', opts.name)
  for (;;) {
    opts.signal?.throwIfAborted()
    const txn = db.readTxn()
    const [pending, watch] = table.listWatch(txn, pendingQ)
    if (pending.first() === undefined) return table.list(txn, statusIndex.kind('error', opts.name)).toArray()
    await watch.wait(opts.signal)
  }
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
