// The reconciler: lifecycle and the one loop that runs everything.
//
// Invariants:
// - one loop per running reconciler does all the work (full reconciliation, refresh marking,
//   incremental rounds with their retries) one step at a time, so no two steps ever act on the same
//   object concurrently and the retry queue needs no locking;
// - between steps the loop sleeps on exactly: the change iterator's watch, the table's
//   initialization watch (when a full reconciliation or a prune waits for it), one timer (the
//   earliest of: next retry, next full reconciliation, next prune, next refresh check), a trigger,
//   and stop;
// - full reconciliations and prunes run when ./schedule.ts says they are due, never before the
//   table is initialized;
// - stop() aborts the in-flight operations' signal, wakes the loop, waits for it to end, clears the
//   timer, closes the change iterator and stops the limiters: nothing of it keeps the process alive.
//   The retry queue survives a stop (failed deletes must still be retried after a restart).

import { StoppedError, UsageError } from './errors.ts'
import { RateLimiter } from './ratelimit.ts'
import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import { Watch, type ChangeIterator, type Lifecycle } from '@statewright/statedb'
import { logTo } from '@statewright/statedb'
import { resolveConfig, type ReconcilerConfig, type ResolvedReconcilerConfig } from './config.ts'
import { OperationRunner } from './runner.ts'
import { showRetryKey, type RetryItem } from './retries.ts'
import type { Between, FullReport } from './full.ts'
import type { PruneReport } from './prune.ts'
import { FullSchedule } from './schedule.ts'
import { markForRefresh, RefreshBudget } from './refresh.ts'
import { HEALTH_MESSAGES, HealthReporter, reportToProcess, type FailingObject, type ReconcilerHealth } from './health.ts'
import { incrementalRound, type RoundResult } from './incremental.ts'
import { publishProgress, RevisionWaiters, waitForSettled } from './wait.ts'

export interface FailedObject<Obj> {
  /** The object's primary key, as text. */
  readonly key: string
  /** The object as it was when it failed (a deleted object for deletes). */
  readonly object: Obj
  readonly deleted: boolean
  readonly error: string
  /** Consecutive failures so far. */
  readonly attempts: number
  /** Epoch ms of the next retry. */
  readonly retryAt: number
}

export interface ReconcilerStats {
  rounds: number
  objects: number
  dropped: number
  fullRuns: number
  /** Prunes run on their own (not as part of a full reconciliation). */
  pruneRuns: number
  processedRevision: number
  retryQueue: number
}

export class Reconciler<Obj> implements Lifecycle {
  readonly config: ResolvedReconcilerConfig<Obj>
  private readonly runner: OperationRunner<Obj>
  private readonly healthReporter: HealthReporter
  private readonly waiters = new RevisionWaiters()
  private loopDone: Promise<void> | undefined
  private running = false
  private wake: (() => void) | undefined
  /** Set by a trigger that came while the loop was not sleeping: the next sleep returns at once. */
  private poked = false
  /** Set while a stop() is under way. */
  private stopping: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined
  private roundLimiter: RateLimiter | undefined
  /** A round has acted on the initialized table (readiness). */
  private initialRoundDone = false
  private nextRefreshAt = Infinity
  /** Fires when `reached` or the retry queue changes (for the table-level waits); made on demand. */
  private progressWatch: Watch | undefined
  private progressSeen = { reached: -1, retries: -1 }
  private unpublish: (() => void) | undefined
  /** Aborted by stop(): ends the settled() waits of this run. */
  private life: AbortController | undefined
  private readonly counters: ReconcilerStats = {
    rounds: 0,
    objects: 0,
    dropped: 0,
    fullRuns: 0,
    pruneRuns: 0,
    processedRevision: 0,
    retryQueue: 0,
  }

  private readonly reportError: (err: unknown, what: string) => void
  private readonly schedule: FullSchedule<Obj>

