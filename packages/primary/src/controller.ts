// PrimaryController: Kumori controllerruntime's and sample-controller's "primary / secondary"
// controller, on statewright's tables and reconciler instead of a hand-written workqueue.
//
// - Primaries are a statedb table (a NatsKvReflector's or a k8s Reflector's). Every primary has a
//   row in a work table (key, spec hash, what it owns, reconciler status) that a Reconciler drives:
//   dedup by key, per-key exponential backoff, at most `concurrency` syncs at once (batches with a
//   worker pool), never two at once for one key (one round at a time, a key once per round).
// - A primary change whose spec hash is unchanged (a status write-back) marks nothing: no loop.
// - sync(primary, ctx) returns the secondaries, written with owner stamps and an ownership check:
//   an object with our name but not our owner annotation is never adopted (ErrResourceExists: a
//   Warning event, an error status, a retry with backoff; it is created once the foreign object is
//   gone). Secondaries a primary stopped returning are deleted; a deleted primary's go too. Syncing
//   and removing is sync.ts.
// - Secondaries are observed through tables (reflectors). A change of one of ours that is not our
//   own write (its version differs from the one our write returned) re-marks its owner pending
//   (HandleSecondary): an edit or a delete is repaired. Objects are mapped to their owner by the
//   owner-key annotation, which holds the exact key (the label holds it when it is a valid label
//   value, else a stable hash).
// - GarbageSecondaries (garbage.ts): secondaries stamped with our owner kind whose owner key is not
//   a primary are deleted, at start (once every table is initialized), at every resync and every
//   gcIntervalMs.
// - Resync: every resyncIntervalMs all primaries are marked pending again and GC runs.
// - requeueAfterMs marks the key pending again later, without counting as an error; enqueue(key,
//   afterMs) does the same from outside.
// - A primary changed with an equal spec (re-put) is synced again unless the change is our own
//   status write-back (its status is the one we last wrote): a re-put gets a status, no loop.
// - Joined tables (options.joins): no primary is marked before they are initialized; a
//   change of an object a sync read through ctx.get/ctx.list marks its readers pending (joins.ts).
// - Syncs of one round run `concurrency` at once and a round ends with its slowest sync:
//   syncTimeoutMs bounds how long one slow key holds the others (Kumori's workers are independent:
//   see docs/nats.md).
// This file: the lifecycle and following primaries and observed tables; the parts are beside it.
// Over ~400 lines only by this header: it states the contract of the whole controller, once.
import { StoppedError, SyncError, UsageError } from './errors.ts'
import { Reconciler, statusPending, type StatusIndex } from '@statewright/reconciler'
import { causeOf, inSpan, logTo, resolveTracer, type TracerLike } from '@statewright/statedb'
import { WatchSet, type ChangeIterator, type Lifecycle, type ReadTxn, type Table, type WriteTxn } from '@statewright/statedb'
import type { PrimaryHealth } from './options.ts'
import {
  defaultKey,
  defaultSpec,
  specHash,
  validateOptions,
  type PrimaryControllerOptions,
  type PrimaryControllerStats,
} from './options.ts'
import { Secondaries } from './secondaries.ts'
import { ownerKeyIn, ownerStampKeys, stampsFor } from './stamps.ts'
import { WrittenStatuses } from './status.ts'
import type { OwnerStamps, SecondaryTarget } from './contract.ts'
import { Inflight, Requeues, markPending, newWorkTable, type MutableWork, type Work } from './work.ts'
import { JoinReads } from './joins.ts'
import { GarbageSecondaries } from './garbage.ts'
import { PrimarySyncs } from './sync.ts'

export class PrimaryController<P> implements Lifecycle {
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
  /** Table revisions the follow loop has processed: primaries first, then each observed table. */
  private processed: number[] = []
  private readonly joins: JoinReads
  /** The status each key's last sync wrote (canonical JSON): a primary change carrying it is our write-back. */
  private readonly written = new WrittenStatuses()
  private gcTimer: NodeJS.Timeout | undefined
  private readonly garbage: GarbageSecondaries<P>
  private readonly syncs: PrimarySyncs<P>
  private readonly tracer: TracerLike | undefined

