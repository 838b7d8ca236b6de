// Writing to a NATS JetStream key-value bucket with compare-and-swap:
// - NatsKvTarget: reconciler operations for a table of desired entries. Put is a CAS update on
//   the revision last seen (create-if-absent when there is none), delete is a CAS delete, prune
//   deletes the keys that carry our owner label and are not desired. A CAS conflict ("wrong last
//   sequence") rereads the key and tries again, so an update is never lost and never overwrites a
//   write it did not see.
// - KvSecondaries and KvStatusWriter, the same writes for PrimaryController, are secondaries.ts.
// Values are JSON objects; owner metadata lives in value.metadata.labels / .annotations, as in a
// Kubernetes object.
import { ConfigError, DecodeError, WriteError } from './errors.ts'
import { PruneError } from '@statewright/reconciler'
import type { KV, KvEntry } from '@nats-io/kv'
import {
  eachEntry,
  newStatusIndex,
  statusPending,
  type BatchOperations,
  type Operations,
  type OpContext,
  type Status,
  type StatusIndex,
} from '@statewright/reconciler'
import { Table, defineIndex, type Index } from '@statewright/statedb'

/** One desired key of a bucket, with the reconciler's status. */
export interface DesiredKv<V = unknown> {
  readonly key: string
  readonly value: V
  readonly status: Status
}

export interface DesiredKvTable<V = unknown> {
  table: Table<DesiredKv<V>>
  byKey: Index<DesiredKv<V>, string>
  statusIndex: StatusIndex<DesiredKv<V>>
}

/** A table of desired entries keyed by NATS key, with its status index. */
export function newDesiredKvTable<V = unknown>(name = 'desired-kv'): DesiredKvTable<V> {
  const byKey = defineIndex<DesiredKv<V>, string>({ name: 'key', key: (d) => d.key, unique: true })
  const statusIndex = newStatusIndex<DesiredKv<V>>((d) => d.status)
  return { table: new Table<DesiredKv<V>>({ name, primary: byKey, indexes: [statusIndex] }), byKey, statusIndex }
}

/** A desired entry, pending. */
export function desiredKv<V>(key: string, value: V): DesiredKv<V> {
  return { key, value, status: statusPending() }
}

/** The error NATS gives for a failed compare-and-swap. */
export function isCasConflict(err: unknown): boolean {
  return err instanceof Error && /wrong last sequence|key exists/i.test(err.message)
}

const dec = new TextDecoder()

/** Metadata of a JSON value (labels and annotations), when it is an object. */
export function metadataOf(value: unknown): { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined
  const m = (value as { metadata?: unknown }).metadata
  return m !== null && typeof m === 'object' ? (m as { labels?: Record<string, string>; annotations?: Record<string, string> }) : undefined
}

/** A copy of `value` with labels and annotations added to its metadata. */
export function withMetadata<V>(value: V, labels: Record<string, string>, annotations: Record<string, string> = {}, what = 'value'): V {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new DecodeError(`${what}: the value must be a JSON object to carry owner metadata`)
  const m = metadataOf(value) ?? {}
  return {
    ...value,
    metadata: { ...m, labels: { ...(m.labels ?? {}), ...labels }, annotations: { ...(m.annotations ?? {}), ...annotations } },
  } as V
}

/** An entry's value as JSON (a DecodeError names bucket, key and revision). */
export function parse(e: KvEntry, bucket: string): unknown {
  try {
    return JSON.parse(dec.decode(e.value))
  } catch (err) {
    throw new DecodeError(`bucket "${bucket}", key "${e.key}", revision ${e.revision}: value is not JSON: ${(err as Error).message}`)
  }
}

/** The last value of every key (one watch, no per-key get); entries that were deleted are left out. */
export async function listEntries(kv: KV, keys?: string | string[]): Promise<KvEntry[]> {
  const st = await kv.status()
  if (st.values === 0) return []
  if (keys !== undefined) {
    const it = await kv.keys(keys)
    let any = false
    for await (const _ of it) {
      any = true
      it.stop()
      break
    }
    if (!any) return []
  }
  const out = new Map<string, KvEntry>()
  const w = await kv.watch({ key: keys })
  for await (const e of w) {
    out.set(e.key, e)
    if (e.delta === 0 || e.isUpdate) break
  }
  w.stop()
  return [...out.values()].filter((e) => e.operation === 'PUT')
}

export interface NatsKvTargetOptions {
  kv: KV
  /** Owner label key (default "statewright.io/owner") and value (default "statewright"). */
  ownerLabel?: string
  owner?: string
  /** CAS attempts before an operation fails (and the reconciler retries it later); default 10. */
  maxAttempts?: number
  /** Concurrent operations of a batch (default 16). */
  concurrency?: number
}

export interface NatsKvTargetStats {
  puts: number
  creates: number
  unchanged: number
  deletes: number
  pruned: number
  conflicts: number
  errors: number
}

