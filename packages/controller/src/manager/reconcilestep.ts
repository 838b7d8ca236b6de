// A reconcile step: one function per object of a primary kind returns the children to apply, the
// status to write and when to look again (controller-runtime's Reconcile with Owns, kopf's handlers),
// on the machinery `derive` uses.
// Invariants:
// - `fn` runs as a derivation's fn (only for objects a change touches, reading joins through ctx); its
//   outcome is one row per primary object in the step's results table. A second derivation puts the
//   rows' children in the Manager's desired table, so children are applied, pruned and repaired for
//   drift exactly as derive's outputs are.
// - A throwing `fn` keeps the object's previous children and status fields; its row holds the error,
//   so the object gets Ready=False (reason ReconcileError, the error as message), a Warning Event, a
//   retry with backoff (the Manager's `retry`) and degraded health. A later success clears all four.
// - Before fn's first success for an object in this process (a restart, a shard or leadership just
//   taken) its previous children are unknown: a throw leaves the row's `childrenKnown` false, and the
//   Manager's prune keeps every object that names it as owner (./pruneguard.ts); its status keeps the
//   fields the live object has.
// - Status is written by server-side apply on /status, as the Manager's field manager, only when the
//   live object's status differs from what the row wants (or the set of fields we own changed); a
//   round's writes go 16 at a time (the reconciler's eachEntry), each retried alone with backoff when it fails.
//   Conditions get the object's generation as observedGeneration, and status.observedGeneration is
//   the generation `fn` saw.
// - `requeueAfterMs` runs `fn` again for that object after the delay (the latest run's value wins; a
//   change runs it sooner). Nothing is requeued for an object that is gone. A TerminalError is not
//   retried (Ready=False, reason TerminalError) until the object or what it read changes.
// - fn is told why it runs (ctx.reason: created, updated, dependency, retry, requeue, resync), and
//   `onDeleted` gets the last state of a primary that was deleted.
import { isDeepStrictEqual } from 'node:util'
import { Reconciler, eachEntry, newStatusIndex, statusPending, type OpContext, type Status } from '@statewright/reconciler'
import {
  Table,
  backoffDelay,
  defineIndex,
  resolveRetry,
  type DB,
  type Key,
  type ReadTxn,
  type RetryOptions,
  type SpanContextLike,
  type Txn,
} from '@statewright/statedb'
import { describe, namespacedName, type DesiredObject, type EventRecorder, type KubeObject } from '@statewright/k8s'
import { InvalidObjectError, StoppedError, TerminalError } from '../errors.ts'
import { StatusWriter, conditionsOf, findCondition, setCondition, type ConditionInput } from '../conditions.ts'
import { Derivation } from '../derive/derivation.ts'
import type { DeriveContext } from '../derive/options.ts'

/** What a reconcile step's fn gets: why it runs, the snapshot, and tracked reads of joined tables (derive's context). */
export interface ReconcileContext extends DeriveContext {}
import type { Logger } from '@statewright/statedb'
import { withOwner } from '../owners.ts'
import { pendingApply, withCause, type Placed } from './desired.ts'
import type { Component, ComponentHealth } from './component.ts'
import { uidOf, type PruneSource, type UnsettledOwner } from './pruneguard.ts'
import { runCause } from './tracing.ts'

/** `outcome` with the run's span `cause` (traced only; a row's copies keep it). */
function caused(cause: SpanContextLike | undefined, outcome: ReconcileOutcome): ReconcileOutcome {
  return cause ? { ...outcome, cause } : outcome
}

/** A child: a KubeObject, or a typed model such as client-node's V1ConfigMap (metadata is required at run time). */
export type ChildObject = KubeObject | { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } }

/** What a reconcile function returns for one object. */
export interface ReconcileResult {
  /** The objects this object wants in the cluster (applied by server-side apply, pruned when gone). */
  children?: ChildObject | Placed | ReadonlyArray<ChildObject | Placed> | null
  /** Status fields to own (written on /status when they differ from the object's). */
  status?: Record<string, unknown>
  /** Conditions to own; without the ready condition's type, Ready=True (reason Reconciled) is added. */
  conditions?: ConditionInput[]
  /** Run again for this object after this many ms (a schedule, a periodic check). */
  requeueAfterMs?: number
}

