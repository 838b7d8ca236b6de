// Syncing one primary, and removing what a deleted primary owned: a PrimaryController's operations on
// its work rows (the reconciler calls them, at most `concurrency` at once).
// Invariants:
// - sync(primary, ctx) returns the secondaries; each is stamped with the owner key and kind (labels
//   and annotations) and written through its target with the ownership check (secondaries.ts).
// - A sync is bounded by syncTimeoutMs, its secondaries' writes included: its signal aborts, it
//   fails and is retried; past the timeout it is not waited for (`abandoned`: stop still waits for
//   it); on stop it is. One slow write never holds the other primaries of a round past the timeout.
// - A failed sync (or a failed secondary write) writes an error status and throws a SyncError (the
//   reconciler retries with backoff); a sync's status is written back only when it succeeded.
// - A primary deleted since its row was marked is not synced (its delete comes next); a deleted
//   primary that is back again is not removed.
// - onDelete runs before a deleted primary's secondaries are deleted. From the moment a delete is
//   seen until its removal succeeded (hook and deletes), the key is `removing`: garbage collection
//   keeps its secondaries while the hook fails and is retried.
// - Events (Normal "Synced", Warning "ErrResourceExists") name the primary, or a pseudo-object in
//   `eventNamespace` when it is not a Kubernetes object (status.ts).
import type { OpContext } from '@statewright/reconciler'
import type { InvolvedObject, OwnerStamps } from './contract.ts'
import { SyncError } from './errors.ts'
import type { PrimaryControllerOptions, PrimaryControllerStats, SyncResult } from './options.ts'
import type { Secondaries } from './secondaries.ts'
import { errorStatusOf, involvedObject, type WrittenStatuses } from './status.ts'
import type { JoinReads } from './joins.ts'
import { Inflight, type MutableWork, type OwnedRef, type Requeues, type Work } from './work.ts'

/** What the syncs share with their controller. */
export interface PrimarySyncDeps<P> {
  readonly options: PrimaryControllerOptions<P>
  readonly keyOf: (p: P) => string
  readonly stats: PrimaryControllerStats
  readonly secondaries: Secondaries
  readonly requeues: Requeues
  readonly written: WrittenStatuses
  readonly joins: JoinReads
  readonly stamps: (key: string) => OwnerStamps
  /** The store no longer holds this primary (see primaryKeys): it is not synced. */
  readonly goneFromStore: (key: string) => boolean
  readonly requeueAfter: (key: string, ms: number) => void
  readonly report: (err: Error, msg: string, key?: string) => void
}

export class PrimarySyncs<P> {
  /** Syncs past their timeout that have not ended yet (stop waits for them). */
  readonly abandoned = new Inflight()
  /** Deleted primaries whose removal (onDelete, then the secondaries' deletes) has not succeeded yet. */
  readonly removing = new Set<string>()

  constructor(private readonly d: PrimarySyncDeps<P>) {}

