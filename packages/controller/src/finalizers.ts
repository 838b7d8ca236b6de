// Finalizers for a reflected kind: add ours on first sight; when the object is being deleted, run an
// async cleanup with retries and backoff, then remove ours so the deletion can complete.
//
// Built on the reconciler: the reflected table is followed by a change iterator and turned into a
// small table of *work* (one row per object that needs something from us: `add` or `cleanup`), and a
// Reconciler drives that table. Per-key exponential backoff, a newer change replacing a queued retry,
// and failures in health all come from the reconciler, not from a second hand-written retry loop.
//
// Invariants:
// - A work row exists exactly while the reflected object needs us: not terminating and without our
//   finalizer (`add`), or terminating with it (`cleanup`). A row is re-marked pending only when the
//   need (uid, action) changes, or when a done row's need is seen again in a version of the object
//   that the successful action did not already read or write; so our own writes (conditions on
//   status) and the reflector's late events for them neither cut a backoff short nor rerun a cleanup.
// - Every operation reads the object again from the snapshot it runs on, and does nothing when the
//   need is gone (object deleted, replaced by one with another uid, finalizer already there/gone).
// - Finalizer writes are JSON merge patches of the whole list with metadata.resourceVersion as a
//   precondition: the list is a set we change by one element, and a concurrent change of it (another
//   controller's finalizer) makes ours fail with 409 and be retried on the newer object, never lost.
// - A failing cleanup is never silent: the object gets a `FinalizerCleanup` False condition with the
//   error (by server-side apply on /status), a Warning Event (CleanupFailed; repeats aggregate), and
//   health() lists the key, error, attempts and retry.
import { CleanupError, ConfigError, StoppedError } from './errors.ts'
import { statusPending, newStatusIndex, Reconciler, type Status, type OpContext } from '@statewright/reconciler'
import type { Health, Lifecycle, RetryOptions } from '@statewright/statedb'
import { Table, defineIndex, type DB, type WriteTxn } from '@statewright/statedb'
import {
  describe,
  isConflict,
  isNotFound,
  namespacedName,
  objectPath,
  resolveKind,
  type Cluster,
  type KubeObject,
  type KindRef,
  type ResourceRef,
  type EventRecorder,
  type WriteFence,
} from '@statewright/k8s'
import { StatusWriter, fenceOption, findCondition, conditionsOf } from './conditions.ts'
import type { Logger } from '@statewright/statedb'

export interface CleanupContext {
  /** Aborted when the Finalizer stops, and when the cleanup runs past cleanupTimeoutMs. */
  readonly signal: AbortSignal
  /** 1 for the first try of this object's cleanup, then 2, 3, ... */
  readonly attempt: number
}

export interface FinalizerOptions {
  cluster: Cluster
  db: DB
  /** The reflected table of the kind (a Reflector's table of KubeObjects). */
  table: Table<KubeObject>
  /** The finalizer, a domain-qualified name: "example.com/cleanup". */
  name: string
  /** Releases what the object holds outside the cluster. Must be idempotent; throw to retry. */
  cleanup(obj: KubeObject, ctx: CleanupContext): void | Promise<void>
  /**
   * A cleanup running longer than this fails (a CleanupError, retried with backoff) and its signal
   * aborts; one that ignores its signal is let go (controller-runtime's ReconciliationTimeout).
   * Default 60 000 ms; 0: no bound.
   */
  cleanupTimeoutMs?: number
  /** The kind with its resource (skips discovery). Default: resolved from each object's apiVersion/kind. */
  kind?: ResourceRef
  /** The reflected table's key of an object (default namespace/name, the Reflector's default). */
  key?: (obj: KubeObject) => string
  /** Condition type written on cleanup failures (default "FinalizerCleanup"); false: none (no /status). */
  condition?: string | false
  /** Field manager of those status writes (default "statewright-finalizer"). */
  fieldManager?: string
  /** Backoff between cleanup attempts (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter 0.2). */
  retry?: RetryOptions
  /** Logs each failed cleanup (warn, will retry) and each cleanup done (info). */
  logger?: Logger
  /** The lease term the finalizer's writes are made under (a leader-elected Manager passes its term). */
  fence?: () => WriteFence | null | undefined
  /** Records a Warning Event (CleanupFailed) per failed cleanup, a Normal one (CleanupSucceeded) after failures. */
  events?: Pick<EventRecorder, 'warning' | 'normal'>
}

