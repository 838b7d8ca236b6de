// Kubernetes Events (core/v1) about the objects a controller reconciles, as client-go's recorder does:
// - aggregation: an event identical to a recent one ({involved object, type, reason, message}) is
//   not a new Event but a higher `count` and a later `lastTimestamp` on the existing one (merge
//   PATCH); an Event the server no longer has (expired) is created again;
// - rate limiting: a token bucket per involved object, `{ qps, burst }` (the reconciler's
//   RateLimitOptions; default burst 25, qps 1/300: one token per 5 minutes,
//   like client-go's spam filter). A new event without a token is dropped; a repeat without a token
//   is still counted and its count is written when a token comes (one timer for the recorder).
//   This is a counter per object, not a limiter: it decides to drop or to aggregate and never
//   queues work, which is what bottleneck (a scheduler of jobs, one timer per limiter) would do;
//   thousands of objects share one timer here;
// - recording never throws and never blocks the caller: writes are queued, one at a time per Event;
//   flush() waits for them, close() stops the timer and waits for what is in flight;
// - traced (the cluster's tracer), each write is a span `k8s.event` whose parent is the `cause` of its
//   latest occurrence (the run that recorded it), so a run's Events are in its trace.
import { isNotFound } from './api-error.ts'
import type { Cluster } from './cluster.ts'

export type EventType = 'Normal' | 'Warning'

import { checkRateLimit, type RateLimitOptions } from '@statewright/reconciler'
import type { EventSink, InvolvedObject } from '@statewright/primary'
import { inSpan, logTo, type Logger, type SpanContextLike } from '@statewright/statedb'

/** `qps` and `burst` (the shared `RateLimitOptions`) size the token bucket of each involved object. */
export interface EventRecorderOptions extends Partial<RateLimitOptions> {
  cluster: Cluster
  /** source.component and reportingComponent, e.g. "widget-controller". */
  component: string
  /** source.host and reportingInstance (default: $HOSTNAME or the component). */
  instance?: string
  /** Tokens per involved object (default 25). */
  burst?: number
  /** Tokens back per second per involved object (default 1/300: one every 5 minutes). */
  qps?: number
  /** An identical event within this window adds to the count (default 10 minutes). */
  aggregateWindowMs?: number
  /** Events remembered for aggregation (LRU, default 4096). */
  cacheSize?: number
  /** Namespace of Events about cluster-scoped objects (default "default"). */
  defaultNamespace?: string
  /** Logs every Event that could not be written at warn, with `err`, the cluster, the involved object and the reason. */
  logger?: Logger
}

export interface EventRecorderStats {
  /** Events created (POST). */
  created: number
  /** Count updates written (PATCH). */
  updated: number
  /** Occurrences counted into an existing Event. */
  aggregated: number
  /** New events dropped by the rate limit. */
  dropped: number
  errors: number
}

interface Entry {
  key: string
  objKey: string
  namespace: string
  /** The Event's name on the server (undefined until created). */
  name: string | undefined
  involved: Record<string, unknown>
  type: EventType
  reason: string
  message: string
  count: number
  /** The count the server has. */
  written: number
  first: number
  last: number
  busy: Promise<void> | undefined
  /** The span of the latest occurrence's run (traced only). */
  cause: SpanContextLike | undefined
}

interface Bucket {
  tokens: number
  at: number
}

/** Kubernetes Time: RFC 3339, seconds precision. */
function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

export class EventRecorder implements EventSink {
  private readonly options: Required<Omit<EventRecorderOptions, 'logger' | 'instance' | 'qps'>> & {
    instance: string
    logger?: Logger
    refillMs: number
  }
  private readonly entries = new Map<string, Entry>()
  private readonly buckets = new Map<string, Bucket>()
  private readonly dirty = new Set<Entry>()
  private timer: NodeJS.Timeout | undefined
  private readonly inflight = new Set<Promise<void>>()
  private closed = false
  private seq = 0
  readonly stats: EventRecorderStats = { created: 0, updated: 0, aggregated: 0, dropped: 0, errors: 0 }

  constructor(o: EventRecorderOptions) {
    this.options = {
      cluster: o.cluster,
      component: o.component,
      instance: o.instance ?? process.env.HOSTNAME ?? o.component,
      burst: o.burst ?? 25,
      // one token back every 1000/qps ms
      refillMs: 1000 / checkRateLimit({ qps: o.qps ?? 1 / 300, burst: o.burst ?? 25 }, 'EventRecorder').qps,
      aggregateWindowMs: o.aggregateWindowMs ?? 600_000,
      cacheSize: o.cacheSize ?? 4096,
      defaultNamespace: o.defaultNamespace ?? 'default',
      ...(o.logger ? { logger: o.logger } : {}),
    }
  }