  /** Syncs the primary of a work row and writes its secondaries; true when something changed. */
  async syncOne(w: MutableWork, ctx: OpContext): Promise<boolean> {
    const { options, stats } = this.d
    const key = w.key
    this.d.requeues.cancel(key)
    const p = options.primaries.get(ctx.txn, options.primaries.primary.query(key as never))
    if (p === undefined) return false // deleted since: its delete comes next
    if (this.d.goneFromStore(key)) return false // the store no longer holds it (see primaryKeys)
    stats.syncs++
    let res: SyncResult
    const limitMs = options.syncTimeoutMs ?? 60_000
    // one signal per sync, aborted by stop (ctx.signal) or the timeout; listeners removed after
    const abort = new AbortController()
    const onStop = () => abort.abort(ctx.signal.reason)
    ctx.signal.addEventListener('abort', onStop, { once: true })
    let timedOut!: (err: Error) => void
    const timeoutHit = new Promise<never>((_, reject) => (timedOut = reject))
    timeoutHit.catch(() => {})
    const timer = setTimeout(() => {
      const err = new SyncError(`sync of ${options.kind} "${key}" timed out after ${limitMs} ms`)
      abort.abort(err)
      timedOut(err)
    }, limitMs)
    const signal = abort.signal
    // past the timeout a step is not waited for (stop still waits for it); on stop it is
    const bounded = <T>(running: Promise<T>): Promise<T> =>
      Promise.race([running, timeoutHit]).catch((err) => {
        if (err === abort.signal.reason && !ctx.signal.aborted) void this.abandoned.track(running).catch(() => {})
        throw err
      })
    try {
      const reads = this.d.joins.recorder(key, ctx.txn)
      try {
        res = await bounded(Promise.resolve(options.sync(p, { txn: ctx.txn, signal, key, get: reads.get, list: reads.list })))
        if (!res || !Array.isArray(res.secondaries)) throw new SyncError('sync must return { secondaries: [...] }')
      } catch (err) {
        stats.syncErrors++
        const msg = `sync of ${options.kind} "${key}" failed: ${(err as Error).message}`
        await this.writeErrorStatus(p, msg, undefined, ctx)
        throw new SyncError(msg)
      } finally {
        reads.commit()
      }
      let written: { applied: OwnedRef[]; changed: boolean; failures: string[] }
      try {
        written = await bounded(this.d.secondaries.write(key, w.owned, res.secondaries, this.d.stamps(key), this.involved(p, key), signal))
      } catch (err) {
        stats.syncErrors++
        const msg = `secondaries of ${options.kind} "${key}": ${(err as Error).message}`
        await this.writeErrorStatus(p, msg, res.status, ctx)
        throw new SyncError(msg)
      }
      const { applied, changed, failures } = written
      w.owned = applied
      if (failures.length) {
        stats.syncErrors++
        const msg = failures.join('; ')
        await this.writeErrorStatus(p, msg, res.status, ctx)
        throw new SyncError(msg)
      }
      if (res.status !== undefined && options.status) {
        this.d.written.set(key, res.status)
        await options.status.writeStatus(p, res.status, ctx.signal)
      }
      if (res.requeueAfterMs !== undefined && res.requeueAfterMs >= 0) this.d.requeueAfter(key, res.requeueAfterMs)
      return changed
    } finally {
      clearTimeout(timer)
      ctx.signal.removeEventListener('abort', onStop)
    }
  }

  /** A primary is gone: delete what it owned and what is observed with its stamp. */
  async removeOwned(w: Work, ctx: OpContext): Promise<void> {
    const { options } = this.d
    this.d.requeues.cancel(w.key)
    if (options.primaries.get(ctx.txn, options.primaries.primary.query(w.key as never)) !== undefined) {
      this.removing.delete(w.key)
      return // back again
    }
    this.removing.add(w.key)
    if (options.onDelete) {
      try {
        await options.onDelete(w.key, { signal: ctx.signal })
      } catch (err) {
        throw new SyncError(`delete hook of ${options.kind} "${w.key}" failed: ${(err as Error).message}`)
      }
    }
    const failures = await this.d.secondaries.removeAll(w.key, w.owned, this.involved(undefined, w.key), ctx.signal)
    if (failures.length) throw new SyncError(`secondaries of deleted ${options.kind} "${w.key}": ${failures.join('; ')}`)
    this.removing.delete(w.key)
  }

  private involved(p: P | undefined, key: string): InvolvedObject {
    return involvedObject(p, key, this.d.options.kind, this.d.options.eventNamespace ?? 'default')
  }

  private async writeErrorStatus(p: P, msg: string, status: unknown, ctx: OpContext): Promise<void> {
    const { options } = this.d
    if (!options.status) return
    const written = errorStatusOf(msg, status, options.errorStatus)
    this.d.written.set(this.d.keyOf(p), written)
    await options.status.writeStatus(p, written, ctx.signal).catch((e) => {
      const key = this.d.keyOf(p)
      this.d.report(new SyncError(`status of "${key}": ${(e as Error).message}`), 'status write failed', key)
    })
  }
}
