// The retry queue: failed objects keyed by primary key, each with its own exponential backoff.
//
// Invariants:
// - at most one item per key: a key's newest outcome replaces what was queued for it, so a newer
//   change always wins over a stale retry (cilium's issue #55: a retried delete of an old version
//   must never undo a later insert). The reconciler `take`s a key's item whenever it processes a
//   newer change of that key, carrying the attempt count over so a flapping object keeps backing off;
//   a success drops the item for good;
// - an item is in the heap once per schedule; heap slots are validated lazily against the map (an
//   item replaced or taken leaves a dead slot that `popDue`/`nextDue` discard); an item popped for
//   a retry stays in the map until its outcome takes or replaces it, so a retry in flight (a delete
//   above all: its object is in no table) is still listed as failing;
// - an update item does not hold the object (the current one is read again at retry time and must
//   still carry the error status `statusId` this reconciler wrote); a delete item holds the deleted
//   object, because it is no longer in the table. That is what makes failed deletes queryable.

import { backoffDelay, type Key } from '@statewright/statedb'

/** A primary key as the queue's map key: retryKey encodes it, showRetryKey shows it. */
export type RetryKey = string | number

/**
 * The queue's key for a primary key: strings and numbers are used as they are (no allocation on the
 * hot path), other keys (arrays, bytes) become a tagged string.
 */
export function retryKey(k: Key): RetryKey {
  if (typeof k === 'string' || typeof k === 'number') return k
  return '\u0000' + showPart(k)
}

/** A queue key as text for health and logs. */
export function showRetryKey(k: RetryKey): string {
  return typeof k === 'number' ? String(k) : k.startsWith('\u0000') ? k.slice(1) : k
}

function showPart(k: Key): string {
  if (Array.isArray(k)) return '[' + k.map((p) => showPart(p as Key)).join(',') + ']'
  if (k instanceof Uint8Array) return 'b' + Array.from(k).join('.')
  if (typeof k === 'string') return JSON.stringify(k)
  return typeof k + ':' + String(k)
}

export interface RetryItem<Obj> {
  readonly key: RetryKey
  readonly deleted: boolean
  /** Delete items: the deleted object. Update items: undefined. */
  readonly object: Obj | undefined
  /** Update items: the error status id written to the object; 0 for deletes. */
  readonly statusId: number
  /** Revision of the change that failed (the deletion's revision for deletes). */
  readonly revision: number
  readonly attempts: number
  readonly dueAt: number
  readonly error: string
}

export interface RetryOutcome<Obj> {
  deleted: boolean
  object: Obj | undefined
  statusId: number
  revision: number
  error: string
}

export class RetryQueue<Obj> {
  private readonly items = new Map<RetryKey, RetryItem<Obj>>()
  private readonly heap: RetryItem<Obj>[] = []

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly jitter = 0,
    private readonly random: () => number = Math.random,
  ) {}

  /** Objects waiting for a retry. */
  get size(): number {
    return this.items.size
  }

  /** Backoff after the n-th consecutive failure (n >= 1): min * 2^(n-1), capped at max, jittered. */
  backoff(attempts: number): number {
    return backoffDelay(attempts, { minMs: this.minMs, maxMs: this.maxMs, jitter: this.jitter }, this.random)
  }

  /**
   * Records a failure of `key` after `previousAttempts` failures (from `take`): schedules a retry,
   * replacing anything queued for the key. Returns the item.
   */
  fail(key: RetryKey, outcome: RetryOutcome<Obj>, previousAttempts: number, now: number): RetryItem<Obj> {
    const attempts = previousAttempts + 1
    const item: RetryItem<Obj> = {
      key,
      deleted: outcome.deleted,
      object: outcome.object,
      statusId: outcome.statusId,
      revision: outcome.revision,
      attempts,
      dueAt: now + this.backoff(attempts),
      error: outcome.error,
    }
    this.items.set(key, item)
    this.push(item)
    return item
  }

  /** Removes the key's item (a newer change is being processed); returns its attempt count (0: none). */
  take(key: RetryKey): number {
    const item = this.items.get(key)
    if (item === undefined) return 0
    this.items.delete(key)
    return item.attempts
  }

  get(key: RetryKey): RetryItem<Obj> | undefined {
    return this.items.get(key)
  }

  /**
   * Returns up to `max` items due at `now`, earliest first, and takes them off the schedule. They
   * stay queued (in `values()`, `get`, `size`: a retry in flight is still a failure) until the
   * retry's outcome `take`s the key (success, or a skip) or `fail`s it again (cilium's Pop, then
   * Clear or Add).
   */
  popDue(now: number, max: number): RetryItem<Obj>[] {
    const out: RetryItem<Obj>[] = []
    while (out.length < max && this.heap.length > 0) {
      const top = this.heap[0]!
      if (this.items.get(top.key) !== top) {
        this.pop()
        continue
      }
      if (top.dueAt > now) break
      this.pop()
      out.push(top)
    }
    return out
  }

  /** When the earliest live item is due, or undefined when nothing is queued. */
  nextDue(): number | undefined {
    while (this.heap.length > 0) {
      const top = this.heap[0]!
      if (this.items.get(top.key) === top) return top.dueAt
      this.pop()
    }
    return undefined
  }

  /** The queued items, in the order they first failed (oldest first). */
  values(): IterableIterator<RetryItem<Obj>> {
    return this.items.values()
  }

  clear(): void {
    this.items.clear()
    this.heap.length = 0
  }

  // ---- binary min-heap on dueAt ----

  private push(item: RetryItem<Obj>): void {
    const h = this.heap
    h.push(item)
    let i = h.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (h[parent]!.dueAt <= item.dueAt) break
      h[i] = h[parent]!
      i = parent
    }
    h[i] = item
  }

  private pop(): void {
    const h = this.heap
    const last = h.pop()!
    if (h.length === 0) return
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      if (l >= h.length) break
      const r = l + 1
      const c = r < h.length && h[r]!.dueAt < h[l]!.dueAt ? r : l
      if (h[c]!.dueAt >= last.dueAt) break
      h[i] = h[c]!
      i = c
    }
    h[i] = last
  }
}
