// Client-side rate limits: one option shape, `{ qps, burst }` (client-go's names), and one limiter,
// a token bucket with a bottleneck queue behind it. The reconciler paces rounds and operations with
// it; @statewright/k8s paces every request to a cluster with it.
//
// Invariants:
// - the bucket holds at most `burst` tokens and gains `qps` per second; a caller takes one token;
// - the fast path is synchronous: a token is there and nobody is queued, take it (no promise);
// - otherwise callers queue FIFO in a bottleneck limiter that releases one every 1000/qps ms, each
//   taking a token on release (the bucket may go below zero, which keeps the fast path closed until
//   the queue is drained and the bucket refilled);
// - stop() drops the queued callers (their promises reject with bottleneck's "limiter has been
//   stopped") and lets the process exit; callers after stop() are refused the same way.
// - bottleneck is imported at the first caller that has to queue (a dynamic import, kept in a
//   bundle), not at start: a limiter that never queues never loads it. Callers queue in the order
//   they came, whether or not the import has finished.
// Why bottleneck, and why not its own reservoir (reservoirIncreaseAmount/Interval): bottleneck is a
// small, dependency-free, well-tried scheduler (FIFO queue, pacing, stop with dropWaitingJobs); but
// with its reservoir every take would go through its asynchronous scheduler even when a token is
// free, and at qps 100 its refill heartbeat ticks every 10 ms for the life of the limiter. The
// counter below costs nothing when idle and keeps the common case synchronous.

import type Bottleneck from 'bottleneck'
import { setTimeout as sleep } from 'node:timers/promises'
import { ConfigError } from './errors.ts'

/** A token bucket: `qps` tokens a second, at most `burst` at once. */
export interface RateLimitOptions {
  /** Tokens a second (the sustained rate); a positive number. */
  qps: number
  /** Bucket size (the most taken at once after a quiet spell); a positive integer. */
  burst: number
}

/** Throws a ConfigError naming `what` when `o` is not a valid `{ qps, burst }`. */
export function checkRateLimit(o: RateLimitOptions, what: string): RateLimitOptions {
  if (o === null || typeof o !== 'object') throw new ConfigError(`${what} must be { qps, burst }, got ${String(o)}`)
  if (typeof o.qps !== 'number' || !(o.qps > 0) || !Number.isFinite(o.qps)) {
    throw new ConfigError(`${what}.qps must be a positive number, got ${String(o.qps)}`)
  }
  if (!Number.isInteger(o.burst) || o.burst < 1) throw new ConfigError(`${what}.burst must be a positive integer, got ${String(o.burst)}`)
  return o
}

/** A token bucket (qps, burst) shared by its callers; see the top of the file. */
export class RateLimiter {
  readonly qps: number
  readonly burst: number
  private tokens: number
  private last = performance.now()
  private waiting = 0
  /** The queue, made at the first caller that has to wait (see the top of the file). */
  private queue: Promise<Bottleneck> | undefined
  private stopped = false

  constructor(options: RateLimitOptions) {
    checkRateLimit(options, 'rate limit')
    this.qps = options.qps
    this.burst = options.burst
    this.tokens = options.burst
  }

  private queueOf(): Promise<Bottleneck> {
    if (this.queue) return this.queue
    // stopped before any caller queued: the queue is made stopped, so it refuses them
    const stoppedBefore = this.stopped
    this.queue = import('bottleneck').then(({ default: B }) => {
      const q = new B({ maxConcurrent: 1, minTime: 1000 / this.qps })
      if (stoppedBefore) q.stop({ dropWaitingJobs: true }).catch(() => {})
      return q
    })
    return this.queue
  }

  private refill(): void {
    const now = performance.now()
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000)
    this.last = now
  }

  /** Resolves when the caller may go; undefined (no promise) when it may go at once. */
  take(): Promise<void> | void {
    this.refill()
    if (this.waiting === 0 && this.tokens >= 1) {
      this.tokens -= 1
      return
    }
    this.waiting++
    return this.queueOf().then((q) =>
      q.schedule(async () => {
        this.refill()
        if (this.tokens < 1) await sleep(((1 - this.tokens) * 1000) / this.qps)
        this.refill()
        this.tokens -= 1
        this.waiting--
      }),
    )
  }

  /** Drops the queued callers; not awaited by callers that must not wait for a running job. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (!this.queue) return // never queued: queueOf() stops the queue it makes
    const q = await this.queue
    await q.stop({ dropWaitingJobs: true }).catch(() => {})
    q.disconnect()
  }
}
