// The lock over one Lease (coordination.k8s.io/v1): reading, acquiring, renewing and releasing it
// with optimistic concurrency. The record it writes is ./lease-record.ts, the term a holder acts
// within ./lease-term.ts; the election loop built on it is ./leader.ts, which states the protocol's
// invariants.
import { ConfigError } from './errors.ts'
import { isConflict, isNotFound } from './api-error.ts'
import type { Cluster } from './cluster.ts'
import { LEASE_DURATION_ANNOTATION, leaseDurationMsOf, leasePath, microTime, type LeaseObject, type LeaseSpec } from './lease-record.ts'
import { wallNow } from './wallclock.ts'

export { wallNow }

export interface LeaseLockOptions {
  cluster: Cluster
  namespace: string
  /** The Lease's name. */
  name: string
  /** This candidate's identity (unique per process: e.g. hostname + random suffix). */
  identity: string
  /** Default 15 000 ms. */
  leaseDurationMs?: number
  /** Default 10 000 ms; must be below leaseDurationMs. */
  renewDeadlineMs?: number
  /** Labels put on the Lease (on create and every write). */
  labels?: Record<string, string>
  /** Request timeout, ms (default renewDeadlineMs). */
  requestTimeoutMs?: number
}

export type AttemptResult =
  /** A new term began. */
  | 'acquired'
  /** The current term was extended. */
  | 'renewed'
  /** Another candidate holds a valid lease (or won the race). */
  | 'held'
  /** We were holding it, but the Lease now names someone else. */
  | 'lost'

/** The term this candidate holds: the Lease's resourceVersion, transitions, when it was acquired, and until when it is valid (wall ms). */
export interface LeaseHolding {
  rv: string
  transitions: number
  acquireTime: string
  validUntil: number
}

/**
 * One Lease as seen by one candidate: observation of the record (local time of the last change),
 * acquire/renew with optimistic concurrency, release. No loop, no timer: LeaderElector and
 * ShardedLeases drive it.
 */
export class LeaseLock {
  readonly name: string
  readonly namespace: string
  readonly identity: string
  readonly leaseDurationMs: number
  readonly renewDeadlineMs: number
  private readonly cluster: Cluster
  private readonly labels: Record<string, string> | undefined
  private readonly timeoutMs: number
  private observed: { key: string; at: number; lease: LeaseObject } | undefined
  private holding: LeaseHolding | undefined
  /**
   * An acquiring write whose answer never came (aborted, timed out, the connection lost): the server
   * may have carried it out, so the Lease may name us though we do not know it. release() reads it.
   */
  private unsure = false

  constructor(o: LeaseLockOptions) {
    this.cluster = o.cluster
    this.namespace = o.namespace
    this.name = o.name
    this.identity = o.identity
    this.leaseDurationMs = o.leaseDurationMs ?? 15_000
    this.renewDeadlineMs = o.renewDeadlineMs ?? 10_000
    this.labels = o.labels
    this.timeoutMs = o.requestTimeoutMs ?? this.renewDeadlineMs
    if (!o.identity) throw new ConfigError('lease: identity must not be empty')
    if (!(this.renewDeadlineMs < this.leaseDurationMs)) {
      throw new ConfigError(
        `lease ${o.name}: renewDeadlineMs (${this.renewDeadlineMs}) must be below leaseDurationMs (${this.leaseDurationMs})`,
      )
    }
  }

  /** The holder of the last observed record ('' when released, undefined before any read). */
  observedHolder(): string | undefined {
    return this.observed?.lease.spec.holderIdentity
  }

  /** The last observed Lease and when (wallNow) its record last changed. */
  observedLease(): { lease: LeaseObject; changedAt: number } | undefined {
    return this.observed ? { lease: this.observed.lease, changedAt: this.observed.at } : undefined
  }

  isHolding(): boolean {
    return this.holding !== undefined && wallNow() < this.holding.validUntil
  }