/** One row of a step's results: what the last run of fn for a primary object produced. */
export interface ReconcileOutcome {
  /** namespace/name of the primary object. */
  readonly key: string
  readonly uid: string
  readonly generation: number | undefined
  readonly children: DesiredObject[]
  readonly fields: Record<string, unknown>
  readonly conditions: ConditionInput[]
  /** The last run's error (its previous children and fields are kept). */
  readonly error?: string
  /**
   * Whether `children` are what fn last wanted: false after a throw with no success for this object
   * since this process started (its children in the cluster are unknown, and kept from prune).
   */
  readonly childrenKnown: boolean
  /** Consecutive failed runs (0 after a success). */
  readonly attempts: number
  /** The status write's reconcile status. */
  readonly status: Status
  /** The span of the run that made it (traced only): the parent of its status write and Events. */
  readonly cause?: SpanContextLike
}

export interface ReconcileStepParts<T extends object> {
  name: string
  db: DB
  primary: Table<T>
  joins?: ReadonlyArray<Table<any>>
  fn: (obj: T, ctx: ReconcileContext) => ReconcileResult | undefined | void
  /** The last state of a primary object that was deleted (best effort, once; see DeriveOptions.onDeleted). */
  onDeleted?: (last: T) => void
  /** Children of the function's result as desired objects (placed, sharded, checked). */
  toDesired: (r: KubeObject | Placed | ReadonlyArray<KubeObject | Placed> | null | undefined, obj: T) => DesiredObject[] | undefined
  invalid: (d: DesiredObject) => string | undefined
  desired: Table<DesiredObject>
  readyCondition: string | false
  /** Which condition transitions are Events (undefined: the ready condition's). */
  conditionEvents: boolean | readonly string[] | undefined
  observedGeneration: boolean
  ownerReferences: boolean
  writer: StatusWriter
  events: EventRecorder
  retry: RetryOptions | undefined
  logger: Logger
  leaderOnly: boolean
  /** Each run of fn, for controller-runtime's reconcile metrics. */
  observe?: (result: 'success' | 'error' | 'requeue_after', seconds: number) => void
}

const byKey = defineIndex<ReconcileOutcome, string>({ name: 'key', key: (r) => r.key, unique: true })
const sameOutcome = (a: ReconcileOutcome, b: ReconcileOutcome) => {
  const { status: _a, cause: _c, ...x } = a
  const { status: _b, cause: _d, ...y } = b
  return isDeepStrictEqual(x, y)
}

export class ReconcileStep<T extends object = KubeObject> {
  readonly name: string
  /** One row per primary object: its children, status and error. */
  readonly results: Table<ReconcileOutcome>
  /** fn over the primary table, into `results`. */
  readonly derivation: Derivation<T, ReconcileOutcome>
  /** The results' children, into the Manager's desired table. */
  readonly children: Derivation<ReconcileOutcome, DesiredObject>
  /** The status writes' reconciler. */
  readonly statusWrites: Reconciler<ReconcileOutcome>
  readonly component: Component
  private readonly p: ReconcileStepParts<T>
  /** key -> when fn runs again for it, and why (requeueAfterMs, or a failed run's retry). */
  private readonly due = new Map<string, { at: number; why: 'requeue' | 'retry' }>()
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity
  /** key -> the status fields (and condition types) last applied for it, by uid, and the object the write returned. */
  private readonly owned = new Map<string, { uid: string; fields: string[]; written?: KubeObject }>()
  private running = false
  /** Status writes sent so far (waitForConvergence goes round again after one: its echo runs fn). */
  private statusWritesSent = 0

