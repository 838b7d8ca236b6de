// Coalescing of a reflector's watch events into batches (core.ts writes one transaction per batch).
// Invariants: events are kept by key (the latest wins: an ADDED then DELETED in one batch is a
// delete); a batch is flushed when it holds `size` keys or `delayMs` after its first event, whichever
// comes first; flushes run one at a time, in order.
import type { PendingEvent } from './source.ts'

export type { PendingEvent }

export class Batcher<T> {
  private buf = new Map<string, PendingEvent<T>>()
  private timer: NodeJS.Timeout | undefined
  private chain: Promise<void> = Promise.resolve()

  constructor(
    private readonly size: number,
    private readonly delayMs: number,
    private readonly write: (batch: Map<string, PendingEvent<T>>) => Promise<void>,
  ) {}

  get length(): number {
    return this.buf.size
  }

  /** Adds an event; resolves once it is buffered, or written when the batch filled up. */
  add(key: string, p: PendingEvent<T>): Promise<void> | undefined {
    this.buf.set(key, p)
    if (this.buf.size >= this.size) return this.flush()
    if (!this.timer) this.timer = setTimeout(() => void this.flush(), this.delayMs)
    return undefined
  }

  /** Writes what is buffered (after earlier flushes). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    if (this.buf.size === 0) return this.chain
    const batch = this.buf
    this.buf = new Map()
    this.chain = this.chain.then(() => this.write(batch))
    return this.chain
  }

  /** Drops what is buffered (a relist supersedes it); resolves after flushes in flight. */
  discard(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    this.buf = new Map()
    return this.chain
  }
}
