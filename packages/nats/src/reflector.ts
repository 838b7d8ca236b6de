// A reflector mirrors one NATS JetStream key-value bucket into a statedb table. It is statedb's
// reflector core (sessions, resume, relist, batching, backoff, health, the table's initializer: the
// same core as the k8s Reflector) with the KV source (reflector-source.ts: list by watch, resume
// from the last revision + 1, lost history and skipped entries as relists) and the KV rows
// (reflector-rows.ts: decode, transform, DEL and PURGE, rows written only when their revision
// changed).
// Invariants of this class:
// - what the core promises holds (statedb's reflector/core.ts); this class adds the NATS names of
//   health and metrics, the reconnects and the verification;
// - after a reconnect the watch ends and resumes from the last revision + 1;
// - every `verifyIntervalMs` it relists anyway (the source of truth, not the stream, decides): a
//   relist writes only rows whose revision changed, so an idle check costs the list and nothing more;
// - a backoff after a lost connection keeps a synced reflector ready (`lostAfterMs` is never): the
//   table catches up;
// - the inactivity bound is off unless `inactivityTimeoutMs` is given: a KV watch is a push consumer
//   with 5 s idle heartbeats that the client checks itself, and they do not reach the watch, so a
//   quiet bucket would look silent;
// - stop() does not wait for a JetStream request in flight (after a lost connection one can take the
//   client's request timeout): its result is dropped, nothing is written after stop() resolves.
import type { KvWatchEntry } from '@nats-io/kv'
import { ReflectorCore, type Lifecycle } from '@statewright/statedb'
import { BucketError, ConfigError } from './errors.ts'
import type { KvRow, NatsKvReflectorOptions } from './reflector-options.ts'
import type { NatsKvReflectorHealth } from './reflector-health.ts'
import { KvReflectedRows } from './reflector-rows.ts'
import { KvSource } from './reflector-source.ts'

export class NatsKvReflector<V = unknown, Obj = KvRow<V>> implements Lifecycle {
  readonly name: string
  private readonly options: NatsKvReflectorOptions<V, Obj>
  private readonly rows: KvReflectedRows<V, Obj>
  private readonly core: ReflectorCore<KvWatchEntry, number>
  private readonly stopped = new AbortController()
  private verifyTimer: NodeJS.Timeout | undefined
  /** Revision ranges in which the stream held a message the watch skipped. */
  private gaps = 0

  constructor(opts: NatsKvReflectorOptions<V, Obj>) {
    if (!opts.nc) throw new ConfigError('NatsKvReflector: nc (a NATS connection) is missing')
    if (!opts.bucket) throw new ConfigError('NatsKvReflector: bucket is missing')
    if (!opts.db || !opts.table) throw new ConfigError(`NatsKvReflector of bucket "${opts.bucket}": db and table are required`)
    this.options = opts
    const name = (this.name = opts.name ?? `nats/${opts.bucket}`)
    const labels = { reflector: name, bucket: opts.bucket }
    const m = opts.metrics
    this.rows = new KvReflectedRows(opts, name, (err) => this.core.objectFailed(err))
    const onGap = (from: number, to: number) => {
      this.gaps++
      const msg = `bucket "${opts.bucket}": the watch skipped entries between revisions ${from} and ${to}; relisting`
      this.core.objectFailed(new BucketError(msg), 'skipped entries; relisting')
      this.relistSoon('skipped entries')
    }
    this.core = new ReflectorCore<KvWatchEntry, number>({
      name,
      db: opts.db,
      table: opts.table,
      source: new KvSource(opts, labels, onGap, () => !this.stopped.signal.aborted),
      rows: this.rows,
      batchDelayMs: 0, // a burst of entries is one transaction; no wait for more
      retry: opts.retry,
      lostAfterMs: Infinity,
      inactivityTimeoutMs: opts.inactivityTimeoutMs,
      stopGraceMs: 100,
      logger: opts.logger,
      logFields: { bucket: opts.bucket },
      error: (message) => new BucketError(`bucket "${opts.bucket}": ${message}`),
      hooks: m && {
        listed: () => m.inc('lists', labels),
        relisted: () => m.inc('relists', labels),
        failed: () => m.inc('errors', labels),
        up: (up) => m.set('watching', labels, up ? 1 : 0),
        written: (what) => {
          if (what === 'list') m.set('objects', labels, opts.table.count(opts.db.readTxn()))
          else m.set('revision', labels, this.core.resumePosition ?? 0)
        },
        inactive: () => m.inc('inactivityRestarts', labels),
      },
    })
  }

  /** Registers the table initializer and starts listing and watching. Resolves once started. */
  async start(): Promise<void> {
    await this.core.start()
    if (this.stopped.signal.aborted || this.verifyTimer) return
    this.watchStatus()
    const every = this.options.verifyIntervalMs ?? 300_000
    if (every > 0) this.verifyTimer = setInterval(() => this.relistSoon('verification'), every).unref()
  }

  /** Stops: ends the watch; nothing is written to the table after it resolves (see the header). */
  async stop(): Promise<void> {
    this.stopped.abort()
    clearInterval(this.verifyTimer)
    await this.core.stop()
  }

  /** Resolves once the first complete list is in the table (rejects on abort, or when stopped first). */
  waitSynced(signal?: AbortSignal): Promise<void> {
    return this.core.waitSynced(signal)
  }

  /** Resolves once every entry received so far is in the table and the first list is; rejects on `signal` or stop. */
  settled(signal?: AbortSignal): Promise<void> {
    return this.core.settled(signal)
  }

  health(): NatsKvReflectorHealth {
    const objects = this.options.table.count(this.options.db.readTxn())
    const h = this.core.health(objects)
    return {
      name: this.name,
      bucket: this.options.bucket,
      ...h,
      state: h.state as NatsKvReflectorHealth['state'], // never 'waiting': no poll interval
      gaps: this.gaps,
      repaired: this.rows.repaired,
      revision: this.core.resumePosition ?? 0,
      objects,
    }
  }

  /** The watch ends and the next session lists (skipped entries, a verification); not before the first list. */
  private relistSoon(reason: string): void {
    if (this.core.synced) this.core.requestList(reason)
  }

  /** Ends the current watch on every reconnect, so the core resumes from the last revision + 1. */
  private watchStatus(): void {
    void (async () => {
      for await (const s of this.options.nc.status()) {
        if (this.stopped.signal.aborted) return
        if (s.type === 'reconnect') this.core.restart()
      }
    })().catch(() => {})
  }
}