  normal(obj: InvolvedObject, reason: string, message: string, cause?: SpanContextLike): void {
    this.event(obj, 'Normal', reason, message, cause)
  }

  warning(obj: InvolvedObject, reason: string, message: string, cause?: SpanContextLike): void {
    this.event(obj, 'Warning', reason, message, cause)
  }

  /**
   * Records an event about `obj`. Returns at once; the write happens in the background. `cause`: the
   * span of the run it is about (its write's span is then that span's child).
   */
  event(obj: InvolvedObject, type: EventType, reason: string, message: string, cause?: SpanContextLike): void {
    if (this.closed) return
    const m = obj.metadata ?? {}
    const objKey = m.uid ? `uid:${m.uid}` : `${obj.apiVersion ?? ''}/${obj.kind ?? ''}/${m.namespace ?? ''}/${m.name ?? ''}`
    const key = `${objKey}\u0000${type}\u0000${reason}\u0000${message}`
    const now = Date.now()
    let e = this.entries.get(key)
    if (e && now - e.last > this.options.aggregateWindowMs) {
      this.entries.delete(key)
      e = undefined
    }
    if (e) {
      // LRU: move to the end
      this.entries.delete(key)
      this.entries.set(key, e)
      e.count++
      e.last = now
      if (cause) e.cause = cause
      this.stats.aggregated++
      this.schedule(e)
      return
    }
    if (!this.take(objKey, now)) {
      this.stats.dropped++
      return
    }
    e = {
      key,
      objKey,
      namespace: m.namespace || this.options.defaultNamespace,
      name: undefined,
      involved: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resourceVersion: m.resourceVersion,
      },
      type,
      reason,
      message,
      count: 1,
      written: 0,
      first: now,
      last: now,
      busy: undefined,
      cause,
    }
    this.entries.set(key, e)
    while (this.entries.size > this.options.cacheSize) this.entries.delete(this.entries.keys().next().value!)
    this.write(e, true)
  }

  /** Resolves when every write started so far (and those it queued) is done. */
  async flush(): Promise<void> {
    while (this.inflight.size) await Promise.all([...this.inflight])
  }

  /** Stops the refill timer and waits for writes in flight; later events are ignored. */
  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    this.timer = undefined
    this.dirty.clear()
    await this.flush()
  }

  /** Events remembered for aggregation: name, count and whether the server has the latest count. */
  cached(): Array<{ name: string | undefined; reason: string; message: string; count: number; written: number }> {
    return [...this.entries.values()].map((e) => ({
      name: e.name,
      reason: e.reason,
      message: e.message,
      count: e.count,
      written: e.written,
    }))
  }

  // ---- rate limit ----

  private bucket(objKey: string, now: number): Bucket {
    let b = this.buckets.get(objKey)
    if (!b) {
      b = { tokens: this.options.burst, at: now }
      this.buckets.set(objKey, b)
      if (this.buckets.size > this.options.cacheSize) this.buckets.delete(this.buckets.keys().next().value!)
      return b
    }
    const refill = Math.floor((now - b.at) / this.options.refillMs)
    if (refill > 0) {
      b.tokens = Math.min(this.options.burst, b.tokens + refill)
      b.at = b.tokens === this.options.burst ? now : b.at + refill * this.options.refillMs
    }
    return b
  }

  private take(objKey: string, now: number): boolean {
    const b = this.bucket(objKey, now)
    if (b.tokens <= 0) return false
    if (b.tokens === this.options.burst) b.at = now
    b.tokens--
    return true
  }

  /** A repeat: write now if a token is available, else when one comes. */
  private schedule(e: Entry): void {
    if (e.busy || e.name === undefined) {
      this.dirty.add(e) // written after the current write
      return
    }
    if (this.take(e.objKey, Date.now())) this.write(e, false)
    else {
      this.dirty.add(e)
      this.arm()
    }
  }

  private arm(): void {
    if (this.timer || this.closed) return
    const now = Date.now()
    let next = Infinity
    for (const e of this.dirty) {
      if (e.busy || e.name === undefined) continue // handled when its write ends
      const b = this.bucket(e.objKey, now)
      next = Math.min(next, b.tokens > 0 ? now : b.at + this.options.refillMs)
    }
    if (next === Infinity) return
    this.timer = setTimeout(
      () => {
        this.timer = undefined
        for (const e of [...this.dirty]) {
          if (e.busy || e.name === undefined) continue
          this.dirty.delete(e)
          if (e.written < e.count) this.schedule(e)
        }
        this.arm()
      },
      Math.max(1, next - now),
    )
  }

  // ---- writes ----

  private write(e: Entry, create: boolean): void {
    const tracer = this.options.cluster.tracer
    const send = () => (create || e.name === undefined ? this.create(e) : this.update(e))
    const p = (async () => {
      try {
        if (!tracer) await send()
        else
          await inSpan(tracer, 'k8s.event', send, {
            parent: e.cause,
            attributes: { 'k8s.event.reason': e.reason, 'k8s.event.type': e.type },
          })
      } catch (err) {
        this.stats.errors++
        logTo(
          this.options.logger,
          'warn',
          { err, cluster: this.options.cluster.name, object: e.objKey, reason: e.reason },
          'event not recorded',
        )
        if (e.name === undefined) {
          // never created: forget it, the next occurrence is a new event
          if (this.entries.get(e.key) === e) this.entries.delete(e.key)
          this.dirty.delete(e)
        }
      }
    })()
    e.busy = p
    this.inflight.add(p)
    void p.finally(() => {
      this.inflight.delete(p)
      e.busy = undefined
      if (this.closed || !this.dirty.has(e)) return
      this.dirty.delete(e)
      if (e.name !== undefined && e.written < e.count) this.schedule(e)
    })
  }

  private async create(e: Entry): Promise<void> {
    const count = e.count
    const name = `${String(e.involved.name ?? 'object')}.${(Date.now() * 1000 + (this.seq++ % 1000)).toString(16)}`
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: e.namespace },
      involvedObject: Object.fromEntries(Object.entries(e.involved).filter(([, v]) => v !== undefined)),
      type: e.type,
      reason: e.reason,
      message: e.message,
      count,
      firstTimestamp: kubeTime(e.first),
      lastTimestamp: kubeTime(e.last),
      source: { component: this.options.component, host: this.options.instance },
      reportingComponent: this.options.component,
      reportingInstance: this.options.instance,
    }
    await this.options.cluster.request({
      method: 'POST',
      fence: null, // an Event is not a write of the term's work
      path: `/api/v1/namespaces/${encodeURIComponent(e.namespace)}/events`,
      body,
      what: `Event ${e.namespace}/${name}`,
    })
    e.name = name
    e.written = count
    this.stats.created++
  }

  private async update(e: Entry): Promise<void> {
    const count = e.count
    try {
      await this.options.cluster.request({
        method: 'PATCH',
        fence: null, // an Event is not a write of the term's work
        path: `/api/v1/namespaces/${encodeURIComponent(e.namespace)}/events/${encodeURIComponent(e.name!)}`,
        body: { count, lastTimestamp: kubeTime(e.last) },
        contentType: 'application/merge-patch+json',
        what: `Event ${e.namespace}/${e.name}`,
      })
      e.written = Math.max(e.written, count)
      this.stats.updated++
    } catch (err) {
      if (!isNotFound(err)) throw err
      await this.create(e) // expired on the server: a new Event with the whole count
    }
  }
}

