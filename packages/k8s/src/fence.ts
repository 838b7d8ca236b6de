// Fencing writes by a lease term: a write of a leader (or of a shard holder) goes on the wire only
// while its term is valid, is cut off when the term ends, and cannot outlive the term's deadline.
//
// Invariants:
// - a fenced request is checked synchronously right before it is handed to the HTTP client, after
//   every wait (the cluster's rate limiter, a Retry-After pause, the auth headers): a request whose
//   term is over is refused (FencedError) and nothing is sent;
// - a fenced request carries a timeout that ends at the term's deadline and is aborted when the term
//   ends, so no answer is awaited past the term; the server is given the same deadline (the `timeout`
//   parameter), so a write it holds past the term is not carried out even when this process is too
//   starved to cut the request off;
// - what remains is the window between the check and the bytes reaching the socket (one event-loop
//   turn with a pooled connection; a TLS handshake without): a process stopped exactly there sends
//   its write late. The server-side guard for it is a resourceVersion precondition (Target's
//   `preconditions`): a late write whose object was written since fails with 409.
//
// A LeaseTerm is a WriteFence; NOT_LEADING is one that never is. FencedWrites keeps what is in
// flight under each fence, so a term given up on purpose can wait for it (Target, Cluster).
import { wallNow } from './wallclock.ts'
import { K8sError } from './errors.ts'

/** What a fenced write needs of a term: LeaseTerm satisfies it. */
export interface WriteFence {
  /** The Lease's name (for messages). */
  readonly lease: string
  /** The term's fencing token (leaseTransitions). */
  readonly transitions: number
  /** Aborted when the term ends. */
  readonly signal: AbortSignal
  /** The term is still on (checked synchronously). */
  valid(): boolean
  /** wallNow() until which the term is valid unless renewed. */
  validUntil(): number
}

/** A write refused (or cut off) because its lease term is over: it was not sent, or its answer was not awaited. */
export class FencedError extends K8sError {
  override name = 'FencedError'
  constructor(message: string) {
    super(message, 'Fenced')
  }
}

const NEVER = new AbortController()
NEVER.abort(new FencedError('not leading'))

/** A fence that is never valid: the writes of a replica that holds no term. */
export const NOT_LEADING: WriteFence = {
  lease: '(none)',
  transitions: -1,
  signal: NEVER.signal,
  valid: () => false,
  validUntil: () => 0,
}

/**
 * Throws FencedError unless the fence's term is valid now (`fence.valid()` is asked once; `named`,
 * when given, is the term the message names).
 */
export function checkFence(fence: WriteFence, what: string, named: WriteFence = fence): void {
  if (!fence.valid()) throw new FencedError(`${what}: not sent: the term of lease ${named.lease} (${named.transitions}) is over`)
}

/** @internal A fence that is never valid, to refuse with checkFence's message. */
export const NOT_VALID: WriteFence = { lease: '', transitions: -1, signal: NEVER.signal, valid: () => false, validUntil: () => 0 }

/** How long a fenced request may wait for its answer: until the term's deadline, at most `timeoutMs`. */
export function fencedTimeout(fence: WriteFence, timeoutMs: number): number {
  return Math.max(1, Math.min(timeoutMs, Math.floor(fence.validUntil() - wallNow())))
}

/**
 * Writes in flight, by the fence they were made under: what `settled(fence)` awaits (Target's writes,
 * Cluster's requests on the wire). A fence's entry goes when its last write settles.
 */
export class FencedWrites {
  private readonly inflight = new Map<WriteFence, Set<Promise<unknown>>>()

  /** Tracks `p` under `fence` (none: untracked); returns `p`. */
  track<T>(fence: WriteFence | undefined, p: Promise<T>): Promise<T> {
    if (fence === undefined) return p
    let set = this.inflight.get(fence)
    if (!set) this.inflight.set(fence, (set = new Set()))
    set.add(p)
    const forget = () => {
      set!.delete(p)
      if (set!.size === 0 && this.inflight.get(fence) === set) this.inflight.delete(fence)
    }
    p.then(forget, forget)
    return p
  }

  /** Resolves once every write tracked under `fence` now has settled (answered, refused or cut off). */
  async settled(fence: WriteFence): Promise<void> {
    const set = this.inflight.get(fence)
    if (set) await Promise.allSettled([...set])
  }
}