  constructor(opts: PrimaryControllerOptions<P>) {
    validateOptions(opts)
    this.options = opts
    this.name = opts.name
    this.keyOf = opts.key ?? defaultKey
    this.specOf = opts.spec ?? defaultSpec
    this.stampKeys = ownerStampKeys(opts.stampPrefix)
    this.joins = new JoinReads(opts.joins)
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
    this.garbage = new GarbageSecondaries(opts, this.work, this.secondaries, (key) => this.syncs.removing.has(key))
    this.syncs = new PrimarySyncs({
      options: opts,
      keyOf: this.keyOf,
      stats: this.stats,
      secondaries: this.secondaries,
      requeues: this.requeues,
      written: this.written,
      joins: this.joins,
      stamps: (key) => this.stamps(key),
      goneFromStore: (key) => this.garbage.goneFromStore(key),
      requeueAfter: (key, ms) => this.requeueAfter(key, ms),
      report: (err, msg, key) => this.report(err, msg, key),
    })
    this.tracer = resolveTracer(opts.tracer, '@statewright/primary')
    this.reconciler = new Reconciler<Work>({
      db: opts.db,
      // a work table (syncs to run); a resync of every primary is resyncIntervalMs
      fullReconciliationIntervalMs: 0,
      table: this.work,
      statusIndex,
      name: this.work.name,
      getObjectStatus: (w) => w.status,
      setObjectStatus: (w, status) => ({ ...w, status }),
      ...(opts.retry ? { retry: opts.retry } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
      operations: {
        update: (w, ctx) => this.inflight.track(this.syncOne(w as MutableWork, ctx)),
        delete: (w, ctx) => this.inflight.track(this.syncs.removeOwned(w, ctx)),
      },
      batchOperations: {
        updateBatch: (entries, ctx) => this.inflight.pool(entries, this.concurrency, (w) => this.syncOne(w as MutableWork, ctx)),
        deleteBatch: (entries, ctx) => this.inflight.pool(entries, this.concurrency, (w) => this.syncs.removeOwned(w, ctx)),
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

  async start(): Promise<void> {
    if (this.follow) return
    const txn = await this.options.db.writeTxn(this.work)
    this.markInitialized = this.work.registerInitializer(txn, `primary-controller ${this.name}`)
    txn.commit()
    const ctrl = new AbortController()
    this.follow = { ctrl, done: this.followLoop(ctrl.signal) }
    this.reconciler.start()
    const gcEvery = this.options.gcIntervalMs ?? (this.options.primaryKeys ? 300_000 : 0)
    if (gcEvery > 0) {
      this.gcTimer = setInterval(() => {
        if (this.follow) void this.inflight.track(this.gc()).catch((e) => this.report(e, 'garbage collection failed'))
      }, gcEvery)
      this.gcTimer.unref()
    }
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
  }

  /** One sync, in a span `primary.sync` (the primary's key and kind, a link to its cause) when there is a tracer. */
  private syncOne(w: MutableWork, ctx: Parameters<PrimarySyncs<P>['syncOne']>[1]): ReturnType<PrimarySyncs<P>['syncOne']> {
    if (!this.tracer) return this.syncs.syncOne(w, ctx)
    // linked to what brought the primary (a traced watch event), as a Manager's runs are
    const primaries = this.options.primaries
    const cause = causeOf(primaries.get(ctx.txn, primaries.primary.query(w.key as never)))
    const start = cause ? { links: [{ context: cause, attributes: { 'statewright.link': 'cause' } }] } : undefined
    return inSpan(
      this.tracer,
      'primary.sync',
      (span) => {
        if (span?.isRecording()) {
          span.setAttribute('statewright.function', this.name)
          span.setAttribute('k8s.object.key', w.key)
          span.setAttribute('k8s.object.kind', this.options.kind)
        }
        return this.syncs.syncOne(w, ctx)
      },
      start,
    )
  }

  /** Stops following, stops the reconciler, and waits for syncs, deletes and a resync in flight. */
  async stop(): Promise<void> {
    const f = this.follow
    if (!f) return
    this.follow = undefined
    clearTimeout(this.resyncTimer)
    clearInterval(this.gcTimer)
    this.requeues.cancelAll()
    f.ctrl.abort(new StoppedError(`PrimaryController "${this.name}" stopped`))
    await f.done.catch(() => {})
    const inflight = this.inflight.snapshot()
    await this.reconciler.stop()
    await Promise.allSettled(inflight)
    while (this.inflight.size) await Promise.allSettled(this.inflight.snapshot())
    await Promise.allSettled(this.syncs.abandoned.snapshot())
  }

  /**
   * Syncs a primary again, now or after `afterMs` (Kumori's Enqueue/EnqueueAfter). A key that is not
   * a primary (yet) is skipped.
   */
  enqueue(key: string, afterMs = 0): void {
    if (!this.follow) throw new UsageError(`PrimaryController "${this.name}": enqueue before start`)
    if (afterMs > 0) return this.requeueAfter(key, afterMs)
    void this.options.db.write(this.work, (w) => void markPending(w, this.work, [key])).catch((e) => this.report(e, 'enqueue failed', key))
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
    for (const f of this.reconciler.failedDeletes()) errors.push({ key: String(f.object.key), error: `delete: ${f.error}` })
    const ready = this.follow !== undefined && this.work.initialized(txn)[0]
    if (!this.follow) return { level: 'stopped', message: 'stopped', ready: false, errors }
    const problems = [
      ...errors.slice(0, 3).map((e) => `${e.key}: ${e.error}`),
      ...(this.garbage.lastError ? [`gc: ${this.garbage.lastError}`] : []),
    ]
    return {
      level: problems.length ? 'degraded' : 'ok',
      message: problems.length ? `${errors.length} errors: ${problems.join('; ')}` : `${this.work.count(txn)} primaries`,
      ready,
      errors,
    }
  }

  /**
   * Resolves when every primary change so far is synced (or failed: health().errors names the keys),
   * its secondaries written and deletes done; rejects when `signal` aborts or the controller stops.
   */
  async settled(signal?: AbortSignal): Promise<void> {
    const f = this.follow
    if (!f) throw new StoppedError(`PrimaryController "${this.name}" is not running`)
    signal = signal ? AbortSignal.any([signal, f.ctrl.signal]) : f.ctrl.signal
    for (;;) {
      signal?.throwIfAborted()
      const txn = this.options.db.readTxn()
      const [pending, w] = this.work.listWatch(txn, this.statusIndex.kind('pending'))
      const revisions = [
        this.options.primaries.revision(txn),
        ...this.options.secondaries.map((s) => s.observed.revision(txn)),
        ...this.joins.revisions(txn),
      ]
      const caughtUp = revisions.every((rev, i) => (this.processed[i] ?? -1) >= rev)
      if (caughtUp && pending.count() === 0 && this.garbage.done && this.requeues.size === 0 && this.inflight.size === 0) {
        // the reconciler has acted on every change of the work table, deletes of rows included
        const rev = this.work.revision(txn)
        await this.reconciler.waitForRevision(rev, { signal })
        if (this.work.revision(this.options.db.readTxn()) === rev && this.inflight.size === 0) return
        continue
      }
      const ws = new WatchSet().add(w, this.options.primaries.allWatch(txn)[1], this.work.allWatch(txn)[1])
      await Promise.race([ws.wait(signal), new Promise((r) => setTimeout(r, 20))])
    }
  }

  /**
   * GarbageSecondaries (garbage.ts): deletes observed secondaries stamped with our kind whose owner
   * key is not a primary. Runs only once every table is initialized.
   */
  async gc(): Promise<number> {
    if (!this.allInitialized(this.options.db.readTxn()) || this.markInitialized) return 0
    return this.garbage.collect()
  }

  // ---- following primaries and secondaries ----

  private async followLoop(signal: AbortSignal): Promise<void> {
    const db = this.options.db
    const txn0 = db.readTxn()
    const primaryIter = this.options.primaries.changes(txn0)
    const observedIters = this.options.secondaries.map((s) => s.observed.changes(txn0))
    const joinIters = this.joins.iterators(txn0)
    try {
      while (!signal.aborted) {
        const txn = db.readTxn()
        const ws = new WatchSet()
        for (const [i, it] of observedIters.entries()) ws.add(await this.observe(i, it, txn))
        for (const [i, it] of joinIters.entries()) {
          const [changes, w] = it.next(txn)
          const owners = this.joins.affected(i, changes)
          if (owners.size) await db.write(this.work, (wtxn) => void markPending(wtxn, this.work, owners))
          ws.add(w)
        }
        // no primary is marked (so none synced) before the joined tables are loaded
        if (this.joins.ready(txn)) ws.add(await this.primaryChanges(primaryIter, txn))
        else for (const w of this.joins.pending(txn)) ws.add(w)
        this.processed = [
          this.options.primaries.revision(txn),
          ...this.options.secondaries.map((s) => s.observed.revision(txn)),
          ...this.joins.revisions(txn),
        ]
        if (this.markInitialized && this.allInitialized(txn)) {
          const mark = this.markInitialized
          this.markInitialized = undefined
          await db.write(this.work, (w) => mark(w))
          await this.gc().catch((e) => this.report(e, 'garbage collection failed'))
        }
        if (this.markInitialized) {
          // only the tables still waiting (an initialized table's watch has fired already); in the
          // one WatchSet, so that a wait that loses the race leaves no listener behind
          for (const t of [this.options.primaries, ...this.options.secondaries.map((s) => s.observed)]) {
            const [ready, w] = t.initialized(txn)
            if (!ready) ws.add(w)
          }
        }
        await ws.wait(signal).catch(() => {})
      }
    } finally {
      primaryIter.close()
      for (const it of observedIters) it.close()
      for (const it of joinIters) it.close()
    }
  }

  private allInitialized(txn: ReadTxn): boolean {
    if (!this.options.primaries.initialized(txn)[0] || !this.joins.ready(txn)) return false
    return this.options.secondaries.every((s) => s.observed.initialized(txn)[0])
  }

  private async primaryChanges(iter: ChangeIterator<P>, txn: ReadTxn) {
    const [changes, watch] = iter.next(txn)
    const marks: Array<{ key: string; hash?: string; primary?: P }> = []
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
        marks.push({ key, hash, primary: c.object })
      }
    }
    if (marks.length) {
      await this.options.db.write(this.work, (w) => {
        const s = statusPending()
        for (const m of marks) {
          const cur = this.work.get(w, this.work.primary.query(m.key))
          if (m.hash === undefined) {
            if (cur) {
              this.work.delete(w, cur)
              this.syncs.removing.add(m.key) // kept from GC from now until its removal succeeds (sync.ts)
            }
            this.requeues.cancel(m.key)
            this.joins.forget(m.key)
            this.written.forget(m.key)
          } else if (!cur || cur.hash !== m.hash || !this.written.isOurs(m.key, m.primary)) {
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

  private requeueAfter(key: string, ms: number): void {
    this.stats.requeues++
    this.requeues.after(key, ms, () => {
      if (!this.follow) return
      void this.options.db
        .write(this.work, (w) => void markPending(w, this.work, [key]))
        .catch((e) => this.report(e, 'requeue failed', key))
    })
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
