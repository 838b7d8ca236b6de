// PrimaryController: Kumori controllerruntime's and sample-controller's "primary / secondary"
// controller, on statewright's tables and reconciler instead of a hand-written workqueue.
//
// - Primaries are a statedb table (a NatsKvReflector's or a k8s Reflector's). Every primary has a
//   row in a work table (key, spec hash, what it owns, reconciler status) that a Reconciler drives:
//   dedup by key, per-key exponential backoff, at most `concurrency` syncs at once (batches with a
//   worker pool), never two at once for one key (one round at a time, a key once per round).
// - A primary change whose spec hash is unchanged (a status write-back) marks nothing: no loop.
// - sync(primary, ctx) returns the secondaries; each is stamped with the owner key and kind (labels
//   and annotations), and written through its target with an ownership check on what the target
//   reads: an object with our name but not our owner annotation is never adopted (ErrResourceExists:
//   a Warning event, an error status, a retry with backoff; it is created once the foreign object
//   is gone). Secondaries a primary stopped returning are deleted; a deleted primary's go too.
// - Secondaries are observed through tables (reflectors). A change of one of ours that is not our
//   own write (its version differs from the one our write returned) re-marks its owner pending
//   (HandleSecondary): an edit or a delete is repaired. Objects are mapped to their owner by the
//   owner-key annotation, which holds the exact key (the label holds it when it is a valid label
//   value, else a stable hash).
// - GarbageSecondaries: secondaries stamped with our owner kind whose owner key is not a primary are
//   deleted, at start (once every table is initialized) and at every resync. Objects without our
//   stamps are never touched.
// - Resync: every resyncIntervalMs all primaries are marked pending again and GC runs.
// - requeueAfterMs marks the key pending again later, without counting as an error.
// - Events (Normal "Synced", Warning "ErrResourceExists") go to an EventRecorder (aggregated and
//   rate-limited); a primary that is not a Kubernetes object is named by a pseudo-object in
//   `eventNamespace`.
// This file: the lifecycle, following primaries and observed tables, syncs; the parts are beside it.
import { SyncError, UsageError } from './errors.ts'
import { Reconciler, logTo, statusPending, type OpContext, type StatusIndex } from '@statewright/reconciler'
import { WatchSet, type ChangeIterator, type ReadTxn, type Table, type WriteTxn } from '@statewright/statedb'
import type { InvolvedObject } from '@statewright/reconciler'
import type { PrimaryHealth } from './options.ts'
import {
  defaultKey,
  defaultSpec,
  specHash,
  validateOptions,
  type PrimaryControllerOptions,
  type PrimaryControllerStats,
  type SyncResult,
} from './options.ts'
import { Secondaries } from './secondaries.ts'
import { ownerKeyIn, ownerStampKeys, stampsFor } from './stamps.ts'
import { errorStatusOf, involvedObject } from './status.ts'
import type { OwnerStamps, SecondaryTarget } from '@statewright/reconciler'
import { Inflight, Requeues, markPending, newWorkTable, type MutableWork, type Work } from './work.ts'

export class PrimaryController<P> {
  readonly name: string
  readonly stats: PrimaryControllerStats = {
    syncs: 0,
    syncErrors: 0,
    created: 0,
    updated: 0,
    deleted: 0,
    garbage: 0,
    foreign: 0,
    requeues: 0,
    repairs: 0,
  }
  private readonly options: PrimaryControllerOptions<P>
  private readonly keyOf: (p: P) => string
  private readonly specOf: (p: P) => unknown
  private readonly stampKeys: { key: string; kind: string }
  private readonly work: Table<Work>
  private readonly reconciler: Reconciler<Work>
  private readonly concurrency: number
  private readonly statusIndex: StatusIndex<Work>
  private markInitialized: ((txn: WriteTxn) => void) | undefined
  private readonly secondaries: Secondaries
  private readonly requeues = new Requeues()
  private readonly inflight = new Inflight()
  private follow: { ctrl: AbortController; done: Promise<void> } | undefined
  private resyncTimer: NodeJS.Timeout | undefined
  private gcDone = false
  /** Table revisions the follow loop has processed: primaries first, then each observed table. */
  private processed: number[] = []
  private lastGcError: string | undefined

