// The machinery shared by incremental, retry, full and refresh work: calling the operations
// (rate-limited, timed, cancellable) and writing outcomes back.
//
// Invariants of the write-back (`commit`):
// - one write transaction per call, i.e. per round;
// - an update's result is written with compare-and-swap on the revision the operation saw: a newer
//   write to the object is never overwritten. When the swap fails, the result is still written when
//   the object's status (this reconciler's) still carries the id the operation saw: then only other
//   writers' parts of the object changed (another reconciler's status in a status set); the status
//   goes onto the current object and the operation's mutations of its clone are not kept (a name a
//   status set lacks reads with the set's own id, which a writer's new set or `pending()` changes).
//   Otherwise the result is dropped and the newer version is reconciled next (it is pending, or
//   deleted);
// - every failure is queued for a retry (update: only if its error status was written, since a
//   dropped result means a newer version supersedes it); every success clears the key's retry;
// - one `done` status object is shared by every success of a round (fewer allocations, less retained
//   memory; ids only need to be unique per write of one object).

import { StoppedError } from './errors.ts'
import { RateLimiter } from './ratelimit.ts'
import { Query, type Key, type ReadTxn, type WriteTxn } from '@statewright/statedb'
import type { BatchEntry, ObjectOpContext, OpContext, ResolvedReconcilerConfig } from './config.ts'
import { RetryQueue, retryKey, type RetryKey } from './retries.ts'
import { errorMessage, statusDone, statusError, type Status, type StatusKind } from './status.ts'

/** One object's pass through an operation. */
export interface Outcome<Obj> {
  deleted: boolean
  /** Update: the clone the operation got. Delete: the deleted object. */
  object: Obj
  /** Update: the revision the operation saw (for the swap). Delete: the deletion's revision. */
  revision: number
  /** Update: the status id the object carried when read. */
  seenStatusId: number
  /** Update: the status kind the object carried when read. */
  seenKind: StatusKind
  /** Attempts of this key before (carried over from the retry queue). */
  attempts: number
  /** Set when the operation failed. */
  error: string | undefined
  /** Update reported a change of the target (out of sync, in a full reconciliation). */
  changed: boolean
  /** Full reconciliation: Update changed the clone, which is written back (./full.ts). */
  rewrite: boolean
}

export class OperationRunner<Obj> {
  readonly retries: RetryQueue<Obj>
  private readonly primaryIndex: string
  private opLimiter: RateLimiter | undefined
  private controller = new AbortController()
  private abortPromise: Promise<never> | undefined
  /** Shared by the operations of one round. */
  private ctx: OpContext