  /** @internal Made by Manager.reconcile(). */
  constructor(p: ReconcileStepParts<T>) {
    this.p = p
    this.name = p.name
    const statusIndex = newStatusIndex<ReconcileOutcome>((r) => r.status)
    this.results = new Table<ReconcileOutcome>({ name: `reconcile-${p.name}`, primary: byKey, indexes: [statusIndex] })
    p.db.register(this.results)
    this.derivation = new Derivation<T, ReconcileOutcome>({
      db: p.db,
      name: p.name,
      from: p.primary,
      ...(p.joins ? { joins: p.joins } : {}),
      to: this.results,
      logger: p.logger,
      fn: (obj, ctx) => this.run(obj, ctx),
      equals: sameOutcome,
      // expectations: the next run waits until the last run's child applies are answered
      hold: (keys, txn) => pendingApply(p.desired, this.childKeys(keys, txn), txn),
      ...(p.onDeleted ? { onDeleted: p.onDeleted } : {}),
    })
    this.children = new Derivation<ReconcileOutcome, DesiredObject>({
      db: p.db,
      name: `${p.name}-children`,
      from: this.results,
      to: p.desired,
      logger: p.logger,
      fn: (r) => r.children,
      validate: p.invalid,
      equals: (a, b) => a.cluster === b.cluster && isDeepStrictEqual(a.object, b.object),
    })
    this.statusWrites = new Reconciler<ReconcileOutcome>({
      name: `${p.name}-status`,
      // status writes: each row is written when it changes; the primary's own echo repairs drift
      fullReconciliationIntervalMs: 0,

      db: p.db,
      table: this.results,
      statusIndex,
      primaryKey: (r) => r.key,
      getObjectStatus: (r) => r.status,
      setObjectStatus: (r, status) => ({ ...r, status }),
      ...(p.retry ? { retry: p.retry } : {}),
      operations: {
        update: (r, ctx) => this.writeStatus(r, ctx),
        delete: (r) => this.forget(r),
      },
      // status writes go as applies do: a batch at a time, 16 concurrently (one at a time capped a
      // real API server's ~50 writes/s for the whole step)
      batchOperations: {
        updateBatch: (entries, ctx) => eachEntry(entries, (r) => this.writeStatus(r, ctx)),
        deleteBatch: (entries) => {
          for (const e of entries) this.forget(e.object)
        },
      },
      logger: p.logger,
    })
    this.component = {
      name: `reconcile ${p.name}`,
      leaderOnly: p.leaderOnly,
      start: async () => {
        this.running = true
        await this.statusWrites.start()
      },
      stop: async () => {
        this.running = false
        clearTimeout(this.timer)
        this.timer = undefined
        this.timerAt = Infinity
        await this.statusWrites.stop()
      },
      health: () => this.health(),
      idle: () => this.results.list(p.db.readTxn(), statusIndex.kind('pending')).first() === undefined,
      settled: async (signal) => {
        if (!this.running) throw new StoppedError(`reconcile step "${p.name}" is not running`)
        await this.statusWrites.waitForRevision(this.results.revision(p.db.readTxn()), { signal })
      },
      reconcilers: () => [this.statusWrites],
      writes: () => this.statusWritesSent,
    }
  }

  /** A primary object is gone: nothing is owned or due for it. */
  private forget(r: ReconcileOutcome): void {
    this.owned.delete(r.key)
    this.due.delete(r.key)
  }

  /** Objects whose last run failed, with their errors. */
  failing(): Array<{ key: string; error: string; attempts: number }> {
    const out: Array<{ key: string; error: string; attempts: number }> = []
    for (const r of this.results.all(this.p.db.readTxn()))
      if (r.error !== undefined) out.push({ key: r.key, error: r.error, attempts: r.attempts })
    return out
  }

  health(): ComponentHealth {
    const failing = this.failing()
    const w = this.statusWrites.health()
    const level = !this.running ? 'stopped' : failing.length || w.level === 'degraded' ? 'degraded' : 'ok'
    const message = failing.length
      ? `${failing.length} failing: ${failing
          .slice(0, 3)
          .map((f) => `${f.key}: ${f.error} (attempt ${f.attempts})`)
          .join('; ')}`
      : w.level === 'degraded'
        ? `status writes: ${w.message}`
        : `${this.results.count(this.p.db.readTxn())} objects`
    return { level, message, ready: this.running && w.ready, failing: failing.map((f) => ({ key: f.key, error: f.error })) }
  }

  // ---- one run of fn ----