export interface FailingCleanup {
  key: string
  error: string
  /** Consecutive failed attempts. */
  attempts: number
  /** Epoch ms of the next attempt; absent while one is running. */
  nextRetryAt?: number
}

/** A finalizer's health: the shared `Health` (ready: started and its work loop ready) and its failing cleanups. */
export interface FinalizerHealth extends Health {
  /** Objects that need us now (finalizer to add or cleanup to run), failing ones included. */
  pending: number
  failing: FailingCleanup[]
}

type Action = 'add' | 'cleanup'
interface Work {
  readonly key: string
  readonly uid: string
  readonly action: Action
  readonly status: Status
  /** Set by a successful action (on the reconciler's clone): the resourceVersions it read and wrote. */
  acted?: string[]
}

const QUALIFIED = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/

export class Finalizer implements Lifecycle {
  readonly name: string
  private readonly opts: FinalizerOptions
  private readonly key: (obj: KubeObject) => string
  private readonly work: Table<Work>
  private readonly reconciler: Reconciler<Work>
  private readonly status: StatusWriter | undefined
  private readonly conditionType: string | false
  private readonly failures = new Map<string, { error: string; attempts: number }>()
  /** Uids whose cleanup succeeded but whose finalizer is not known to be removed: never cleaned twice. */
  private readonly cleaned = new Set<string>()
  private following: { ctrl: AbortController; done: Promise<void> } | undefined

  constructor(opts: FinalizerOptions) {
    if (typeof opts?.name !== 'string' || !QUALIFIED.test(opts.name)) {
      throw new ConfigError(`finalizer ${JSON.stringify(opts?.name)}: must be a domain-qualified name such as "example.com/cleanup"`)
    }
    if (typeof opts.cleanup !== 'function') throw new ConfigError(`finalizer "${opts.name}": cleanup must be a function`)
    const t = opts.cleanupTimeoutMs
    if (t !== undefined && !(Number.isFinite(t) && t >= 0))
      throw new ConfigError(`finalizer "${opts.name}": cleanupTimeoutMs must be a number of ms, 0 or more (got ${String(t)})`)
    if (!opts.cluster || !opts.db || !opts.table) throw new ConfigError(`finalizer "${opts.name}": cluster, db and table are required`)
    this.opts = opts
    this.name = opts.name
    this.key = opts.key ?? namespacedName
    this.conditionType = opts.condition ?? 'FinalizerCleanup'
    if (this.conditionType !== false)
      this.status = new StatusWriter({
        cluster: opts.cluster,
        fieldManager: opts.fieldManager ?? 'statewright-finalizer',
        ...(opts.fence ? { fence: opts.fence } : {}),
      })
    const statusIndex = newStatusIndex<Work>((w) => w.status)
    const byKey = defineIndex<Work, string>({ name: 'key', key: (w) => w.key, unique: true })
    this.work = new Table<Work>({
      name: `finalizer-${opts.name.replace(/[^A-Za-z0-9._-]/g, '_')}`.slice(0, 60),
      primary: byKey,
      indexes: [statusIndex],
    })
    opts.db.register(this.work)
    this.reconciler = new Reconciler<Work>({
      db: opts.db,
      // a work table: its rows are what is left to do, nothing outside drifts from them
      fullReconciliationIntervalMs: 0,

      table: this.work,
      statusIndex,
      getObjectStatus: (w) => w.status,
      setObjectStatus: (w, status) => ({ ...w, status }),
      ...(opts.retry ? { retry: opts.retry } : {}),
      operations: {
        update: (w, ctx) => this.act(w, ctx),
        delete: (w) => {
          this.failures.delete(w.key)
          this.cleaned.delete(w.uid)
        }, // the need is gone: nothing to undo
      },
    })
  }

  async start(): Promise<void> {
    if (this.following) return
    const ctrl = new AbortController()
    this.following = { ctrl, done: this.follow(ctrl.signal) }
    await this.reconciler.start()
  }

  async stop(): Promise<void> {
    const f = this.following
    if (!f) return
    this.following = undefined
    f.ctrl.abort(new StoppedError(`finalizer "${this.name}" stopped`))
    await f.done
    await this.reconciler.stop()
  }