export class NatsKvTarget<V = unknown> {
  readonly bucket: string
  readonly stats: NatsKvTargetStats = { puts: 0, creates: 0, unchanged: 0, deletes: 0, pruned: 0, conflicts: 0, errors: 0 }
  private readonly kv: KV
  private readonly ownerLabel: string
  private readonly owner: string
  private readonly maxAttempts: number
  private readonly concurrency: number
  /** key -> { revision, bytes } of our last write or read. */
  private readonly seen = new Map<string, { revision: number; text: string }>()

  constructor(o: NatsKvTargetOptions) {
    if (!o.kv) throw new ConfigError('NatsKvTarget: kv (an open bucket) is missing')
    this.kv = o.kv
    this.bucket = (o.kv as { bucket?: string }).bucket ?? '?'
    this.ownerLabel = o.ownerLabel ?? 'statewright.io/owner'
    this.owner = o.owner ?? 'statewright'
    this.maxAttempts = o.maxAttempts ?? 10
    this.concurrency = o.concurrency ?? 16
  }

  readonly operations: Operations<DesiredKv<V>> = {
    update: (d, ctx) => this.put(d.key, d.value, ctx),
    delete: (d) => this.remove(d.key).then(() => undefined),
    prune: (all) => this.prune(all),
  }

  readonly batchOperations: BatchOperations<DesiredKv<V>> = {
    updateBatch: (entries, ctx) => eachEntry(entries, (d) => this.put(d.key, d.value, ctx), this.concurrency),
    deleteBatch: (entries) => eachEntry(entries, (d) => this.remove(d.key), this.concurrency),
  }

  private owned(value: unknown): boolean {
    return metadataOf(value)?.labels?.[this.ownerLabel] === this.owner
  }

  /** Makes `key` hold `value` (with our owner label). True when the bucket changed. */
  async put(key: string, value: V, ctx?: Pick<OpContext, 'full'>): Promise<boolean> {
    const text = JSON.stringify(withMetadata(value, { [this.ownerLabel]: this.owner }, {}, `bucket "${this.bucket}", key "${key}"`))
    for (let attempt = 1; ; attempt++) {
      let last = ctx?.full ? undefined : this.seen.get(key)
      if (last === undefined) {
        const cur = await this.kv.get(key)
        if (cur && cur.operation === 'PUT') last = { revision: cur.revision, text: dec.decode(cur.value) }
      }
      if (last !== undefined && last.text === text) {
        this.seen.set(key, last)
        this.stats.unchanged++
        return false
      }
      try {
        const revision = last === undefined ? await this.kv.create(key, text) : await this.kv.update(key, text, last.revision)
        if (last === undefined) this.stats.creates++
        else this.stats.puts++
        this.seen.set(key, { revision, text })
        return true
      } catch (err) {
        this.seen.delete(key)
        if (!isCasConflict(err) || attempt >= this.maxAttempts) {
          this.stats.errors++
          throw new WriteError(
            `bucket "${this.bucket}", key "${key}": put failed${isCasConflict(err) ? ` after ${attempt} CAS conflicts` : ''}: ${(err as Error).message}`,
          )
        }
        this.stats.conflicts++
      }
    }
  }

  /** Deletes `key` if it carries our owner label (CAS on the revision read). True when deleted. */
  async remove(key: string): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const cur = await this.kv.get(key)
      if (!cur || cur.operation !== 'PUT') {
        this.seen.delete(key)
        return false
      }
      let value: unknown
      try {
        value = parse(cur, this.bucket)
      } catch {
        value = undefined
      }
      if (!this.owned(value)) {
        this.seen.delete(key)
        return false
      }
      try {
        await this.kv.delete(key, { previousSeq: cur.revision })
        this.seen.delete(key)
        this.stats.deletes++
        return true
      } catch (err) {
        if (!isCasConflict(err) || attempt >= this.maxAttempts) {
          this.stats.errors++
          throw new WriteError(`bucket "${this.bucket}", key "${key}": delete failed: ${(err as Error).message}`)
        }
        this.stats.conflicts++
      }
    }
  }

  /** Deletes the keys that carry our owner label and are not desired. */
  async prune(desired: Iterable<DesiredKv<V>>): Promise<void> {
    const want = new Set<string>()
    for (const d of desired) want.add(d.key)
    const failures: string[] = []
    for (const e of await listEntries(this.kv)) {
      if (want.has(e.key)) continue
      let value: unknown
      try {
        value = parse(e, this.bucket)
      } catch {
        continue
      } // not JSON: not ours
      if (!this.owned(value)) continue
      try {
        if (await this.remove(e.key)) this.stats.pruned++
      } catch (err) {
        failures.push((err as Error).message)
      }
    }
    if (failures.length)
      throw new PruneError(`prune of bucket "${this.bucket}": ${failures.length} failure(s): ${failures.slice(0, 5).join('; ')}`, failures)
  }
}
