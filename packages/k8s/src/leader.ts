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
// - a clean stop closes the term to new writes and lets those sent be answered (onDraining), ends the
//   term (callbacks first), then releases the Lease by clearing holderIdentity
//   so that another candidate takes over at once;
// - every term gets a fencing token: the Lease's leaseTransitions, incremented by each acquisition
//   (also when an identity acquires a Lease whose record still names it from an earlier term,
//   a small departure from client-go that keeps the token strictly increasing per term).
// Timestamps are written as MicroTime (exactly six fractional digits), as a real server requires.
// Lease durations below one second (tests) are kept in an annotation: leaseDurationSeconds is an integer.
import { ConfigError, StoppedError, UsageError } from './errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cluster } from './cluster.ts'
import { LeaseLock, type AttemptResult } from './lease.ts'
import { Term, type LeaseTerm } from './lease-term.ts'
import { nextOrStop, noteFailure } from './callbacks.ts'
import type { Health, Lifecycle, Logger } from '@statewright/statedb'

export interface LeaderCallbacks {
  /** A term began: start the work; stop it when `term.signal` aborts (onStoppedLeading is also called). */
  onStartedLeading?: (term: LeaseTerm) => void | Promise<void>
  /**
   * stop() while leading: the term is closed to new writes (`valid()` is false) but not yet ended,
   * so what was sent under it can be answered (await `Cluster.settled(term)`); awaited before the
   * term ends (onStoppedLeading) and the lease is released. Not called for a term lost or expired.
   */
  onDraining?: (term: LeaseTerm) => void | Promise<void>
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
  /** Logs every failed API request at warn, with `err` and the lease and cluster (the elector retries anyway). */
  logger?: Logger
}

/** Leader election's health: the shared shape, and who leads. Degraded while the last request failed. */
export interface LeaderElectorHealth extends Health {
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
export class LeaderElector implements Lifecycle {
  readonly identity: string
  readonly lock: LeaseLock
  private readonly options: LeaderElectorOptions
  private readonly retryMs: number
  private readonly ctrl = new AbortController()
  private loop: Promise<void> | undefined
  private term: Term | undefined
  private wakeLeader: (() => void) | undefined
  private lastLeader: string | undefined
  private readonly st = { terms: 0, errors: 0, lastError: undefined as string | undefined }
  /** The last attempt's request failed (health is degraded until one succeeds). */
  private failing = false
  /** Resolved once the first attempt is answered (settled()). */
  private attempted!: () => void
  private readonly firstAttempt = new Promise<void>((r) => (this.attempted = r))

  constructor(o: LeaderElectorOptions) {
    this.options = o
    this.identity = o.identity ?? defaultIdentity()
    this.retryMs = o.retryPeriodMs ?? 2000
    this.lock = new LeaseLock({
      cluster: o.cluster,
      namespace: o.namespace,
      name: o.name,
      identity: this.identity,
      leaseDurationMs: o.leaseDurationMs,
      renewDeadlineMs: o.renewDeadlineMs,
      labels: o.labels,
    })
    if (!(this.retryMs < this.lock.renewDeadlineMs)) throw new ConfigError('leader election: retryPeriodMs must be below renewDeadlineMs')
  }

  /** Starts campaigning; resolves at once (settled() waits for the first attempt's answer). */
  async start(): Promise<void> {
    if (this.ctrl.signal.aborted) throw new UsageError('leader election stopped: make a new LeaderElector')
    this.loop ??= this.run()
  }

  /** Resolves once the first attempt to acquire the Lease is answered: this candidate knows whether it leads. */
  async settled(signal?: AbortSignal): Promise<void> {
    if (!this.loop) throw new StoppedError('leader election is not running')
    await nextOrStop((done) => void this.firstAttempt.then(done), this.ctrl.signal, signal)
  }

  /** The current term when leading (valid() says whether it may still act). */
  currentTerm(): LeaseTerm | undefined {
    return this.term && !this.term.ended ? this.term : undefined
  }

  /** Leading right now (a synchronous check of the renew deadline). */
  isLeader(): boolean {
    return this.term !== undefined && this.term.valid()
  }

  health(): LeaderElectorHealth {
    const leading = this.isLeader()
    const leader = this.lock.observedHolder()
    const running = this.loop !== undefined && !this.ctrl.signal.aborted
    const level = !running ? 'stopped' : this.failing ? 'degraded' : 'ok'
    const message = !running
      ? 'stopped'
      : this.failing
        ? `leader election request failed: ${this.st.lastError}`
        : leading
          ? 'leading'
          : `a candidate; ${leader ? `${leader} leads` : 'no leader known'}`
    return { level, message, ready: running, identity: this.identity, leading, leader, ...this.st }
  }

  /** Resolves when this candidate leads (rejects when the signal aborts or the elector stops). */
  async waitLeading(signal?: AbortSignal): Promise<LeaseTerm> {
    while (!this.isLeader()) {
      if (this.ctrl.signal.aborted) throw new StoppedError('leader election stopped')
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
    this.ctrl.abort(new StoppedError('leader election stopped'))
    this.wakeLeader?.()
    await this.loop
  }

  private failed(err: Error): void {
    noteFailure(
      this.st,
      this.options.logger,
      err,
      { lease: this.options.name, cluster: this.options.cluster.name },
      'leader election request failed',
    )
  }

  private jitter(): number {
    return this.retryMs * (1 + Math.random() * 0.2)
  }

  private noteLeader(): void {
    const h = this.lock.observedHolder()
    if (h !== undefined && h !== this.lastLeader) {
      this.lastLeader = h
      try {
        this.options.onNewLeader?.(h)
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
        this.failing = false
      } catch (err) {
        if (!signal.aborted) this.failed(err as Error)
        this.failing = !signal.aborted
      }
      this.noteLeader()
      this.attempted()
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
    if (this.options.releaseOnStop !== false) await this.lock.release()
    else this.lock.drop()
  }

  /** One term: callbacks, renew loop until the term ends, then the stopped callback. */
  private async lead(): Promise<void> {
    const signal = this.ctrl.signal
    const term = new Term(this.lock, (t) => {
      this.endTerm(t, 'renew deadline passed')
    })
    this.term = term
    this.st.terms++
    try {
      await this.options.onStartedLeading?.(term)
    } catch (err) {
      this.failed(err as Error)
    }
    while (!term.ended && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(t)
          term.signal.removeEventListener('abort', wake)
          resolve()
        }
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
    // stopping: closed first, so the writes sent under the term are answered before the release (an
    // aborted request the server already took would land after it)
    if (signal.aborted && term.close('stopped')) {
      try {
        await this.options.onDraining?.(term)
      } catch (err) {
        this.failed(err as Error)
      }
    }
    this.endTerm(term, signal.aborted ? 'stopped' : (term.endReason ?? 'ended'))
    try {
      await this.options.onStoppedLeading?.(term, term.endReason!)
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
    onStartedLeading: () => {
      for (const r of runnables) r.start()
    },
    onStoppedLeading: async () => {
      await Promise.all(runnables.map((r) => r.stop()))
    },
  }
}

function defaultIdentity(): string {
  const host = process.env.HOSTNAME || process.env.POD_NAME || 'statewright'
  return `${host}_${Math.random().toString(36).slice(2, 10)}`
}