  health(): FinalizerHealth {
    const retryAt = new Map(this.reconciler.failures().map((f) => [f.object.key, f.retryAt]))
    const failing = [...this.failures].map(([key, f]) => ({ key, ...f, ...(retryAt.has(key) ? { nextRetryAt: retryAt.get(key)! } : {}) }))
    const pending = this.work.count(this.opts.db.readTxn())
    const loop = this.reconciler.health()
    const level = !this.following ? 'stopped' : failing.length || loop.level === 'degraded' ? 'degraded' : 'ok'
    const message =
      level === 'stopped'
        ? 'stopped'
        : failing.length
          ? `${failing.length} failing: ${failing
              .slice(0, 3)
              .map((f) => `${f.key}: ${f.error} (attempt ${f.attempts})`)
              .join('; ')}`
          : loop.level === 'degraded'
            ? loop.message
            : `${pending} pending`
    return { level, message, ready: this.following !== undefined && loop.ready, pending, failing }
  }

  /** Objects that need us now (a finalizer to add, a cleanup to run). */
  pending(): number {
    return this.work.count(this.opts.db.readTxn())
  }

  /**
   * Resolves when no object needs us (every finalizer added, every cleanup done); a failing cleanup
   * keeps it waiting (it is retried; health() names it). Rejects when `signal` aborts or on stop().
   */
  async settled(signal?: AbortSignal): Promise<void> {
    const f = this.following
    if (!f) throw new StoppedError(`finalizer "${this.name}" is not running`)
    const s = signal ? AbortSignal.any([signal, f.ctrl.signal]) : f.ctrl.signal
    for (;;) {
      const [rows, watch] = this.work.allWatch(this.opts.db.readTxn())
      if (rows.first() === undefined) return
      await watch.wait(s)
    }
  }

  /** Follows the reflected table and keeps the work table equal to what the objects need. */
  private async follow(signal: AbortSignal): Promise<void> {
    const { db, table } = this.opts
    const changes = table.changes(db.readTxn())
    try {
      while (!signal.aborted) {
        const [batch, watch] = changes.next(db.readTxn())
        const seen = [...batch]
        if (seen.length) {
          const w = await db.writeTxn(this.work)
          for (const { object, deleted } of seen) this.derive(w, object, deleted)
          w.commit()
        }
        await watch.wait(signal).catch(() => undefined)
      }
    } finally {
      changes.close()
    }
  }

  private derive(w: WriteTxn, obj: KubeObject, deleted: boolean): void {
    const key = this.key(obj)
    const existing = this.work.get(w, this.work.primary.query(key))
    const action = deleted ? undefined : this.need(obj)
    if (!action) {
      if (existing) this.work.delete(w, existing)
      return
    }
    const uid = String(obj.metadata.uid ?? '')
    if (
      existing &&
      existing.uid === uid &&
      existing.action === action &&
      (existing.status.kind !== 'done' || existing.acted?.includes(String(obj.metadata.resourceVersion)))
    )
      return
    this.work.insert(w, { key, uid, action, status: statusPending() })
  }

  private need(obj: KubeObject): Action | undefined {
    const has = finalizersOf(obj).includes(this.name)
    if (obj.metadata.deletionTimestamp) return has ? 'cleanup' : undefined
    return has ? undefined : 'add'
  }