  constructor(config: ReconcilerConfig<Obj>) {
    this.config = resolveConfig(config)
    this.runner = new OperationRunner(this.config)
    const logger = config.logger
    this.reportError = logger
      ? (err, what) => logTo(logger, 'error', { err, reconciler: this.config.name }, what)
      : (config.onError ?? reportToProcess)
    this.healthReporter = new HealthReporter(this.reportError)
    this.schedule = new FullSchedule(this.config, this.counters)
  }

  get name(): string {
    return this.config.name
  }

  /**
   * Starts the loop; resolves once it runs. Starting a running reconciler does nothing; starting one
   * whose stop() has not resolved yet rejects (the old loop is still winding down: await stop() first).
   */
  async start(): Promise<void> {
    if (this.running) return
    if (this.stopping) throw new UsageError(`reconciler "${this.name}" is stopping: await stop() before start()`)
    this.running = true
    this.life = new AbortController()
    this.initialRoundDone = false
    this.waiters.reset()
    this.runner.start()
    const rounds = this.config.rateLimit.rounds
    this.roundLimiter = rounds ? new RateLimiter(rounds) : undefined
    const now = Date.now()
    this.schedule.start(now)
    this.nextRefreshAt = this.config.refreshIntervalMs > 0 ? now : Infinity
    const { db, table } = this.config
    const txn = db.readTxn()
    const iter = table.changes(txn)
    this.loopDone = this.loop(iter, table.revision(txn)).finally(() => iter.close())
    // the table-level waits (waitForReconciliation) see this reconciler's deletes while it runs
    const waiters = this.waiters
    this.unpublish = publishProgress<Obj>(table, {
      name: this.name,
      get reached() {
        return waiters.reached
      },
      failedDeletes: () => this.failedDeletes().map((f) => ({ key: f.key, object: f.object, error: f.error })),
      changed: () => (this.progressWatch ??= new Watch()),
    })
  }

  /** Stops: cancels in-flight operations, ends the loop, clears timers. Resolves when all is stopped. */
  stop(): Promise<void> {
    if (!this.running) return this.stopping ?? Promise.resolve()
    this.running = false
    this.life?.abort(new StoppedError(`reconciler "${this.name}" stopped`))
    this.stopping = this.stopLoop().finally(() => (this.stopping = undefined))
    return this.stopping
  }

  private async stopLoop(): Promise<void> {
    const stopped = new StoppedError(`reconciler "${this.name}" stopped`)
    await this.runner.stop()
    this.wake?.()
    await this.loopDone
    this.loopDone = undefined
    this.clearTimer()
    const l = this.roundLimiter
    this.roundLimiter = undefined
    if (l) l.stop().catch(() => {}) // not awaited: see OperationRunner.stop
    this.waiters.fail(stopped)
    this.unpublish?.()
    this.unpublish = undefined
    this.progressChanged(true)
    this.schedule.fail(stopped)
    this.healthReporter.stopped()
  }

  get isRunning(): boolean {
    return this.running
  }

  // ---- observing ----

  health(): ReconcilerHealth {
    return this.healthReporter.current
  }

  /**
   * Resolves once every object of the table as it is now has been acted on: updated, deleted, or
   * failed and queued for retry (its error is in health() and failures()). Rejects when `signal`
   * aborts or the reconciler stops.
   */
  async settled(signal?: AbortSignal): Promise<void> {
    const life = this.life
    if (!this.running || !life) throw new StoppedError(`reconciler "${this.name}" is not running`)
    const { db, table, statusIndex } = this.config
    await waitForSettled(db, table, statusIndex, { name: this.name, signal: signal ? AbortSignal.any([signal, life.signal]) : life.signal })
  }

  /** Calls fn on every health change. Returns the unsubscribe function. */
  onHealth(fn: (h: ReconcilerHealth) => void): () => void {
    return this.healthReporter.subscribe(fn)
  }

  /** Objects failing now, updates and deletes, oldest failure first. */
  failures(): FailedObject<Obj>[] {
    const out: FailedObject<Obj>[] = []
    for (const i of this.runner.retries.values()) {
      out.push(failed(i))
    }
    return out
  }