  constructor(opts: PrimaryControllerOptions<P>) {
    validateOptions(opts)
    this.options = opts
    this.name = opts.name
    this.keyOf = opts.key ?? defaultKey
    this.specOf = opts.spec ?? defaultSpec
    this.stampKeys = ownerStampKeys(opts.stampPrefix)
    this.concurrency = Math.max(1, opts.concurrency ?? 2)
    this.secondaries = new Secondaries(
      opts,
      (target, s) => this.ownerKeyOf(target, s),
      this.stats,
      (owner) =>
        void this.options.db
          .write(this.work, (w) => {
            this.stats.repairs += markPending(w, this.work, [owner])
          })
          .catch((e) => this.report(e, 'marking a primary for repair failed', owner)),
    )
    const { table, statusIndex } = newWorkTable(opts.name)
    this.statusIndex = statusIndex
    this.work = table
    opts.db.register(this.work)
    this.reconciler = new Reconciler<Work>({
      db: opts.db,
      table: this.work,
      statusIndex,
      name: this.work.name,
      getObjectStatus: (w) => w.status,
      setObjectStatus: (w, status) => ({ ...w, status }),
      ...(opts.retry ? { retry: opts.retry } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
      operations: {
        update: (w, ctx) => this.inflight.track(this.syncOne(w as MutableWork, ctx)),
        delete: (w, ctx) => this.inflight.track(this.removeOwned(w, ctx)),
      },
      batchOperations: {
        updateBatch: (entries, ctx) => this.inflight.pool(entries, this.concurrency, (w) => this.syncOne(w as MutableWork, ctx)),
        deleteBatch: (entries, ctx) => this.inflight.pool(entries, this.concurrency, (w) => this.removeOwned(w, ctx)),
      },
    })
  }

  /** The work table (one row per primary, with the reconciler's status): errors, pending keys. */
  get table(): Table<Work> {
    return this.work
  }

  /** Stamps for a primary key. */
  stamps(key: string): OwnerStamps {
    return stampsFor(this.stampKeys, this.options.kind, key)
  }

  /** The owner key of a secondary stamped with our kind (from the annotation), else undefined. */
  ownerKeyOf(target: SecondaryTarget<any>, s: unknown): string | undefined {
    return ownerKeyIn(this.stampKeys, this.options.kind, target, s)
  }

  async start(): Promise<this> {
    if (this.follow) throw new UsageError(`PrimaryController "${this.name}": already started`)
    const txn = await this.options.db.writeTxn(this.work)
    this.markInitialized = this.work.registerInitializer(txn, `primary-controller ${this.name}`)
    txn.commit()
    const ctrl = new AbortController()
    this.follow = { ctrl, done: this.followLoop(ctrl.signal) }
    this.reconciler.start()
    const every = this.options.resyncIntervalMs ?? 0
    if (every > 0) {
      const tick = () => {
        this.resyncTimer = setTimeout(() => {
          // tracked: stop() waits for a resync (and its GC's deletes) that has begun
          void this.inflight
            .track(this.resync())
            .catch((e) => this.report(e, 'resync failed'))
            .finally(() => {
              if (this.follow) tick()
            })
        }, every)
      }
      tick()
    }
    return this
  }

  /** Stops following, stops the reconciler, and waits for syncs, deletes and a resync in flight. */
  async stop(): Promise<void> {
    const f = this.follow
    if (!f) return
    this.follow = undefined
    clearTimeout(this.resyncTimer)
    this.requeues.cancelAll()
    f.ctrl.abort()
    await f.done.catch(() => {})
    const inflight = this.inflight.snapshot()
    await this.reconciler.stop()
    await Promise.allSettled(inflight)
    while (this.inflight.size) await Promise.allSettled(this.inflight.snapshot())
  }

  /** Every primary synced again, and GC. */
  async resync(): Promise<void> {
    await this.options.db.write(this.work, (txn) => {
      const s = statusPending()
      const all = this.work.all(txn).toArray()
      for (const w of all) this.work.insert(txn, { ...w, status: s })
    })
    await this.gc()
  }

  health(): PrimaryHealth {
    const txn = this.options.db.readTxn()
    const errors: Array<{ key: string; error: string }> = []
    for (const w of this.work.all(txn)) if (w.status.kind === 'error') errors.push({ key: w.key, error: w.status.error ?? '' })
    const ready = this.follow !== undefined && this.work.initialized(txn)[0]
    if (!this.follow) return { level: 'stopped', message: 'stopped', ready: false, errors }
    const problems = [...errors.slice(0, 3).map((e) => `${e.key}: ${e.error}`), ...(this.lastGcError ? [`gc: ${this.lastGcError}`] : [])]
    return {
      level: problems.length ? 'degraded' : 'ok',
      message: problems.length ? `${errors.length} errors: ${problems.join('; ')}` : `${this.work.count(txn)} primaries`,
      ready,
      errors,
    }
  }

  /** Resolves when every primary change so far is synced (or failed); returns the keys in error. */
  async waitIdle(signal?: AbortSignal): Promise<Array<{ key: string; error: string }>> {
    for (;;) {
      signal?.throwIfAborted()
      const txn = this.options.db.readTxn()
      const [pending, w] = this.work.listWatch(txn, this.statusIndex.kind('pending'))
      const caughtUp = [this.options.primaries, ...this.options.secondaries.map((s) => s.observed)].every(
        (t, i) => (this.processed[i] ?? -1) >= t.revision(txn),
      )
      if (caughtUp && pending.count() === 0 && this.gcDone && this.requeues.size === 0 && this.inflight.size === 0) {
        // the reconciler has acted on every change of the work table, deletes of rows included
        const rev = this.work.revision(txn)
        await this.reconciler.waitForRevision(rev, { signal })
        if (this.work.revision(this.options.db.readTxn()) === rev && this.inflight.size === 0) {
          const failedDeletes = this.reconciler.failedDeletes().map((f) => ({ key: String(f.object.key), error: `delete: ${f.error}` }))
          return [...this.health().errors, ...failedDeletes]
        }
        continue
      }
      const ws = new WatchSet().add(w, this.options.primaries.allWatch(txn)[1], this.work.allWatch(txn)[1])
      await Promise.race([ws.wait(signal), new Promise((r) => setTimeout(r, 20))])
    }
  }

  /**
   * GarbageSecondaries: deletes observed secondaries stamped with our kind whose owner key is not a
   * primary. Runs only once every table is initialized.
   */
  async gc(): Promise<number> {
    if (!this.allInitialized(this.options.db.readTxn()) || this.markInitialized) return 0
    const { deleted, failures } = await this.secondaries.garbage((owner) => {
      // the latest snapshot for each object: a primary that appeared since keeps its secondaries
      const now = this.options.db.readTxn()
      if (this.options.primaries.get(now, this.options.primaries.primary.query(owner as never)) !== undefined) return true
      return this.work.get(now, this.work.primary.query(owner)) !== undefined // its delete is still running
    })
    this.gcDone = true
    this.lastGcError = failures.length ? failures.slice(0, 3).join('; ') : undefined
    if (failures.length)
      throw new SyncError(`garbage secondaries of ${this.options.kind}: ${failures.length} failure(s): ${this.lastGcError}`)
    return deleted
  }

  // ---- following primaries and secondaries ----

  private async followLoop(signal: AbortSignal): Promise<void> {
    const db = this.options.db
    const txn0 = db.readTxn()
    const primaryIter = this.options.primaries.changes(txn0)
    const observedIters = this.options.secondaries.map((s) => s.observed.changes(txn0))
    try {
      while (!signal.aborted) {
        const txn = db.readTxn()
        const ws = new WatchSet()
        for (const [i, it] of observedIters.entries()) ws.add(await this.observe(i, it, txn))
        ws.add(await this.primaryChanges(primaryIter, txn))
        this.processed = [this.options.primaries.revision(txn), ...this.options.secondaries.map((s) => s.observed.revision(txn))]
        if (this.markInitialized && this.allInitialized(txn)) {
          const mark = this.markInitialized
          this.markInitialized = undefined
          await db.write(this.work, (w) => mark(w))
          await this.gc().catch((e) => this.report(e, 'garbage collection failed'))
        }
        const watches: Promise<unknown>[] = [ws.wait(signal)]
        if (this.markInitialized) {
          // only the tables still waiting (an initialized table's watch has fired already)
          for (const t of [this.options.primaries, ...this.options.secondaries.map((s) => s.observed)]) {
            const [ready, w] = t.initialized(txn)
            if (!ready) watches.push(w.wait(signal))
          }
        }
        await Promise.race(watches).catch(() => {})
      }
    } finally {
      primaryIter.close()
      for (const it of observedIters) it.close()
    }
  }

  private allInitialized(txn: ReadTxn): boolean {
    if (!this.options.primaries.initialized(txn)[0]) return false
    return this.options.secondaries.every((s) => s.observed.initialized(txn)[0])
  }

  private async primaryChanges(iter: ChangeIterator<P>, txn: ReadTxn) {
    const [changes, watch] = iter.next(txn)
    const marks: Array<{ key: string; hash?: string }> = []
    for (const c of changes) {
      let key: string
      try {
        key = this.keyOf(c.object)
      } catch (err) {
        this.report(err as Error, 'the key of a primary failed')
        continue
      }
      if (c.deleted) marks.push({ key })
      else {
        let hash: string
        try {
          hash = specHash(this.specOf(c.object))
        } catch (err) {
          this.report(new SyncError(`primary "${key}": spec failed: ${(err as Error).message}`), 'the spec of a primary failed', key)
          continue
        }
        marks.push({ key, hash })
      }
    }
    if (marks.length) {
      await this.options.db.write(this.work, (w) => {
        const s = statusPending()
        for (const m of marks) {
          const cur = this.work.get(w, this.work.primary.query(m.key))
          if (m.hash === undefined) {
            if (cur) this.work.delete(w, cur)
            this.requeues.cancel(m.key)
          } else if (!cur || cur.hash !== m.hash) {
            this.work.insert(w, { key: m.key, hash: m.hash, owned: cur?.owned ?? [], status: s })
          }
        }
      })
    }
    return watch
  }

  private async observe(spec: number, iter: ChangeIterator<unknown>, txn: ReadTxn) {
    const [changes, watch] = iter.next(txn)
    const { repair, orphans } = this.secondaries.observe(
      spec,
      changes,
      (owner) => this.options.primaries.get(txn, this.options.primaries.primary.query(owner as never)) !== undefined,
    )
    if (repair.size) {
      // a new pending mark even on a row being synced: the reconciler drops that sync's result
      // (it saw the secondary before this change) and syncs again
      await this.options.db.write(this.work, (w) => {
        this.stats.repairs += markPending(w, this.work, repair)
      })
    }
    // a secondary whose owner is gone (its sync made it just before the owner's delete ran, say)
    if (orphans && !this.markInitialized) await this.gc().catch((e) => this.report(e, 'garbage collection failed'))
    return watch
  }

  // ---- syncing ----

  private involved(p: P | undefined, key: string): InvolvedObject {
    return involvedObject(p, key, this.options.kind, this.options.eventNamespace ?? 'default')
  }

  private async syncOne(w: MutableWork, ctx: OpContext): Promise<boolean> {
    const key = w.key
    this.requeues.cancel(key)
    const p = this.options.primaries.get(ctx.txn, this.options.primaries.primary.query(key as never))
    if (p === undefined) return false // deleted since: its delete comes next
    this.stats.syncs++
    let res: SyncResult
    try {
      res = await this.options.sync(p, { txn: ctx.txn, signal: ctx.signal, key })
      if (!res || !Array.isArray(res.secondaries)) throw new SyncError('sync must return { secondaries: [...] }')
    } catch (err) {
      this.stats.syncErrors++
      const msg = `sync of ${this.options.kind} "${key}" failed: ${(err as Error).message}`
      await this.writeErrorStatus(p, msg, undefined, ctx)
      throw new SyncError(msg)
    }
    const { applied, changed, failures } = await this.secondaries.write(
      key,
      w.owned,
      res.secondaries,
      this.stamps(key),
      this.involved(p, key),
      ctx.signal,
    )
    w.owned = applied
    if (failures.length) {
      this.stats.syncErrors++
      const msg = failures.join('; ')
      await this.writeErrorStatus(p, msg, res.status, ctx)
      throw new SyncError(msg)
    }
    if (res.status !== undefined && this.options.status) await this.options.status.writeStatus(p, res.status, ctx.signal)
    if (res.requeueAfterMs !== undefined && res.requeueAfterMs >= 0) this.requeueAfter(key, res.requeueAfterMs)
    return changed
  }

  private async writeErrorStatus(p: P, msg: string, status: unknown, ctx: OpContext): Promise<void> {
    if (!this.options.status) return
    await this.options.status.writeStatus(p, errorStatusOf(msg, status, this.options.errorStatus), ctx.signal).catch((e) => {
      const key = this.keyOf(p)
      this.report(new SyncError(`status of "${key}": ${(e as Error).message}`), 'status write failed', key)
    })
  }

  private requeueAfter(key: string, ms: number): void {
    this.stats.requeues++
    this.requeues.after(key, ms, () => {
      if (!this.follow) return
      void this.options.db
        .write(this.work, (w) => void markPending(w, this.work, [key]))
        .catch((e) => this.report(e, 'requeue failed', key))
    })
  }

  /** A primary is gone: delete what it owned and what is observed with its stamp. */
  private async removeOwned(w: Work, ctx: OpContext): Promise<void> {
    this.requeues.cancel(w.key)
    if (this.options.primaries.get(ctx.txn, this.options.primaries.primary.query(w.key as never)) !== undefined) return // back again
    const failures = await this.secondaries.removeAll(w.key, w.owned, this.involved(undefined, w.key), ctx.signal)
    if (failures.length) throw new SyncError(`secondaries of deleted ${this.options.kind} "${w.key}": ${failures.join('; ')}`)
  }

  private report(err: Error, msg: string, key?: string): void {
    logTo(
      this.options.logger,
      'error',
      { err, controller: this.options.name, kind: this.options.kind, ...(key !== undefined ? { key } : {}) },
      msg,
    )
  }
}