  constructor(readonly cfg: ResolvedReconcilerConfig<Obj>) {
    this.retries = new RetryQueue<Obj>(cfg.retry.minMs, cfg.retry.maxMs, cfg.retry.jitter)
    this.primaryIndex = cfg.table.indexes[0]!
    this.ctx = { signal: this.controller.signal, txn: cfg.db.readTxn(), full: false }
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  /** (Re)arms for a run: a fresh abort signal, a fresh operation limiter. */
  start(): void {
    this.controller = new AbortController()
    const signal = this.controller.signal
    this.abortPromise = new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(new StoppedError('reconciler stopped')), { once: true })
    })
    this.abortPromise.catch(() => {}) // observed by races only
    const ops = this.cfg.rateLimit.operations
    this.opLimiter = ops ? new RateLimiter(ops) : undefined
  }

  /** Aborts in-flight operations and drops queued ones. */
  async stop(): Promise<void> {
    this.controller.abort(new StoppedError('reconciler stopped'))
    const l = this.opLimiter
    this.opLimiter = undefined
    // Not awaited: nothing runs inside the limiter, but stop() must not wait on the queue's timers.
    if (l) l.stop().catch(() => {})
  }

  key(obj: Obj): RetryKey {
    return retryKey(this.cfg.primaryKey(obj))
  }

  /** Takes the object's queued retry (a newer change supersedes it); returns its attempt count, 0 if none. */
  takeRetry(obj: Obj): number {
    return this.retries.size > 0 ? this.retries.take(this.key(obj)) : 0
  }

  primaryQuery(obj: Obj): Query<Obj> {
    return new Query<Obj>(this.primaryIndex, this.cfg.primaryKey(obj))
  }

  context(txn: ReadTxn, full: boolean): OpContext {
    const signal = this.controller.signal
    if (this.ctx.txn !== txn || this.ctx.full !== full || this.ctx.signal !== signal) this.ctx = { signal, txn, full }
    return this.ctx
  }

  /**
   * Outcomes of committed rounds, for the next rounds (see `release`): an outcome is 88 bytes, the
   * largest allocation per object the reconciler itself makes (scripts/profile-allocations.ts).
   */
  private readonly spare: Outcome<Obj>[] = []

  /** An outcome for an update of the object read at `revision`. */
  updateOutcome(obj: Obj, revision: number, status: Status, attempts: number): Outcome<Obj> {
    return this.outcome(false, this.cfg.cloneObject(obj), revision, status.id, status.kind, attempts)
  }

  deleteOutcome(obj: Obj, revision: number, attempts: number): Outcome<Obj> {
    return this.outcome(true, obj, revision, 0, 'done', attempts)
  }

  private outcome(
    deleted: boolean,
    object: Obj,
    revision: number,
    seenStatusId: number,
    seenKind: StatusKind,
    attempts: number,
  ): Outcome<Obj> {
    const o = this.spare.pop()
    if (o === undefined)
      return { deleted, object, revision, seenStatusId, seenKind, attempts, error: undefined, changed: false, rewrite: false }
    o.deleted = deleted
    o.object = object
    o.revision = revision
    o.seenStatusId = seenStatusId
    o.seenKind = seenKind
    o.attempts = attempts
    o.error = undefined
    o.changed = false
    o.rewrite = false
    return o
  }

  /**
   * Takes back the outcomes of a round whose write-back committed: every operation of the round has
   * settled, and nothing keeps an outcome past its commit (the retry queue copies what it needs).
   * Each lets go of its object; up to a round's worth are kept.
   */
  release(outcomes: readonly Outcome<Obj>[]): void {
    const spare = this.spare
    const room = this.cfg.roundSize
    for (let i = 0; i < outcomes.length && spare.length < room; i++) {
      const o = outcomes[i]!
      o.object = undefined as Obj
      o.error = undefined
      spare.push(o)
    }
  }

  // ---- calling operations ----

  /**
   * Runs Update or Delete for one outcome; records failure (or `changed`) on it. Returns a promise
   * only when the operation returned one (or went through the operation limiter): a synchronous
   * operation costs one call, with no promise, async frame or microtask per object. Callers await
   * the result only when it is defined.
   */
  run(o: Outcome<Obj>, ctx: OpContext): Promise<void> | undefined {
    const m = this.cfg.metrics
    const t0 = m ? performance.now() : 0
    let r: unknown
    try {
      const wait = this.opLimiter?.take()
      r = wait ? this.callAfter(wait, o, ctx) : this.call(o, ctx)
    } catch (err) {
      this.failed(o, err)
      if (m) this.observe(o, t0)
      return undefined
    }
    if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<unknown>).then === 'function')
      return this.settle(o, r as PromiseLike<unknown>, t0)
    o.changed = r === true
    if (m) this.observe(o, t0)
    return undefined
  }

  /**
   * Runs the outcomes' operations one after the other, from `from` on. Synchronous operations run
   * in one pass; from the first operation that returns a promise on, the rest runs after it, and
   * the promise for the whole is returned (undefined: everything ran synchronously).
   */
  runAll(outcomes: readonly Outcome<Obj>[], ctx: OpContext, from = 0): Promise<void> | undefined {
    for (let i = from; i < outcomes.length; i++) {
      const p = this.run(outcomes[i]!, ctx)
      if (p !== undefined) return this.runAllAfter(p, outcomes, ctx, i + 1)
    }
    return undefined
  }

  // The closures of `run` and `runAll` live in these: a closure in a loop body over its variable
  // costs a context per iteration, and one in `run` a context per call, made or not.
  private runAllAfter(p: Promise<void>, outcomes: readonly Outcome<Obj>[], ctx: OpContext, from: number): Promise<void> {
    return p.then(() => this.runAll(outcomes, ctx, from))
  }

  private callAfter(wait: Promise<void>, o: Outcome<Obj>, ctx: OpContext): Promise<unknown> {
    return wait.then(() => this.call(o, ctx))
  }

  /** The asynchronous end of `run`: awaits the operation's promise, or stop. */
  private async settle(o: Outcome<Obj>, p: PromiseLike<unknown>, t0: number): Promise<void> {
    try {
      o.changed = (await this.race(p as Promise<unknown>)) === true
    } catch (err) {
      this.failed(o, err)
    }
    if (this.cfg.metrics) this.observe(o, t0)
  }

  /** An operation failed: record it, unless the failure is the reconciler stopping. */
  private failed(o: Outcome<Obj>, err: unknown): void {
    if (this.controller.signal.aborted) throw new StoppedError('reconciler stopped')
    o.error = errorMessage(err)
  }

  private observe(o: Outcome<Obj>, t0: number): void {
    this.cfg.metrics!.operation(
      this.cfg.name,
      o.deleted ? 'delete' : 'update',
      o.error === undefined ? 'success' : 'error',
      (performance.now() - t0) / 1000,
      1,
    )
  }

  private call(o: Outcome<Obj>, ctx: OpContext): unknown {
    const ops = this.cfg.operations
    // one context per operation: an operation may keep it past its return
    const c: ObjectOpContext = { signal: ctx.signal, txn: ctx.txn, full: ctx.full, revision: o.revision }
    return o.deleted ? ops.delete(o.object, c) : ops.update(o.object, c)
  }

  /** Awaits p, or throws StoppedError as soon as the reconciler stops (p may ignore the signal). */
  race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.abortPromise as Promise<never>])
  }

  /** Runs a batch operation for outcomes of one kind; a batch that throws fails every entry. */
  async runBatch(outcomes: Outcome<Obj>[], ctx: OpContext): Promise<void> {
    if (outcomes.length === 0) return
    const b = this.cfg.batchOperations!
    const deleted = outcomes[0]!.deleted
    const entries: BatchEntry<Obj>[] = outcomes.map((o) => ({ object: o.object, revision: o.revision, error: undefined, changed: false }))
    const m = this.cfg.metrics
    const t0 = m ? performance.now() : 0
    try {
      const r = deleted ? b.deleteBatch(entries, ctx) : b.updateBatch(entries, ctx)
      if (r !== undefined) await this.race(Promise.resolve(r))
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i]!
        const e = entry.error
        if (e !== undefined && e !== null) outcomes[i]!.error = errorMessage(e)
        else outcomes[i]!.changed = entry.changed === true
      }
    } catch (err) {
      if (this.controller.signal.aborted) throw new StoppedError('reconciler stopped')
      const msg = errorMessage(err)
      for (const o of outcomes) o.error = msg
    }
    if (m) {
      const failed = outcomes.reduce((n, o) => n + (o.error === undefined ? 0 : 1), 0)
      const op = deleted ? 'delete' : 'update'
      const secs = (performance.now() - t0) / 1000
      if (failed < outcomes.length) m.operation(this.cfg.name, op, 'success', secs, outcomes.length - failed)
      if (failed > 0) m.operation(this.cfg.name, op, 'error', failed < outcomes.length ? 0 : secs, failed)
    }
  }

  /**
   * The round was interrupted by stop: its deletes are queued for a retry (the deleted objects are
   * no longer in the table, and a new change iterator would not see them again). Updates need
   * nothing: their objects are still pending or in error in the table, which a restart picks up.
   */
  requeueDeletes(outcomes: readonly Outcome<Obj>[]): void {
    const now = Date.now()
    for (const o of outcomes) {
      if (!o.deleted) continue
      this.retries.fail(
        this.key(o.object),
        { deleted: true, object: o.object, statusId: 0, revision: o.revision, error: 'interrupted: the reconciler stopped' },
        o.attempts,
        now,
      )
    }
  }

  // ---- write-back ----

  /**
   * Writes the outcomes back in one write transaction (see the invariants above) and updates the
   * retry queue. `writeDone(o)` says whether a success needs its done status written (full
   * reconciliation skips objects that were done already; absent: every success is written).
   * Returns how many results were dropped.
   */
  async commit(outcomes: readonly Outcome<Obj>[], writeDone?: (o: Outcome<Obj>) => boolean): Promise<number> {
    if (outcomes.length === 0) return 0
    const { db, table } = this.cfg
    // The write transaction is taken before the write-back (only when something is written), so
    // that the write-back itself is one synchronous pass with no await (and no iterator object) per
    // outcome. Nothing else touches the retry queue meanwhile: the loop runs one step at a time.
    let txn: WriteTxn | undefined
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!
      if (!o.deleted && (o.error !== undefined || writeDone === undefined || writeDone(o))) {
        txn = db.tryWriteTxn(table) ?? (await db.writeTxn(table))
        break
      }
    }
    try {
      const dropped = this.writeBack(outcomes, txn, writeDone)
      txn?.commit()
      return dropped
    } finally {
      txn?.abort()
    }
  }

  /** commit's synchronous part: `txn` is defined when some outcome is written. */
  private writeBack(
    outcomes: readonly Outcome<Obj>[],
    txn: WriteTxn | undefined,
    writeDone: ((o: Outcome<Obj>) => boolean) | undefined,
  ): number {
    const { table, getObjectStatus, setObjectStatus } = this.cfg
    const now = Date.now()
    let done: Status | undefined
    let dropped = 0
    // One handle for the round's writes: no per-object transaction and table lookups.
    const batch = txn === undefined ? undefined : table.batch(txn)
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!
      if (o.deleted) {
        if (o.error !== undefined) {
          this.retries.fail(
            this.key(o.object),
            { deleted: true, object: o.object, statusId: 0, revision: o.revision, error: o.error },
            o.attempts,
            now,
          )
        } else if (o.attempts > 0) this.takeRetry(o.object)
        continue
      }
      if (o.error === undefined && writeDone !== undefined && !writeDone(o)) {
        if (o.attempts > 0) this.takeRetry(o.object)
        continue
      }
      let status = o.error === undefined ? (done ??= statusDone()) : statusError(o.error)
      let written: boolean
      try {
        written = batch!.compareAndSwap(o.revision, setObjectStatus(o.object, status))
      } catch (err) {
        // The operation left its clone unstorable (a unique conflict, a bad key): that is this
        // object's failure. The error goes onto the stored object as it was read (whose keys are
        // valid), and the object is retried like any other failure.
        o.error = `write-back refused: ${errorMessage(err)}`
        status = statusError(o.error)
        const cur = table.getEntry(txn!, this.primaryQuery(o.object))
        written =
          cur !== undefined &&
          cur.revision === o.revision &&
          batch!.compareAndSwap(o.revision, setObjectStatus(this.cfg.cloneObject(cur.object), status))
      }
      if (!written) {
        const cur = table.getEntry(txn!, this.primaryQuery(o.object))
        if (cur !== undefined && getObjectStatus(cur.object).id === o.seenStatusId) {
          batch!.insert(setObjectStatus(this.cfg.cloneObject(cur.object), status))
          written = true
        }
      }
      if (!written) {
        dropped++
        // a retry in flight leaves the queue: the newer version is reconciled on its own change
        if (o.attempts > 0) this.takeRetry(o.object)
        continue
      }
      if (o.error !== undefined) {
        this.retries.fail(
          this.key(o.object),
          { deleted: false, object: o.object, statusId: status.id, revision: o.revision, error: o.error },
          o.attempts,
          now,
        )
      } else if (o.attempts > 0) this.takeRetry(o.object)
    }
    return dropped
  }
}