  /** The failure being retried for this object (by its primary key), if any: message, attempts, next retry time. */
  failureOf(obj: Obj): FailedObject<Obj> | undefined {
    const i = this.runner.retries.get(this.runner.key(obj))
    return i && failed(i, obj)
  }

  /** Deleted objects whose Delete failed and is being retried (they are no longer in the table). */
  failedDeletes(): FailedObject<Obj>[] {
    return this.failures().filter((f) => f.deleted)
  }

  stats(): ReconcilerStats {
    return { ...this.counters, retryQueue: this.runner.retries.size }
  }

  /** The last full reconciliation's report. */
  get lastFullReconciliation(): FullReport | undefined {
    return this.schedule.lastFull
  }

  // ---- waiting and triggering ----

  /**
   * Resolves once every change up to table revision `revision` (the revision a writer's commit
   * returned: `table.revision(wtxn.commit())`) has been acted on: reconciled, failed (error status,
   * queued for retry) or, for a delete, sent to the target (or failed and queued: see failedDeletes).
   * Rejects if the reconciler stops first, or with the signal's reason.
   */
  waitForRevision(revision: number, opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (!this.running && revision > this.waiters.reached)
      return Promise.reject(new StoppedError(`reconciler "${this.name}" is not running`))
    return this.waiters.wait(revision, opts.signal)
  }

  /**
   * Asks for a full reconciliation now (it still waits for the table to be initialized). Resolves
   * with the report of the next full reconciliation to start; concurrent calls share one.
   */
  triggerFullReconciliation(): Promise<FullReport> {
    if (!this.running) return Promise.reject(new StoppedError(`reconciler "${this.name}" is not running`))
    const report = this.schedule.requestFull()
    this.poke()
    return report
  }

  /**
   * Asks for a prune alone now (cilium's Prune): the target removes what the table does not hold,
   * and no object is updated. It still waits for the table to be initialized. Resolves with the
   * report of the next prune to start (a full reconciliation's prune counts); concurrent calls share
   * one. Rejects when the reconciler has no `operations.prune`.
   */
  triggerPrune(): Promise<PruneReport> {
    if (!this.running) return Promise.reject(new StoppedError(`reconciler "${this.name}" is not running`))
    if (!this.config.operations.prune) return Promise.reject(new UsageError(`reconciler "${this.name}" has no operations.prune`))
    const report = this.schedule.requestPrune()
    this.poke()
    return report
  }

  // ---- the loop ----

  /** One incremental round, with its bookkeeping (counters, metrics, waiters, readiness, health). */
  private async round(iter: ChangeIterator<Obj>, startRevision: number): Promise<RoundResult> {
    const { db, table } = this.config
    // ready once a round has acted on a table that was initialized when the round began
    const initializedBefore = this.initialRoundDone || table.initialized(db.readTxn())[0]
    const roundStarted = performance.now()
    const r = await incrementalRound(this.runner, iter, startRevision)
    this.config.metrics?.round?.(this.name, (performance.now() - roundStarted) / 1000, r.objects)
    if (initializedBefore) this.initialRoundDone = true
    this.counters.rounds++
    this.counters.objects += r.objects
    this.counters.dropped += r.dropped
    this.counters.processedRevision = r.processedRevision
    this.waiters.advance(r.processedRevision)
    this.report()
    this.progressChanged(false)
    return r
  }