  private run(typed: T, ctx: ReconcileContext): ReconcileOutcome | undefined {
    const p = this.p
    const obj = typed as unknown as KubeObject // a watched object always has metadata
    const key = namespacedName(obj)
    const uid = String(obj.metadata.uid ?? '')
    const generation = typeof obj.metadata.generation === 'number' ? obj.metadata.generation : undefined
    const prevRow = this.results.get(ctx.txn, byKey.query(key))
    const prev = prevRow?.uid === uid ? prevRow : undefined
    const readyType = p.readyCondition
    const t0 = performance.now()
    try {
      const result = p.fn(typed, ctx)
      const cause = runCause(result) // traced: the run's span, the parent of its applies, status write and Events
      const r = result ?? {}
      const children = p.toDesired(r.children as KubeObject | Placed | ReadonlyArray<KubeObject | Placed> | null | undefined, typed)
      if (children === undefined) return undefined // another replica's shard
      const owned = withCause(p.ownerReferences ? children.map((d) => this.owned_(d, obj)) : children, cause)
      for (const d of owned) {
        const why = p.invalid(d)
        if (why) throw new InvalidObjectError(`child refused: ${why}`)
      }
      const conditions = [...(r.conditions ?? [])]
      for (const c of conditions) setCondition([], c) // refuses a bad condition here, naming it
      if (readyType && !conditions.some((c) => c.type === readyType))
        conditions.push({ type: readyType, status: 'True', reason: 'Reconciled', message: '' })
      const after = r.requeueAfterMs
      if (after !== undefined && !(typeof after === 'number' && after >= 0 && Number.isFinite(after)))
        throw new InvalidObjectError(`requeueAfterMs must be a non-negative number of ms, not ${JSON.stringify(after)}`)
      this.schedule(key, after === undefined ? undefined : Date.now() + after, 'requeue')
      p.observe?.(after === undefined ? 'success' : 'requeue_after', (performance.now() - t0) / 1000)
      return caused(cause, {
        key,
        uid,
        generation,
        children: owned,
        fields: { ...(r.status ?? {}) },
        conditions,
        attempts: 0,
        childrenKnown: true,
        status: statusPending(),
      })
    } catch (err) {
      p.observe?.('error', (performance.now() - t0) / 1000)
      const error = (err as Error)?.message ?? String(err)
      const attempts = (prev?.attempts ?? 0) + 1
      const terminal = err instanceof TerminalError
      if (terminal) {
        this.schedule(key, undefined, 'retry') // runs again when the object or what it read changes
        p.logger.warn({ object: describe(obj), attempts, err: error }, 'reconcile failed (terminal: not retried until the object changes)')
      } else {
        const delay = backoffDelay(attempts, resolveRetry(p.retry))
        this.schedule(key, Date.now() + delay, 'retry')
        p.logger.warn({ object: describe(obj), attempts, retryInMs: Math.round(delay), err: error }, 'reconcile failed; will retry')
      }
      // no success yet in this process: what the object's status holds stands for the last run's
      const kept = prev ?? liveStatusOf(obj)
      const conditions = kept.conditions.filter((c) => c.type !== readyType)
      if (readyType)
        conditions.push({ type: readyType, status: 'False', reason: terminal ? 'TerminalError' : 'ReconcileError', message: error })
      return caused(runCause(err), {
        key,
        uid,
        generation: prev?.generation ?? generation,
        children: prev?.children ?? [],
        fields: kept.fields,
        conditions,
        error,
        attempts,
        childrenKnown: prev?.childrenKnown ?? false,
        status: statusPending(),
      })
    }
  }

  /** The desired-table keys of the children of the outcomes `keys` (for the expectations' hold). */
  private *childKeys(keys: readonly Key[], txn: Txn): Iterable<Key> {
    const desired = this.p.desired.primary
    for (const k of keys) for (const c of this.results.get(txn, byKey.query(k as string))?.children ?? []) yield desired.keyOf(c)
  }

  /** Primary objects whose children prune must keep: fn has not succeeded for them in this process. */
  /** @internal For the Manager's prune guard. */
  unsettledOwners(txn: ReadTxn = this.p.db.readTxn()): UnsettledOwner[] {
    const out: UnsettledOwner[] = []
    for (const r of this.results.all(txn)) if (!r.childrenKnown) out.push({ uid: r.uid || undefined, name: r.key })
    return out
  }

  /** The uids of the primary objects. */
  *ownerUids(txn: ReadTxn): Iterable<string> {
    for (const o of this.p.primary.all(txn)) {
      const uid = uidOf(o)
      if (uid) yield uid
    }
  }

  /** A child with the primary as its controller (when it can be: same namespace, same cluster). */
  private owned_(d: DesiredObject, owner: KubeObject): DesiredObject {
    const ns = d.object.metadata?.namespace
    if (d.cluster !== undefined || !owner.metadata.uid || (owner.metadata.namespace && ns !== owner.metadata.namespace)) return d
    return { ...d, object: withOwner(d.object, owner) }
  }

  // ---- requeue ----

  private schedule(key: string, at: number | undefined, why: 'requeue' | 'retry'): void {
    if (at === undefined) this.due.delete(key)
    else this.due.set(key, { at, why })
    if (at !== undefined && at < this.timerAt) this.arm(at)
  }

  private arm(at: number): void {
    clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(() => this.fire(), Math.max(1, Math.min(at - Date.now(), 2 ** 31 - 1)))
  }