  holdingState(): Readonly<LeaseHolding> | undefined {
    return this.holding
  }

  /** Forget the current holding (the term ended locally); the record may still name us. */
  drop(): void {
    this.holding = undefined
  }

  /** Feeds a Lease read elsewhere (a list) into the observation. */
  observe(lease: LeaseObject, at = wallNow()): void {
    const s = lease.spec ?? {}
    const key = `${s.holderIdentity ?? ''}|${s.renewTime ?? ''}|${s.acquireTime ?? ''}|${s.leaseTransitions ?? 0}|${s.leaseDurationSeconds ?? ''}|${lease.metadata.resourceVersion ?? ''}`
    if (!this.observed || this.observed.key !== key) this.observed = { key, at, lease }
    else this.observed.lease = lease
  }

  /** The observed record is held by someone else and has not expired. */
  heldByOther(now = wallNow()): boolean {
    const o = this.observed
    if (!o) return false
    const h = o.lease.spec.holderIdentity
    if (!h || h === this.identity) return false
    return o.at + leaseDurationMsOf(o.lease) > now
  }

  private body(spec: LeaseSpec, rv?: string): LeaseObject {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.name,
        namespace: this.namespace,
        ...(rv ? { resourceVersion: rv } : {}),
        ...(this.labels ? { labels: this.labels } : {}),
        annotations: { [LEASE_DURATION_ANNOTATION]: String(this.leaseDurationMs) },
      },
      spec,
    }
  }

  private spec(transitions: number, acquireTime: string, now: string, holder = this.identity): LeaseSpec {
    return {
      holderIdentity: holder,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.leaseDurationMs / 1000)),
      acquireTime,
      renewTime: now,
      leaseTransitions: transitions,
    }
  }

  /**
   * One attempt to acquire or renew (client-go's tryAcquireOrRenew). Throws on API errors (the
   * caller retries); a 409 is not an error but 'held' (or 'lost').
   */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<AttemptResult> {
    const sent = wallNow()
    const h = this.holding
    if (h) {
      // Fast path: we hold it; a PUT with our resourceVersion succeeds only if nobody wrote since.
      try {
        const res = await this.put(this.spec(h.transitions, h.acquireTime, microTime(sent)), h.rv, signal)
        if (this.holding !== h) return 'lost' // dropped meanwhile
        this.observe(res)
        h.rv = String(res.metadata.resourceVersion)
        h.validUntil = sent + this.renewDeadlineMs
        return 'renewed'
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err
      }
    }
    let cur: LeaseObject
    try {
      cur = await this.cluster.request<LeaseObject>({
        path: leasePath(this.namespace, this.name),
        signal,
        timeoutMs: this.timeoutMs,
        what: `Lease ${this.namespace}/${this.name}`,
      })
    } catch (err) {
      if (!isNotFound(err)) throw err
      if (h) {
        this.holding = undefined
        return 'lost'
      }
      const at = microTime(sent)
      try {
        const res = await this.cluster.request<LeaseObject>({
          method: 'POST',
          fence: null, // a lease's own writes are not fenced by a term
          path: leasePath(this.namespace),
          body: this.body(this.spec(0, at, at)),
          signal,
          timeoutMs: this.timeoutMs,
          what: `Lease ${this.namespace}/${this.name}`,
        })
        this.observe(res)
        this.holding = {
          rv: String(res.metadata.resourceVersion),
          transitions: 0,
          acquireTime: at,
          validUntil: sent + this.renewDeadlineMs,
        }
        this.unsure = false
        return 'acquired'
      } catch (e) {
        if (isConflict(e)) return 'held' // created by someone else first
        this.unsure = true
        throw e
      }
    }
    const readAt = wallNow()
    this.observe(cur, readAt)
    const spec = cur.spec ?? {}
    const holder = spec.holderIdentity ?? ''
    const rv = String(cur.metadata.resourceVersion)
    if (h && holder !== this.identity) {
      this.holding = undefined
      return 'lost'
    }
    if (!h && this.heldByOther(readAt)) return 'held'
    const put = wallNow()
    const now = microTime(put)
    const renewing = h !== undefined // holder is us and we hold it
    const transitions = renewing ? h.transitions : (spec.leaseTransitions ?? 0) + 1
    const acquireTime = renewing ? h.acquireTime : now
    try {
      const res = await this.put(this.spec(transitions, acquireTime, now), rv, signal)
      this.observe(res)
      if (renewing) {
        if (this.holding !== h) return 'lost'
        h.rv = String(res.metadata.resourceVersion)
        h.validUntil = put + this.renewDeadlineMs
        return 'renewed'
      }
      this.holding = { rv: String(res.metadata.resourceVersion), transitions, acquireTime, validUntil: put + this.renewDeadlineMs }
      this.unsure = false
      return 'acquired'
    } catch (err) {
      if (!isConflict(err)) {
        if (!renewing) this.unsure = true
        throw err
      }
      if (renewing) {
        this.holding = undefined
        return 'lost'
      }
      return 'held'
    }
  }

  /** The Lease as we hold it, when the server's copy names us (undefined otherwise, or when unreadable). */
  private async heldOnServer(signal?: AbortSignal): Promise<LeaseHolding | undefined> {
    try {
      const cur = await this.cluster.request<LeaseObject>({ path: leasePath(this.namespace, this.name), signal, timeoutMs: this.timeoutMs })
      this.observe(cur)
      if (cur.spec?.holderIdentity !== this.identity) return undefined
      return { rv: String(cur.metadata.resourceVersion), transitions: cur.spec.leaseTransitions ?? 0, acquireTime: '', validUntil: 0 }
    } catch {
      return undefined
    }
  }

  private put(spec: LeaseSpec, rv: string, signal?: AbortSignal): Promise<LeaseObject> {
    return this.cluster.request<LeaseObject>({
      method: 'PUT',
      fence: null, // a lease's own writes are not fenced by a term
      path: leasePath(this.namespace, this.name),
      body: this.body(spec, rv),
      signal,
      timeoutMs: this.timeoutMs,
      what: `Lease ${this.namespace}/${this.name}`,
    })
  }

  /**
   * Releases the lease if we hold it: clears holderIdentity (keeping leaseTransitions) so that the
   * next candidate takes it at once. Call after the term's work has stopped. Never throws.
   */
  async release(signal?: AbortSignal): Promise<boolean> {
    let h = this.holding
    this.holding = undefined
    // an acquiring write whose answer never came may have made the Lease ours: read it to know
    if (!h && this.unsure) h = await this.heldOnServer(signal)
    this.unsure = false
    if (!h) return false
    let rv = h.rv
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = microTime()
      const spec: LeaseSpec = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: h.transitions,
      }
      try {
        const res = await this.cluster.request<LeaseObject>({
          method: 'PUT',
          fence: null, // a lease's own writes are not fenced by a term
          path: leasePath(this.namespace, this.name),
          body: this.body(spec, rv),
          signal,
          timeoutMs: this.timeoutMs,
          what: `release of Lease ${this.namespace}/${this.name}`,
        })
        this.observe(res)
        return true
      } catch (err) {
        if (!isConflict(err)) return false // it expires by itself
      }
      // A conflict: a renewal we gave up on (aborted) may have landed after all. Still ours, same term?
      try {
        const cur = await this.cluster.request<LeaseObject>({
          path: leasePath(this.namespace, this.name),
          signal,
          timeoutMs: this.timeoutMs,
        })
        this.observe(cur)
        if (cur.spec?.holderIdentity !== this.identity || (cur.spec.leaseTransitions ?? 0) !== h.transitions) return false
        rv = String(cur.metadata.resourceVersion)
      } catch {
        return false
      }
    }
    return false
  }
}
