// Writing to a NATS JetStream key-value bucket for PrimaryController (@statewright/primary), with
// the compare-and-swap loop of target.ts:
// - KvSecondaries: the controller's secondaries as keys of a bucket, with the controller's ownership
//   check made on the value actually read, inside the CAS loop.
// - KvStatusWriter: writes a primary's status into its value by CAS.
// Values are JSON objects; owner metadata lives in value.metadata.labels / .annotations, as in a
// Kubernetes object.
import type { KV } from '@nats-io/kv'
import type { PrimaryStatusWriter, SecondaryTarget, SecondaryWriteResult } from '@statewright/primary'
import { WriteError } from './errors.ts'
import { isCasConflict, metadataOf, parse, withMetadata } from './target.ts'

const dec = new TextDecoder()

/** A secondary object kept in a bucket: its key and JSON value (what a NatsKvReflector row holds). */
export interface KvObject<V = unknown> {
  readonly key: string
  readonly value: V
  readonly revision?: number
}

/**
 * Secondaries in a bucket, for PrimaryController: every write is a CAS on the revision just read,
 * and the controller's ownership check runs on that same read, so a key somebody else created is
 * never overwritten (result "foreign") and one they edit meanwhile is read again.
 */
export class KvSecondaries<V = unknown> implements SecondaryTarget<KvObject<V>> {
  readonly bucket: string
  private readonly kv: KV
  private readonly kind: string
  private readonly maxAttempts: number

  constructor(o: { kv: KV; kind?: string; maxAttempts?: number }) {
    this.kv = o.kv
    this.bucket = (o.kv as { bucket?: string }).bucket ?? '?'
    this.kind = o.kind ?? 'KV'
    this.maxAttempts = o.maxAttempts ?? 10
  }

  kindOf(_s: KvObject<V>): string {
    return this.kind
  }

  id(s: KvObject<V>): string {
    return `${this.bucket}/${s.key}`
  }

  describe(s: KvObject<V>): string {
    return `${this.bucket}/${s.key}`
  }

  stampsOf(s: KvObject<V>) {
    return metadataOf(s.value)
  }

  versionOf(s: KvObject<V>): string | undefined {
    return s.revision === undefined ? undefined : String(s.revision)
  }

  withStamps(s: KvObject<V>, stamps: { labels: Record<string, string>; annotations: Record<string, string> }): KvObject<V> {
    return { key: s.key, value: withMetadata(s.value, stamps.labels, stamps.annotations, `bucket "${this.bucket}", key "${s.key}"`) }
  }

  async apply(s: KvObject<V>, owned: (existing: KvObject<V>) => boolean): Promise<{ result: SecondaryWriteResult; version?: string }> {
    const text = JSON.stringify(s.value)
    for (let attempt = 1; ; attempt++) {
      const cur = await this.kv.get(s.key)
      try {
        if (!cur || cur.operation !== 'PUT') {
          const rev = await this.kv.create(s.key, text)
          return { result: 'created', version: String(rev) }
        }
        let value: unknown
        try {
          value = parse(cur, this.bucket)
        } catch {
          return { result: 'foreign' }
        }
        if (!owned({ key: s.key, value: value as V, revision: cur.revision })) return { result: 'foreign' }
        if (dec.decode(cur.value) === text) return { result: 'unchanged', version: String(cur.revision) }
        const rev = await this.kv.update(s.key, text, cur.revision)
        return { result: 'updated', version: String(rev) }
      } catch (err) {
        if (!isCasConflict(err) || attempt >= this.maxAttempts)
          throw new WriteError(`bucket "${this.bucket}", key "${s.key}": write failed: ${(err as Error).message}`)
      }
    }
  }

  async delete(s: KvObject<V>, owned: (existing: KvObject<V>) => boolean): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const cur = await this.kv.get(s.key)
      if (!cur || cur.operation !== 'PUT') return false
      let value: unknown
      try {
        value = parse(cur, this.bucket)
      } catch {
        return false
      }
      if (!owned({ key: s.key, value: value as V, revision: cur.revision })) return false
      try {
        await this.kv.delete(s.key, { previousSeq: cur.revision })
        return true
      } catch (err) {
        if (!isCasConflict(err) || attempt >= this.maxAttempts)
          throw new WriteError(`bucket "${this.bucket}", key "${s.key}": delete failed: ${(err as Error).message}`)
      }
    }
  }
}

/**
 * Writes a primary's status into its value (`value.status`) by CAS on the revision read; a
 * conflict reads again and retries. A status equal to the stored one writes nothing.
 */
export class KvStatusWriter implements PrimaryStatusWriter<unknown> {
  private readonly kv: KV
  private readonly maxAttempts: number
  readonly bucket: string

  constructor(o: { kv: KV; maxAttempts?: number }) {
    this.kv = o.kv
    this.bucket = (o.kv as { bucket?: string }).bucket ?? '?'
    this.maxAttempts = o.maxAttempts ?? 10
  }

  async writeStatus(primary: { key: string }, status: unknown): Promise<boolean> {
    const key = primary.key
    for (let attempt = 1; ; attempt++) {
      const cur = await this.kv.get(key)
      if (!cur || cur.operation !== 'PUT') return false // deleted meanwhile: nothing to write
      const value = parse(cur, this.bucket)
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new WriteError(
          `bucket "${this.bucket}", key "${key}", revision ${cur.revision}: cannot write status: the value is not a JSON object`,
        )
      }
      if (JSON.stringify((value as { status?: unknown }).status) === JSON.stringify(status)) return false
      try {
        await this.kv.update(key, JSON.stringify({ ...value, status }), cur.revision)
        return true
      } catch (err) {
        if (!isCasConflict(err) || attempt >= this.maxAttempts)
          throw new WriteError(`bucket "${this.bucket}", key "${key}": status write failed: ${(err as Error).message}`)
      }
    }
  }
}