  private async loop(iter: ChangeIterator<Obj>, startRevision: number): Promise<void> {
    const { db, table, refreshPerSecond } = this.config
    const budget = refreshPerSecond > 0 ? new RefreshBudget(refreshPerSecond) : undefined
    const between: Between = async () => (await this.round(iter, startRevision)).objects
    try {
      while (this.running) {
        this.poked = false
        const wait = this.roundLimiter?.take()
        if (wait) await this.runner.race(wait)
        const watches: Watch[] = []

        // Full reconciliation and prune, when due or asked for, once the table is initialized (until
        // then the initialization watch wakes the loop, not the overdue timer). Between its chunks,
        // one incremental round each: fresh changes first (./full.ts).
        const { fullAt, pruneAt, initWatch } = await this.schedule.runDue(this.runner, between)
        if (initWatch) watches.push(initWatch)

        // Refresh: mark stale done objects; the round below reconciles them.
        const now = Date.now()
        if (budget && now >= this.nextRefreshAt) {
          await markForRefresh(this.runner, budget, now)
          this.nextRefreshAt = now + Math.min(this.config.refreshIntervalMs, 1000)
        }

        const r = await this.round(iter, startRevision)

        const nextRetry = this.runner.retries.nextDue()
        if (r.more || (nextRetry !== undefined && nextRetry <= Date.now())) {
          await yieldToEventLoop() // let writers, timers and I/O in between rounds
          continue
        }
        watches.push(r.watch)
        if (!this.initialRoundDone) {
          // not ready yet: wake when the table is initialized (that writes no object), then run a round
          const [initialized, initWatch] = table.initialized(db.readTxn())
          if (initialized) continue
          watches.push(initWatch)
        }
        await this.sleep(watches, Math.min(nextRetry ?? Infinity, fullAt, pruneAt, this.nextRefreshAt))
      }
    } catch (err) {
      if (!(err instanceof StoppedError) && !this.runner.signal.aborted) {
        // A bug or a statedb failure: report it loudly rather than spin.
        this.reportError(err, `reconciler "${this.name}" loop failed`)
        this.running = false
        const msg = `loop failed: ${(err as Error)?.message ?? err}`
        this.healthReporter.update({ objects: 0, errors: 1, messages: [msg], pruneError: this.schedule.pruneError, notReady: msg })
      }
    }
  }

  /** Fires the progress watch when `reached` or the retry queue changed since it last fired (or always). */
  private progressChanged(always: boolean): void {
    const w = this.progressWatch
    if (w === undefined) return
    const reached = this.waiters.reached
    const retries = this.runner.retries.size
    const seen = this.progressSeen
    if (!always && seen.reached === reached && seen.retries === retries) return
    seen.reached = reached
    seen.retries = retries
    this.progressWatch = undefined
    w.close()
  }

  private report(): void {
    const retries = this.runner.retries
    const messages: string[] = []
    const failing: FailingObject[] = []
    for (const i of retries.values()) {
      if (messages.length >= HEALTH_MESSAGES) break
      const key = showRetryKey(i.key)
      messages.push(`${i.deleted ? 'delete ' : ''}${key}: ${i.error}`)
      failing.push({ key, error: i.error, deleted: i.deleted })
    }
    const objects = this.config.table.count(this.config.db.readTxn())
    const notReady = this.initialRoundDone ? undefined : `table "${this.config.table.name}" not initialized yet`
    this.healthReporter.update({ objects, errors: retries.size, messages, failing, pruneError: this.schedule.pruneError, notReady })
    this.config.metrics?.state(this.name, retries.size, retries.size)
  }

  private sleep(watches: readonly Watch[], until: number): Promise<void> {
    if (!this.running) return Promise.resolve()
    // Each sleep owns its timer and listeners, and a watch that already fired wakes it at once
    // before anything is armed: a finished sleep must never clear the next one's timer.
    if (this.poked || watches.some((w) => w.closed)) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const offs: Array<() => void> = []
      let timer: NodeJS.Timeout | undefined
      const done = () => {
        if (this.wake !== done) return
        this.wake = undefined
        for (const off of offs) off()
        if (timer !== undefined) clearTimeout(timer)
        this.timer = undefined
        resolve()
      }
      this.wake = done
      if (until !== Infinity) this.timer = timer = setTimeout(done, Math.max(0, until - Date.now()))
      for (const w of watches) offs.push(w.onClose(done))
    })
  }

  private poke(): void {
    this.poked = true
    this.wake?.()
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }
}

function failed<Obj>(i: RetryItem<Obj>, obj?: Obj): FailedObject<Obj> {
  return { key: showRetryKey(i.key), object: i.object ?? obj!, deleted: i.deleted, error: i.error, attempts: i.attempts, retryAt: i.dueAt }
}