  private fire(): void {
    this.timer = undefined
    this.timerAt = Infinity
    const now = Date.now()
    const keys = { requeue: new Set<string>(), retry: new Set<string>() }
    let next = Infinity
    for (const [k, d] of this.due) {
      if (d.at <= now + 1) {
        keys[d.why].add(k)
        this.due.delete(k)
      } else next = Math.min(next, d.at)
    }
    if (next !== Infinity) this.arm(next)
    if (!this.derivation.running) return
    for (const why of ['retry', 'requeue'] as const)
      if (keys[why].size) void this.derivation.rederive((o) => keys[why].has(namespacedName(o as KubeObject)), why)
  }

  // ---- status ----

  private async writeStatus(r: ReconcileOutcome, ctx: OpContext): Promise<void> {
    const p = this.p
    const live = p.primary.get(ctx.txn, p.primary.primary.query(r.key) as never) as KubeObject | undefined
    if (!live || String(live.metadata.uid ?? '') !== r.uid) return // gone, or replaced by another object
    const conditions = r.conditions.map((c) =>
      c.observedGeneration === undefined && r.generation !== undefined ? { ...c, observedGeneration: r.generation } : c,
    )
    const fields: Record<string, unknown> = { ...r.fields }
    if (p.observedGeneration && r.generation !== undefined && !('observedGeneration' in fields)) fields.observedGeneration = r.generation
    // what the object holds: the newer of the cache's copy and what our last write returned (the
    // cache may not have seen that write yet: a transition is not recorded twice)
    const before = this.owned.get(r.key)
    const held = before?.uid === r.uid && before.written && newer(before.written, live) ? before.written : live
    const current = conditionsOf(held)
    const liveStatus = (held.status ?? {}) as Record<string, unknown>
    const ownedNow = [...Object.keys(fields), ...conditions.map((c) => `condition:${c.type}`)].sort()
    // nothing to own, nothing owned before: no write (a kind without a status subresource, readyCondition false)
    if (ownedNow.length === 0 && (!before || before.fields.length === 0)) return
    const changed =
      !before ||
      before.uid !== r.uid ||
      !isDeepStrictEqual(before.fields, ownedNow) ||
      Object.entries(fields).some(([k, v]) => !isDeepStrictEqual(liveStatus[k], v)) ||
      conditions.some((c) => setCondition(current, c) !== current)
    const cause = r.cause // the run's span, when traced
    if (r.error !== undefined) p.events.warning(live, 'ReconcileError', r.error, cause)
    for (const c of conditions) {
      if (!this.transitionEvents(c.type)) continue
      const was = findCondition(current, c.type)
      // a change of status, or a condition that appears True; the ready condition's errors have their own Event
      if (was ? was.status === c.status : c.status !== 'True') continue
      if (r.error !== undefined && c.type === p.readyCondition) continue
      const message = `${c.type} is ${c.status}${c.message ? `: ${c.message}` : ''}`
      if (c.status === 'False' && c.type === p.readyCondition) p.events.warning(live, c.reason, message, cause)
      else p.events.normal(live, c.reason, message, cause)
    }
    if (!changed) return
    this.statusWritesSent++
    const written = await p.writer.apply(live, { ...fields, conditions }, { signal: ctx.signal, cause })
    this.owned.set(r.key, { uid: r.uid, fields: ownedNow, written })
  }

  /** Whether a transition of this condition type is an Event (conditionEvents). */
  private transitionEvents(type: string): boolean {
    const ev = this.p.conditionEvents
    if (ev === undefined) return type === this.p.readyCondition
    return typeof ev === 'boolean' ? ev : ev.includes(type)
  }
}

/** The status fields and conditions an object holds (what a failed run with no earlier success keeps). */
function liveStatusOf(obj: KubeObject): { fields: Record<string, unknown>; conditions: ConditionInput[] } {
  const { conditions: _c, ...fields } = (obj.status ?? {}) as Record<string, unknown>
  const conditions: ConditionInput[] = []
  for (const { type, status, reason, message, observedGeneration } of conditionsOf(obj)) {
    const c = { type, status, reason, message, ...(observedGeneration !== undefined ? { observedGeneration } : {}) }
    try {
      setCondition([], c) // one another writer left malformed is not ours to rewrite
      conditions.push(c)
    } catch {}
  }
  return { fields, conditions }
}

/** Whether `a` is a newer version of the object than `b` (resourceVersions compared as numbers when they are). */
function newer(a: KubeObject, b: KubeObject): boolean {
  const x = a.metadata.resourceVersion
  const y = b.metadata.resourceVersion
  if (x === undefined || y === undefined || x === y) return false
  return /^\d+$/.test(x) && /^\d+$/.test(y) ? BigInt(x) > BigInt(y) : false
}
