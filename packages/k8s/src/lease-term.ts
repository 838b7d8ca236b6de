// One term of a lease's holder: what it needs to act safely (LeaseTerm), and the Term its owner
// (LeaderElector, ShardedLeases) keeps.
// Invariants:
// - The fencing token is the Lease's leaseTransitions for the term: strictly increasing per term.
// - valid() is checked synchronously against the renew deadline; a renewal moves the deadline
//   only forward and only for the same term.
// - A term ends once (end() or its deadline): its signal aborts with a StoppedError naming why.
// - A term given up on purpose closes first (close()): valid() is false from then on, so no new
//   write passes its fence, but its signal is not aborted, so writes already sent are answered
//   (each bounded by the term's deadline) before it ends and its Lease is released; a write the
//   server received cannot be called back by aborting it, and would land after the release.
import { StoppedError } from './errors.ts'
import type { LeaseLock } from './lease.ts'
import { wallNow } from './wallclock.ts'

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
  /** Why the term was closed to new writes (see close()). */
  closeReason: string | undefined
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
    return this.endReason === undefined && this.closeReason === undefined && wallNow() < this.deadline
  }

  /**
   * Closes the term to new writes (valid() turns false) without aborting what is in flight: the
   * first step of giving it up on purpose; end() follows once those writes are answered. False when
   * already closed or ended.
   */
  close(reason: string): boolean {
    if (this.ended || this.closeReason !== undefined) return false
    this.closeReason = reason
    return true
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
    this.ctrl.abort(new StoppedError(`lease ${this.lease}: term ${this.transitions} ended: ${reason}`))
    return true
  }
}