export interface ReconcileEventsOptions {
  /** Reason of failure events (Warning), default "ReconcileFailed". */
  failedReason?: string
  /** Reason of the event after a failed object reconciled again (Normal), default "Reconciled". */
  recoveredReason?: string
}

/**
 * Events for reconcile failures and recoveries: a Warning per failure (identical ones aggregate into
 * one Event with a count), one Normal event when an object that failed reconciles again.
 */
export class ReconcileEvents {
  private readonly failing = new Map<string, number>()
  private readonly failedReason: string
  private readonly recoveredReason: string

  constructor(
    readonly recorder: EventRecorder,
    o: ReconcileEventsOptions = {},
  ) {
    this.failedReason = o.failedReason ?? 'ReconcileFailed'
    this.recoveredReason = o.recoveredReason ?? 'Reconciled'
  }

  private keyOf(obj: InvolvedObject): string {
    const m = obj.metadata ?? {}
    return `${obj.apiVersion ?? ''}/${obj.kind ?? ''}/${m.namespace ?? ''}/${m.name ?? ''}`
  }

  failed(obj: InvolvedObject, err: unknown): void {
    const k = this.keyOf(obj)
    this.failing.set(k, (this.failing.get(k) ?? 0) + 1)
    const msg = err instanceof Error ? err.message : String(err)
    this.recorder.warning(obj, this.failedReason, msg)
  }

  succeeded(obj: InvolvedObject): void {
    const k = this.keyOf(obj)
    const n = this.failing.get(k)
    if (n === undefined) return
    this.failing.delete(k)
    this.recorder.normal(obj, this.recoveredReason, `reconciled after ${n} failed attempt${n === 1 ? '' : 's'}`)
  }

  /** Forget an object (deleted). */
  forget(obj: InvolvedObject): void {
    this.failing.delete(this.keyOf(obj))
  }
}