  /** Runs the cleanup under its own signal: aborted on stop, and failed past cleanupTimeoutMs. */
  private async boundedCleanup(obj: KubeObject, key: string, stop: AbortSignal, attempt: number): Promise<void> {
    const limitMs = this.opts.cleanupTimeoutMs ?? 60_000
    if (!(limitMs > 0)) return this.opts.cleanup(obj, { signal: stop, attempt })
    const abort = new AbortController()
    const onStop = () => abort.abort(stop.reason)
    stop.addEventListener('abort', onStop, { once: true })
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new CleanupError(`finalizer "${this.name}": cleanup of ${key} timed out after ${limitMs} ms`)
        abort.abort(err)
        reject(err)
      }, limitMs)
    })
    try {
      await Promise.race([Promise.resolve().then(() => this.opts.cleanup(obj, { signal: abort.signal, attempt })), timedOut])
    } finally {
      clearTimeout(timer)
      stop.removeEventListener('abort', onStop)
    }
  }

  private async act(w: Work, ctx: OpContext): Promise<void> {
    const obj = this.opts.table.get(ctx.txn, this.opts.table.primary.query(w.key))
    if (!obj || String(obj.metadata.uid ?? '') !== w.uid || this.need(obj) !== w.action) return
    const acted = [String(obj.metadata.resourceVersion)]
    if (w.action === 'add') {
      const patched = await this.patchFinalizers(obj, (f) => (f.includes(this.name) ? undefined : [...f, this.name]), ctx.signal)
      if (patched) acted.push(String(patched.metadata.resourceVersion))
      w.acted = acted
      return
    }
    const attempt = (this.failures.get(w.key)?.attempts ?? 0) + 1
    try {
      if (!this.cleaned.has(w.uid)) await this.boundedCleanup(obj, w.key, ctx.signal, attempt)
      this.cleaned.add(w.uid)
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err)
      this.failures.set(w.key, { error, attempts: attempt })
      let note = ''
      if (this.status && this.conditionType) {
        await this.status
          .apply(
            obj,
            {
              conditions: [
                {
                  type: this.conditionType,
                  status: 'False',
                  reason: 'CleanupFailed',
                  message: `finalizer ${this.name}, attempt ${attempt}: ${error}`,
                },
              ],
            },
            { ...this.kindOpt(), signal: ctx.signal },
          )
          .catch((e) => {
            note = `; the ${this.conditionType} condition could not be written: ${(e as Error).message}`
          })
      }
      this.opts.events?.warning(obj, 'CleanupFailed', `finalizer ${this.name}: ${error}`)
      this.opts.logger?.warn(
        { object: describe(obj), finalizer: this.name, attempt, err: error },
        'finalizer cleanup failed; will retry with backoff',
      )
      throw new CleanupError(`${describe(obj)}: cleanup for finalizer ${this.name} failed (attempt ${attempt}): ${error}${note}`)
    }
    let cur = obj
    // other finalizers may keep the object: do not leave a stale failure on it (we know of one from our
    // own record, since the reflected copy may not show our last condition write yet)
    if (
      this.status &&
      this.conditionType &&
      (this.failures.has(w.key) || findCondition(conditionsOf(obj), this.conditionType)?.status === 'False')
    ) {
      cur = await this.status.apply(
        obj,
        {
          conditions: [
            { type: this.conditionType, status: 'True', reason: 'CleanupSucceeded', message: `finalizer ${this.name}: cleanup done` },
          ],
        },
        { ...this.kindOpt(), signal: ctx.signal },
      )
      acted.push(String(cur.metadata.resourceVersion))
    }
    const patched = await this.patchFinalizers(
      cur,
      (f) => (f.includes(this.name) ? f.filter((x) => x !== this.name) : undefined),
      ctx.signal,
    )
    if (patched) acted.push(String(patched.metadata.resourceVersion))
    w.acted = acted
    if (this.failures.has(w.key))
      this.opts.events?.normal(obj, 'CleanupSucceeded', `finalizer ${this.name}: cleanup done after ${attempt} attempts`)
    this.failures.delete(w.key)
    this.opts.logger?.info({ object: describe(obj), finalizer: this.name, attempts: attempt }, 'finalizer cleanup done; finalizer removed')
  }

  private kindOpt(): { kind?: ResourceRef } {
    return this.opts.kind ? { kind: this.opts.kind } : {}
  }

  /**
   * Sets the whole list to `change(current)` (undefined: nothing to do), conditional on the version it
   * was computed from. A 409 means the object moved on (or the reflected copy lags behind our own
   * writes): read it again and recompute, a few times, before failing into the reconciler's backoff.
   */
  private async patchFinalizers(
    obj: KubeObject,
    change: (finalizers: string[]) => string[] | undefined,
    signal: AbortSignal,
  ): Promise<KubeObject | undefined> {
    const ref = this.opts.kind ?? (await resolveKind(this.opts.cluster, obj as KindRef))
    const path = objectPath(ref, String(obj.metadata.name), obj.metadata.namespace)
    const what = describe(obj)
    let cur = obj
    for (let attempt = 1; ; attempt++) {
      const next = change(finalizersOf(cur))
      if (next === undefined) return undefined
      try {
        return await this.opts.cluster.request({
          method: 'PATCH',
          path,
          contentType: 'application/merge-patch+json',
          what,
          signal,
          body: { metadata: { finalizers: next.length ? next : null, resourceVersion: cur.metadata.resourceVersion } },
          ...fenceOption(this.opts.fence),
        })
      } catch (err) {
        if (isNotFound(err)) return undefined // gone already: nothing left to finalize
        if (!isConflict(err) || attempt >= 3) throw err
      }
      try {
        cur = await this.opts.cluster.request({ path, what, signal })
      } catch (err) {
        if (isNotFound(err)) return undefined
        throw err
      }
      if (String(cur.metadata.uid) !== String(obj.metadata.uid)) return undefined // replaced: not ours to change
    }
  }
}

function finalizersOf(obj: KubeObject): string[] {
  const f = obj.metadata.finalizers
  return Array.isArray(f) ? (f as string[]) : []
}
