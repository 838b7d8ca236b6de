// Watches: one-shot signals that a query's result may have changed.
//
// A Watch is closed at most once and never reopens. It is deliberately not a thenable (returning
// one from an async function would silently wait on it): call `wait(signal?)` to await it.
import { UsageError } from './errors.ts'

export class Watch {
  private isClosed = false
  private promise: Promise<void> | undefined
  private resolve: (() => void) | undefined
  private listeners: Array<() => void> | undefined

  /** A watch that has already fired. */
  static closed(): Watch {
    return CLOSED
  }

  get closed(): boolean {
    return this.isClosed
  }

  /** Resolves when the watch fires; rejects with the signal's reason when the signal aborts first. */
  wait(signal?: AbortSignal): Promise<void> {
    if (this.isClosed) return Promise.resolve()
    if (!this.promise) this.promise = new Promise<void>((r) => (this.resolve = r))
    if (!signal) return this.promise
    if (signal.aborted) return Promise.reject(signal.reason)
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        off()
        reject(signal.reason)
      }
      const off = this.onClose(() => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      })
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Calls fn once when the watch fires (at once if it has). Returns a function that unsubscribes. */
  onClose(fn: () => void): () => void {
    if (this.isClosed) {
      fn()
      return noop
    }
    ;(this.listeners ??= []).push(fn)
    return () => {
      const l = this.listeners
      if (!l) return
      const i = l.indexOf(fn)
      if (i >= 0) l.splice(i, 1)
    }
  }

  /** @internal Fires the watch. */
  close(): void {
    if (this.isClosed) return
    this.isClosed = true
    this.resolve?.()
    const l = this.listeners
    this.listeners = undefined
    if (l) {
      for (const fn of l) {
        // A throwing listener must not keep the others (or the rest of a commit) from running: its
        // error is rethrown on its own, like an unhandled error in any callback.
        try {
          fn()
        } catch (err) {
          queueMicrotask(() => {
            throw err
          })
        }
      }
    }
  }
}

const noop = () => {}
const CLOSED = new Watch()
CLOSED.close()

/**
 * Waits until at least one of the watches fires; resolves with those that have fired by then.
 * Rejects with the signal's reason if the signal aborts first.
 */
export function waitAny(watches: Iterable<Watch>, signal?: AbortSignal): Promise<Watch[]> {
  const list = [...watches]
  const fired = () => list.filter((w) => w.closed)
  if (list.length === 0) return Promise.reject(new UsageError('waitAny: no watches to wait on'))
  if (list.some((w) => w.closed)) return Promise.resolve(fired())
  if (signal?.aborted) return Promise.reject(signal.reason)
  return new Promise<Watch[]>((resolve, reject) => {
    const offs: Array<() => void> = []
    const cleanup = () => {
      for (const off of offs) off()
      signal?.removeEventListener('abort', onAbort)
    }
    const onAbort = () => {
      cleanup()
      reject(signal!.reason)
    }
    for (const w of list) {
      offs.push(
        w.onClose(() => {
          cleanup()
          resolve(fired())
        }),
      )
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Collects watches to wait on together, e.g. one per query a computation read. */
export class WatchSet {
  private readonly watches = new Set<Watch>()

  add(...watches: Watch[]): this {
    for (const w of watches) this.watches.add(w)
    return this
  }

  /** Adds every watch of `other` (which keeps them): a set of subsets, as cilium's Merge. */
  merge(other: WatchSet): this {
    for (const w of other.watches) this.watches.add(w)
    return this
  }

  has(watch: Watch): boolean {
    return this.watches.has(watch)
  }

  /** Whether any of `watches` is in the set (to tell which subset a fired watch belongs to). */
  hasAny(watches: Iterable<Watch>): boolean {
    for (const w of watches) if (this.watches.has(w)) return true
    return false
  }

  get size(): number {
    return this.watches.size
  }

  clear(): void {
    this.watches.clear()
  }

  /**
   * Waits for any watch of the set to fire; returns and removes the ones that fired. With
   * `settleMs`, waits that long after the first fires so that watches firing close together come
   * back in one call. An abort during the settle time still returns (and removes) the ones that
   * fired; an abort before any fired rejects with the signal's reason.
   */
  async wait(signal?: AbortSignal, settleMs = 0): Promise<Watch[]> {
    signal?.throwIfAborted()
    await waitAny(this.watches, signal)
    if (settleMs > 0 && !signal?.aborted) await settle(settleMs, signal)
    const fired: Watch[] = []
    for (const w of this.watches) if (w.closed) fired.push(w)
    for (const w of fired) this.watches.delete(w)
    return fired
  }
}

function settle(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
