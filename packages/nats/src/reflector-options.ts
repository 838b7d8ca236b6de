// What a NATS key-value reflector is told: the connection, bucket and table, which keys, how an
// entry's bytes become a table object, and how it backs off, verifies and reports. Defaults are stated
// on each field.
import type { NatsConnection } from '@nats-io/transport-node'
import type { KvEntry } from '@nats-io/kv'
import type { DB, RetryOptions, Table } from '@statewright/statedb'
import type { Logger } from '@statewright/statedb'

/** A key-value entry as the default transform stores it. */
export interface KvRow<V = unknown> {
  readonly key: string
  readonly revision: number
  readonly value: V
}

/** Counters and gauges a reflector reports (prom-client's Counter and Gauge fit). */
export interface NatsMetrics {
  inc(
    name: 'events' | 'errors' | 'lists' | 'relists' | 'inactivityRestarts',
    labels: { reflector: string; bucket: string; op?: string },
    value?: number,
  ): void
  set(name: 'objects' | 'watching' | 'revision', labels: { reflector: string; bucket: string }, value: number): void
}

export interface NatsKvReflectorOptions<V = unknown, Obj = KvRow<V>> {
  nc: NatsConnection
  bucket: string
  db: DB
  table: Table<Obj>
  /** Name in health, metrics and the table's initializer (default "nats/<bucket>"). */
  name?: string
  /** Only these keys (NATS subject wildcards allowed: "sites.>"); default every key. */
  keys?: string | string[]
  /** Turns the stored bytes into a value (default JSON.parse of UTF-8). Throwing skips the entry. */
  decode?: (bytes: Uint8Array, entry: KvEntry) => V
  /** Turns an entry into the table's object, or none (default the KvRow itself). */
  transform?: (row: KvRow<V>) => Obj | undefined | null
  /** Timeout of the JetStream API requests the reflector makes (default 5000 ms, the client's). */
  requestTimeoutMs?: number
  /** Backoff after failures (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter ±20%). */
  retry?: RetryOptions
  metrics?: NatsMetrics
  /**
   * A watch that delivers nothing for this long is ended and resumed from the last revision + 1
   * (default: never). Off by default: a KV watch is a push consumer with 5 s idle heartbeats that
   * the client checks itself, and the heartbeats do not reach the watch, so a quiet bucket looks
   * silent; set it above the longest quiet time the bucket has.
   */
  inactivityTimeoutMs?: number
  /**
   * Relist this often even when nothing looks wrong, to catch what no watch reported (default
   * 300 000 ms; 0: never). Only rows whose revision changed are written.
   */
  verifyIntervalMs?: number
  /**
   * Logs every failure at warn (the reflector retries anyway; an entry that cannot be decoded is
   * skipped), with `err`, the reflector's name and bucket.
   */
  logger?: Logger
}
