// A PrimaryController's work: one row per primary in a work table that a Reconciler drives, the
// requeue timers that mark a row pending again later, and the syncs in flight.
// Invariants:
// - One row per primary key (a unique primary index); its hash is the spec hash of the primary
//   when the row was last marked.
// - Marking a row pending writes a new pending status even while it is being synced: the reconciler
//   then drops that sync's result (it read an older state) and syncs the row again.
// - At most one requeue timer per key: a new one replaces the old, a sync or delete cancels it.
import { newStatusIndex, statusPending, type BatchEntry, type Status, type StatusIndex } from '@statewright/reconciler'
import { Table, defineIndex, type WriteTxn } from '@statewright/statedb'

/** A secondary a primary owns: the index of its secondary spec, and the object as applied. */
export interface OwnedRef {
  spec: number
  object: unknown
}

export interface Work {
  readonly key: string
  readonly hash: string
  /** What the last successful sync applied. */
  readonly owned: readonly OwnedRef[]
  readonly status: Status
}

/** A work row as the reconciler hands it to an update: a sync sets `owned` on it. */
export type MutableWork = { -readonly [K in keyof Work]: Work[K] }

/** The work table of the controller `name` (a table name: sanitized, at most 60 characters). */
export function newWorkTable(name: string): { table: Table<Work>; statusIndex: StatusIndex<Work> } {
  const statusIndex = newStatusIndex<Work>((w) => w.status)
  const byKey = defineIndex<Work, string>({ name: 'key', key: (w) => w.key, unique: true })
  const table = new Table<Work>({
    name: `primary-${name.replace(/[^A-Za-z0-9._-]/g, '_')}`.slice(0, 60),
    primary: byKey,
    indexes: [statusIndex],
  })
  return { table, statusIndex }
}

/** Marks the rows of these keys pending (keys without a row are skipped); returns how many were marked. */
export function markPending(txn: WriteTxn, work: Table<Work>, keys: Iterable<string>): number {
  const s = statusPending()
  let n = 0
  for (const k of keys) {
    const cur = work.get(txn, work.primary.query(k))
    if (cur) {
      work.insert(txn, { ...cur, status: s })
      n++
    }
  }
  return n
}

/** Timers that mark a key pending again later (SyncResult.requeueAfterMs). */
export class Requeues {
  private readonly timers = new Map<string, NodeJS.Timeout>()

  get size(): number {
    return this.timers.size
  }

  /** Runs `fire` after `ms`, replacing the key's timer. */
  after(key: string, ms: number, fire: () => void): void {
    const old = this.timers.get(key)
    if (old) clearTimeout(old)
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key)
        fire()
      }, ms),
    )
  }

  /** A sync or a delete of the key makes its timer moot. */
  cancel(key: string): void {
    const t = this.timers.get(key)
    if (t) {
      clearTimeout(t)
      this.timers.delete(key)
    }
  }

  cancelAll(): void {
    for (const t of this.timers.values()) clearTimeout(t)
    this.timers.clear()
  }
}

/** Syncs and deletes in flight: stop() and waitIdle() wait for them, batches run them on a worker pool. */
export class Inflight {
  private readonly running = new Set<Promise<unknown>>()

  get size(): number {
    return this.running.size
  }

  track<T>(p: Promise<T>): Promise<T> {
    this.running.add(p)
    void p.finally(() => this.running.delete(p)).catch(() => {})
    return p
  }

  /** The promises in flight now. */
  snapshot(): Promise<unknown>[] {
    return [...this.running]
  }

  /** Runs fn on every entry, at most `concurrency` at once; a failure is the entry's error. */
  async pool(entries: BatchEntry<Work>[], concurrency: number, fn: (w: Work) => Promise<unknown>): Promise<void> {
    let next = 0
    const worker = async () => {
      while (next < entries.length) {
        const e = entries[next++]!
        try {
          await this.track(fn(e.object))
        } catch (err) {
          e.error = err
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker))
  }
}
