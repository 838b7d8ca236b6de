// Lease-based leader election (coordination.k8s.io/v1 Leases) with client-go's semantics:
// - a candidate GETs the Lease; it may take it when nobody holds it (holderIdentity empty: released)
//   or when the record has not changed for the holder's lease duration, as observed on the local
//   clock (server timestamps are never compared with local time, so clock skew does not matter);
// - every write is a PUT carrying the resourceVersion that was read (optimistic concurrency): of two
//   candidates, one wins and the other gets 409 Conflict;
// - the leader renews every retryPeriod; it is the leader until `renewDeadline` after it *sent* its
//   last successful renewal. A candidate can take the lease only `leaseDuration` after it observed
//   that renewal (which the server wrote after it was sent), so with renewDeadline < leaseDuration two
//   leaders never act at once, whatever the latencies; `isLeader()` checks the deadline synchronously;
// - a clean stop ends the term (callbacks first), then releases the Lease by clearing holderIdentity
//   so that another candidate takes over at once;
// - every term gets a fencing token: the Lease's leaseTransitions, incremented by each acquisition
//   (also when an identity acquires a Lease whose record still names it from an earlier term,
//   a small departure from client-go that keeps the token strictly increasing per term).
// Timestamps are written as MicroTime (exactly six fractional digits), as a real server requires.
// Lease durations below one second (tests) are kept in an annotation: leaseDurationSeconds is an integer.
import { setTimeout as sleep } from 'node:timers/promises'
import { isConflict, isNotFound, type Cluster } from './cluster.ts'

export const LEASE_DURATION_ANNOTATION = 'coordination.statewright.dev/lease-duration-ms'

/** The spec of a coordination.k8s.io/v1 Lease. */
export interface LeaseSpec {
  holderIdentity?: string
  leaseDurationSeconds?: number
  acquireTime?: string
  renewTime?: string
  leaseTransitions?: number
}

export interface LeaseObject {
  apiVersion: 'coordination.k8s.io/v1'
  kind: 'Lease'
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string>; [k: string]: unknown }
  spec: LeaseSpec
}

/** Wall-clock milliseconds with sub-millisecond precision, monotonic within the process. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now()
}

/** A Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits. */
export function microTime(ms: number = wallNow()): string {
  const whole = Math.floor(ms)
  const micros = Math.min(999, Math.floor((ms - whole) * 1000))
  const iso = new Date(whole).toISOString() // 2026-11-21T10:24:00.123Z
  return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`
}

export function leasePath(namespace: string, name?: string): string {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`
}

/** The lease duration a Lease's holder declared, ms. */
export function leaseDurationMsOf(lease: LeaseObject): number {
  const ann = Number(lease.metadata.annotations?.[LEASE_DURATION_ANNOTATION])
  if (Number.isFinite(ann) && ann > 0) return ann
  return Math.max(1, lease.spec.leaseDurationSeconds ?? 15) * 1000
}

/** One term of leadership (of a lease): what a leader needs to act safely. */
export interface LeaseTerm {
  /** The Lease's name. */
  readonly lease: string
  readonly identity: string
  /** The fencing token: the Lease's leaseTransitions for this term (strictly increasing per term). */
  readonly transitions: number
  /** The Lease's resourceVersion when the term began. */
  readonly resourceVersion: string
  /** wallNow() when the term began (the acquiring write answered). */
  readonly startedAt: number
  /** Aborted when the term ends (deadline passed, lease lost, stop). */
  readonly signal: AbortSignal
  /** The term is still on: checked synchronously against the renew deadline. Check before acting. */
  valid(): boolean
  /** wallNow() until which the term is valid unless renewed. */
  validUntil(): number
}

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

interface Holding {
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
  private holding: Holding | undefined

  constructor(o: LeaseLockOptions) {
    this.cluster = o.cluster
    this.namespace = o.namespace
    this.name = o.name
    this.identity = o.identity
    this.leaseDurationMs = o.leaseDurationMs ?? 15_000
    this.renewDeadlineMs = o.renewDeadlineMs ?? 10_000
    this.labels = o.labels
    this.timeoutMs = o.requestTimeoutMs ?? this.renewDeadlineMs
    if (!o.identity) throw new Error('lease: identity must not be empty')
    if (!(this.renewDeadlineMs < this.leaseDurationMs)) {
      throw new Error(`lease ${o.name}: renewDeadlineMs (${this.renewDeadlineMs}) must be below leaseDurationMs (${this.leaseDurationMs})`)
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

  holdingState(): Readonly<Holding> | undefined {
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
      cur = await this.cluster.request<LeaseObject>({ path: leasePath(this.namespace, this.name), signal, timeoutMs: this.timeoutMs, what: `Lease ${this.namespace}/${this.name}` })
    } catch (err) {
      if (!isNotFound(err)) throw err
      if (h) {
        this.holding = undefined
        return 'lost'
      }
      const at = microTime(sent)
      try {
        const res = await this.cluster.request<LeaseObject>({
          method: 'POST', path: leasePath(this.namespace), body: this.body(this.spec(0, at, at)), signal, timeoutMs: this.timeoutMs,
          what: `Lease ${this.namespace}/${this.name}`,
        })
        this.observe(res)
        this.holding = { rv: String(res.metadata.resourceVersion), transitions: 0, acquireTime: at, validUntil: sent + this.renewDeadlineMs }
        return 'acquired'
      } catch (e) {
        if (isConflict(e)) return 'held' // created by someone else first
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
      return 'acquired'
    } catch (err) {
      if (!isConflict(err)) throw err
      if (renewing) {
        this.holding = undefined
        return 'lost'
      }
      return 'held'
    }
  }

  private put(spec: LeaseSpec, rv: string, signal?: AbortSignal): Promise<LeaseObject> {
    return this.cluster.request<LeaseObject>({
      method: 'PUT', path: leasePath(this.namespace, this.name), body: this.body(spec, rv), signal, timeoutMs: this.timeoutMs,
      what: `Lease ${this.namespace}/${this.name}`,
    })
  }

  /**
   * Releases the lease if we hold it: clears holderIdentity (keeping leaseTransitions) so that the
   * next candidate takes it at once. Call after the term's work has stopped. Never throws.
   */
  async release(signal?: AbortSignal): Promise<boolean> {
    const h = this.holding
    this.holding = undefined
    if (!h) return false
    let rv = h.rv
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = microTime()
      const spec: LeaseSpec = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: h.transitions }
      try {
        const res = await this.cluster.request<LeaseObject>({
          method: 'PUT', path: leasePath(this.namespace, this.name), body: this.body(spec, rv),
          signal, timeoutMs: this.timeoutMs, what: `release of Lease ${this.namespace}/${this.name}`,
        })
        this.observe(res)
        return true
      } catch (err) {
        if (!isConflict(err)) return false // it expires by itself
      }
      // A conflict: a renewal we gave up on (aborted) may have landed after all. Still ours, same term?
      try {
        const cur = await this.cluster.request<LeaseObject>({ path: leasePath(this.namespace, this.name), signal, timeoutMs: this.timeoutMs })
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

/** The term as kept by its owner (LeaderElector, ShardedLeases). */
export class Term implements LeaseTerm {
  readonly lease: string
  readonly identity: string
  readonly transitions: number
  readonly resourceVersion: string
  readonly startedAt: number
  private readonly ctrl = new AbortController()
  private timer: NodeJS.Timeout | undefined
  private deadline: number
  /** Why the term ended (once it did). */
  endReason: string | undefined
  endedAt: number | undefined

  constructor(
    private readonly lock: LeaseLock,
    private readonly onDeadline: (t: Term) => void,
  ) {
    const h = lock.holdingState()!
    this.lease = lock.name
    this.identity = lock.identity
    this.transitions = h.transitions
    this.resourceVersion = h.rv
    this.startedAt = wallNow()
    this.deadline = h.validUntil
    this.arm()
  }

  get signal(): AbortSignal {
    return this.ctrl.signal
  }

  get ended(): boolean {
    return this.endReason !== undefined
  }

  /** While on: the renew deadline; once ended: when acting stopped (the deadline or the end, earlier). */
  validUntil(): number {
    return this.endedAt === undefined ? this.deadline : Math.min(this.deadline, this.endedAt)
  }

  valid(): boolean {
    return this.endReason === undefined && wallNow() < this.deadline
  }

  /** Takes the lock's new deadline after a renewal and re-arms the deadline timer. */
  arm(): void {
    if (this.ended) return
    const h = this.lock.holdingState()
    if (h && h.transitions === this.transitions) this.deadline = Math.max(this.deadline, h.validUntil)
    clearTimeout(this.timer)
    this.timer = setTimeout(() => this.onDeadline(this), Math.max(0, this.deadline - wallNow()))
  }

  end(reason: string): boolean {
    if (this.ended) return false
    this.endedAt = wallNow()
    this.endReason = reason
    clearTimeout(this.timer)
    this.ctrl.abort(new Error(`lease ${this.lease}: term ${this.transitions} ended: ${reason}`))
    return true
  }
}

export interface LeaderCallbacks {
  /** A term began: start the work; stop it when `term.signal` aborts (onStoppedLeading is also called). */
  onStartedLeading?: (term: LeaseTerm) => void | Promise<void>
  /** A term ended (renew deadline passed, lease lost, or stop()). Awaited before the lease is released. */
  onStoppedLeading?: (term: LeaseTerm, reason: string) => void | Promise<void>
  /** The observed holder changed ('' when released). */
  onNewLeader?: (identity: string) => void
}

export interface LeaderElectorOptions extends LeaderCallbacks {
  cluster: Cluster
  /** The Lease's namespace and name. */
  namespace: string
  name: string
  /** Unique per process. Default: `${hostname}_${random}`. */
  identity?: string
  /** How long a non-renewed lease keeps others out (default 15 000 ms). */
  leaseDurationMs?: number
  /** The leader stops leading when it could not renew for this long (default 10 000 ms). */
  renewDeadlineMs?: number
  /** Wait between attempts, jittered by up to +20% (default 2000 ms). */
  retryPeriodMs?: number
  /** Release the lease on stop() (default true). */
  releaseOnStop?: boolean
  labels?: Record<string, string>
  /** Called for every failed API request (the elector retries anyway). */
  onError?: (err: Error) => void
}

export interface LeaderElectorStatus {
  identity: string
  leading: boolean
  /** The last observed holder ('' released, undefined unknown). */
  leader: string | undefined
  terms: number
  errors: number
  lastError: string | undefined
}

/**
 * Runs for leadership of one Lease until stop(): a candidate while not leading, the leader with a
 * renew loop while leading, back to candidate when a term ends. Reconcilers run only while leading:
 * start them in onStartedLeading and stop them in onStoppedLeading (see leaderOnly()).
 */
export class LeaderElector {
  readonly identity: string
  readonly lock: LeaseLock
  private readonly o: LeaderElectorOptions
  private readonly retryMs: number
  private readonly ctrl = new AbortController()
  private loop: Promise<void> | undefined
  private term: Term | undefined
  private wakeLeader: (() => void) | undefined
  private lastLeader: string | undefined
  private readonly st = { terms: 0, errors: 0, lastError: undefined as string | undefined }

  constructor(o: LeaderElectorOptions) {
    this.o = o
    this.identity = o.identity ?? defaultIdentity()
    this.retryMs = o.retryPeriodMs ?? 2000
    this.lock = new LeaseLock({
      cluster: o.cluster, namespace: o.namespace, name: o.name, identity: this.identity,
      leaseDurationMs: o.leaseDurationMs, renewDeadlineMs: o.renewDeadlineMs, labels: o.labels,
    })
    if (!(this.retryMs < this.lock.renewDeadlineMs)) throw new Error('leader election: retryPeriodMs must be below renewDeadlineMs')
  }

  /** Starts campaigning. Returns at once. */
  start(): this {
    if (this.loop) return this
    this.loop = this.run()
    return this
  }

  /** The current term when leading (valid() says whether it may still act). */
  currentTerm(): LeaseTerm | undefined {
    return this.term && !this.term.ended ? this.term : undefined
  }

  /** Leading right now (a synchronous check of the renew deadline). */
  isLeader(): boolean {
    return this.term !== undefined && this.term.valid()
  }

  status(): LeaderElectorStatus {
    return { identity: this.identity, leading: this.isLeader(), leader: this.lock.observedHolder(), ...this.st }
  }

  /** Resolves when this candidate leads (rejects when the signal aborts or the elector stops). */
  async waitLeading(signal?: AbortSignal): Promise<LeaseTerm> {
    while (!this.isLeader()) {
      if (this.ctrl.signal.aborted) throw new Error('leader election stopped')
      await sleep(Math.min(20, this.retryMs), undefined, { signal })
    }
    return this.term!
  }

  /** Stops campaigning; a leader ends its term (callbacks awaited) and releases the lease. */
  async stop(): Promise<void> {
    if (this.ctrl.signal.aborted) {
      await this.loop
      return
    }
    this.ctrl.abort(new Error('leader election stopped'))
    this.wakeLeader?.()
    await this.loop
  }

  private failed(err: Error): void {
    this.st.errors++
    this.st.lastError = err.message
    this.o.onError?.(err)
  }

  private jitter(): number {
    return this.retryMs * (1 + Math.random() * 0.2)
  }

  private noteLeader(): void {
    const h = this.lock.observedHolder()
    if (h !== undefined && h !== this.lastLeader) {
      this.lastLeader = h
      try {
        this.o.onNewLeader?.(h)
      } catch (err) {
        this.failed(err as Error)
      }
    }
  }

  private async run(): Promise<void> {
    const signal = this.ctrl.signal
    while (!signal.aborted) {
      let r: AttemptResult | undefined
      try {
        r = await this.lock.tryAcquireOrRenew(signal)
      } catch (err) {
        if (!signal.aborted) this.failed(err as Error)
      }
      this.noteLeader()
      if (signal.aborted) break
      if (r === 'acquired') {
        if (!this.lock.isHolding()) {
          this.lock.drop() // the answer came after its own deadline: not a usable term
          continue
        }
        await this.lead()
        continue
      }
      await sleep(this.jitter(), undefined, { signal }).catch(() => {})
    }
    // A lease acquired in the very last attempt (abort raced with the answer) is released too.
    if (this.o.releaseOnStop !== false) await this.lock.release()
    else this.lock.drop()
  }

  /** One term: callbacks, renew loop until the term ends, then the stopped callback. */
  private async lead(): Promise<void> {
    const signal = this.ctrl.signal
    const term = new Term(this.lock, (t) => { this.endTerm(t, 'renew deadline passed') })
    this.term = term
    this.st.terms++
    try {
      await this.o.onStartedLeading?.(term)
    } catch (err) {
      this.failed(err as Error)
    }
    while (!term.ended && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const wake = () => { clearTimeout(t); term.signal.removeEventListener('abort', wake); resolve() }
        const t = setTimeout(wake, this.retryMs)
        this.wakeLeader = wake
        term.signal.addEventListener('abort', wake)
      })
      this.wakeLeader = undefined
      if (term.ended || signal.aborted) break
      try {
        const r = await this.lock.tryAcquireOrRenew(AbortSignal.any([signal, term.signal]))
        if (r === 'renewed') term.arm()
        else if (r === 'lost') this.endTerm(term, `lease taken by ${this.lock.observedHolder() || 'nobody'}`)
      } catch (err) {
        if (!term.ended && !signal.aborted) this.failed(err as Error) // keep trying until the deadline
      }
      this.noteLeader()
    }
    this.endTerm(term, signal.aborted ? 'stopped' : term.endReason ?? 'ended')
    try {
      await this.o.onStoppedLeading?.(term, term.endReason!)
    } catch (err) {
      this.failed(err as Error)
    }
    if (!signal.aborted) this.lock.drop() // lost or expired: back to candidate; on stop, run() releases
  }

  private endTerm(t: Term, reason: string): void {
    if (t.end(reason)) this.wakeLeader?.()
  }
}

/** Something that runs only on the leader (a Reconciler fits). */
export interface Runnable {
  start(): unknown
  stop(): Promise<void>
}

/**
 * Callbacks that start the runnables when a term begins and stop them (awaited) when it ends:
 * `new LeaderElector({ ..., ...leaderOnly(reconciler) })`.
 */
export function leaderOnly(...runnables: Runnable[]): Pick<LeaderCallbacks, 'onStartedLeading' | 'onStoppedLeading'> {
  return {
    onStartedLeading: () => { for (const r of runnables) r.start() },
    onStoppedLeading: async () => { await Promise.all(runnables.map((r) => r.stop())) },
  }
}

function defaultIdentity(): string {
  const host = process.env.HOSTNAME || process.env.POD_NAME || 'statewright'
  return `${host}_${Math.random().toString(36).slice(2, 10)}`
}
