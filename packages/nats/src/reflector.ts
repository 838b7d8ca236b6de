// A reflector mirrors one NATS JetStream key-value bucket into a statedb table, with the k8s
// Reflector's semantics:
// - the initial values (a watch of the last value per key, up to the entry whose `delta` is 0, or
//   nothing at all when the bucket's status says it holds no values) go into the table in ONE
//   transaction, which also marks the table initialized;
// - later entries are coalesced into write transactions (one per burst of entries);
// - after a reconnect (or a watch that ends) it watches again from the last revision + 1;
// - when history was lost (the stream's first sequence is past the resume point, the stream went
//   backwards, or it is a different stream) it relists and replaces the table in one transaction;
// - a watch whose revisions jump is checked against the stream (gaps.ts): a message still stored in
//   the gap was skipped (nats-server 2.9.10 does this around purges), and it relists at once;
// - every `verifyIntervalMs` it relists anyway (the source of truth, not the stream, decides): a
//   relist writes only rows whose revision changed, so an idle check costs the list and nothing more;
// - how entries become rows (DEL and PURGE delete the row; a value that does not decode is an error
//   naming bucket, key and revision, that row is skipped and the reflector keeps running) is
//   reflector-rows.ts;
// - a missing bucket (or any other failure) is retried with exponential backoff, forever; health()
//   says what is wrong.
import { BucketError, ConfigError, DecodeError, UsageError } from './errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv'
import { skippedInRange } from './gaps.ts'
import { backoffDelay, resolveRetry, type RetryOptions, type WriteTxn } from '@statewright/statedb'
import { logTo } from '@statewright/statedb'
import type { KvRow, NatsKvReflectorOptions } from './reflector-options.ts'
import { natsReflectorLevel, type NatsKvReflectorHealth } from './reflector-health.ts'
import { KvReflectedRows } from './reflector-rows.ts'

/** Why the watch loop ended: a reconnect (resume), stop, or a failure. */
class Interrupted extends Error {}

export class NatsKvReflector<V = unknown, Obj = KvRow<V>> {
  readonly name: string
  private readonly options: NatsKvReflectorOptions<V, Obj>
  private readonly retry: Required<RetryOptions>
  private readonly rows: KvReflectedRows<V, Obj>
  private readonly stopper = new AbortController()
  private loop: Promise<void> | undefined
  private markInitialized: ((txn: WriteTxn) => void) | undefined
  private watcher: { stop(): void } | undefined
  private streamCreated: string | undefined
  private rev = 0
  private initialized = false
  private readonly h: Omit<NatsKvReflectorHealth, 'objects' | 'name' | 'bucket' | 'ready' | 'revision' | 'level' | 'message'> = {
    state: 'new',
    synced: false,
    lastSyncAt: undefined,
    lastEventAt: undefined,
    lists: 0,
    relists: 0,
    gaps: 0,
    repaired: 0,
    watches: 0,
    events: 0,
    errors: 0,
    lastError: undefined,
  }
  /** Set by a skipped entry or a verification: the loop's next round lists. */
  private relistWanted: string | undefined
  /** The next revision the current watch should deliver (gap detection). */
  private expect = 0
  private gapCheck: Promise<void> = Promise.resolve()
  private verifyTimer: NodeJS.Timeout | undefined
  private syncedWaiters: Array<() => void> = []

  constructor(opts: NatsKvReflectorOptions<V, Obj>) {
    if (!opts.nc) throw new ConfigError('NatsKvReflector: nc (a NATS connection) is missing')
    if (!opts.bucket) throw new ConfigError('NatsKvReflector: bucket is missing')
    if (!opts.db || !opts.table) throw new ConfigError(`NatsKvReflector of bucket "${opts.bucket}": db and table are required`)
    this.options = opts
    this.retry = resolveRetry(opts.retry, `NatsKvReflector of bucket "${opts.bucket}"`)
    this.name = opts.name ?? `nats/${opts.bucket}`
    this.rows = new KvReflectedRows(opts, (err) => this.fail(err))
  }

  /** Registers the table initializer and starts listing and watching. */
  async start(): Promise<this> {
    if (this.loop) throw new UsageError(`reflector ${this.name}: already started`)
    const txn = await this.options.db.writeTxn(this.options.table)
    this.markInitialized = this.options.table.registerInitializer(txn, this.name)
    txn.commit()
    this.loop = this.run()
    this.watchStatus()
    const every = this.options.verifyIntervalMs ?? 300_000
    if (every > 0) {
      this.verifyTimer = setInterval(() => this.relistSoon('verification'), every)
      this.verifyTimer.unref()
    }
    return this
  }

  /** Ends the current watch so that the loop lists again (skipped entries, a verification). */
  private relistSoon(reason: string): void {
    if (this.stopper.signal.aborted || !this.initialized) return
    this.relistWanted ??= reason
    this.watcher?.stop()
  }

  /** Called for every entry a watch delivers after its initial values: checks the gap before it, if any. */
  private sequence(rev: number): void {
    const from = this.expect
    this.expect = rev + 1
    if (from === 0 || rev <= from) return
    const to = rev - 1
    const keys = this.options.keys === undefined ? undefined : [this.options.keys].flat()
    this.gapCheck = this.gapCheck.then(async () => {
      if (this.stopper.signal.aborted) return
      // a filtered watch skips other keys' messages: only a small range is worth probing
      if (keys && to - from + 1 > 256) return
      if (await skippedInRange(this.options.nc, this.options.bucket, from, to, keys, { timeoutMs: this.options.requestTimeoutMs })) {
        this.h.gaps++
        this.fail(
          new BucketError(`bucket "${this.options.bucket}": the watch skipped entries between revisions ${from} and ${to}; relisting`),
        )
        this.relistSoon('skipped entries')
      }
    })
  }

  /** Resolves once the first complete list is in the table. */
  waitSynced(signal?: AbortSignal): Promise<void> {
    if (this.h.synced) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const done = () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      const onAbort = () => {
        this.syncedWaiters = this.syncedWaiters.filter((w) => w !== done)
        reject(signal!.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.syncedWaiters.push(done)
    })
  }

  /**
   * Stops: ends the watch and waits for the loop, but not for a JetStream request in flight (after
   * a lost connection one can take the client's request timeout): its result is dropped, nothing
   * is written to the table after stop() resolves.
   */
  async stop(): Promise<void> {
    this.stopper.abort()
    clearInterval(this.verifyTimer)
    this.watcher?.stop()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.loop?.catch(() => {}),
      new Promise<void>((r) => {
        timer = setTimeout(r, 100)
      }),
    ])
    clearTimeout(timer)
    this.h.state = 'stopped'
    this.options.metrics?.set('watching', this.labels(), 0)
  }

  health(): NatsKvReflectorHealth {
    const objects = this.options.table.count(this.options.db.readTxn())
    return {
      name: this.name,
      bucket: this.options.bucket,
      ...this.h,
      ...natsReflectorLevel(this.h.state, this.h.lastError, objects),
      ready: this.h.synced && this.h.state !== 'stopped',
      revision: this.rev,
      objects,
    }
  }

  // ---- the loop ----

  /** Ends the current watch on every reconnect, so the loop resumes from the last revision + 1. */
  private watchStatus(): void {
    void (async () => {
      for await (const s of this.options.nc.status()) {
        if (this.stopper.signal.aborted) return
        if (s.type === 'reconnect') this.watcher?.stop()
      }
    })().catch(() => {})
  }

  private async run(): Promise<void> {
    const retry = this.retry
    let attempt = 0
    const signal = this.stopper.signal
    while (!signal.aborted) {
      try {
        const kv = await new Kvm(this.options.nc).open(
          this.options.bucket,
          this.options.requestTimeoutMs ? { timeout: this.options.requestTimeoutMs } : {},
        )
        const st = await kv.status().catch((err: Error) => {
          throw new BucketError(
            `bucket "${this.options.bucket}": ${/stream not found/i.test(err.message) ? 'bucket not found' : err.message}`,
          )
        })
        const state = st.streamInfo.state
        const created = st.streamInfo.created
        const resume = this.rev + 1
        const lost = this.initialized && (created !== this.streamCreated || state.first_seq > resume || state.last_seq < this.rev)
        const wanted = this.relistWanted
        this.relistWanted = undefined
        if (!this.initialized || lost || wanted) {
          if (lost || wanted) {
            this.h.relists++
            this.options.metrics?.inc('relists', this.labels())
          }
          this.streamCreated = created
          attempt = 0
          await this.listAndWatch(kv, st.values === 0, state.last_seq)
        } else {
          attempt = 0
          await this.watchFrom(kv, resume)
        }
      } catch (err) {
        if (signal.aborted) break
        if (!(err instanceof Interrupted)) {
          this.fail(err as Error)
          this.h.state = 'backoff'
          const d = backoffDelay(++attempt, retry)
          await sleep(d, undefined, { signal }).catch(() => {})
        }
      }
    }
    this.h.state = 'stopped'
    this.options.metrics?.set('watching', this.labels(), 0)
  }

  private labels() {
    return { reflector: this.name, bucket: this.options.bucket }
  }

  private fail(err: Error): void {
    this.h.errors++
    this.h.lastError = err.message
    this.options.metrics?.inc('errors', this.labels())
    logTo(
      this.options.logger,
      'warn',
      { err, reflector: this.name, bucket: this.options.bucket },
      err instanceof DecodeError ? 'entry skipped' : 'watch failed; retrying with backoff',
    )
  }

  /** A relist: the last value of every key, into the table in one transaction; then the updates. */
  private async listAndWatch(kv: KV, empty: boolean, lastSeq: number): Promise<void> {
    this.h.state = 'listing'
    const keyFilter = this.options.keys
    if (!empty && keyFilter !== undefined) {
      // a filtered watch of a bucket with no matching key delivers nothing: find out first
      const it = await kv.keys(keyFilter)
      empty = true
      for await (const _ of it) {
        empty = false
        it.stop()
        break
      }
    }
    const initial = new Map<string, KvWatchEntry>()
    let listed = false
    const w = await kv.watch({ key: keyFilter })
    this.watcher = w
    if (this.stopper.signal.aborted) w.stop() // stopped while the watch was being made
    this.h.watches++
    // the resume point of an empty list is the stream's last sequence; else the newest entry listed
    let maxRev = empty ? lastSeq : 0
    const finishList = async () => {
      listed = true
      await this.replace(initial.values(), maxRev)
      initial.clear()
      this.expect = maxRev + 1 // from here on the watch delivers every message of its keys
    }
    if (empty) await finishList()
    const pending: KvWatchEntry[] = []
    let flushing: Promise<void> | undefined
    const flush = async () => {
      while (pending.length) {
        const batch = pending.splice(0, pending.length)
        await this.apply(batch)
      }
      flushing = undefined
    }
    for await (const e of w) {
      if (!listed) {
        initial.set(e.key, e)
        if (e.revision > maxRev) maxRev = e.revision
        if (e.delta === 0 || e.isUpdate) await finishList()
        continue
      }
      this.sequence(e.revision)
      pending.push(e)
      flushing ??= new Promise<void>((r) => setImmediate(r)).then(flush)
    }
    await flushing
    if (!listed) throw new BucketError(`bucket "${this.options.bucket}": the watch ended before the initial values were complete`)
    throw new Interrupted()
  }

  /** A resumed watch: every entry from `from` on, history included. */
  private async watchFrom(kv: KV, from: number): Promise<void> {
    const w = await kv.watch({ key: this.options.keys, include: 'history', resumeFromRevision: from })
    this.watcher = w
    if (this.stopper.signal.aborted) w.stop()
    this.h.watches++
    this.h.state = 'watching'
    this.expect = from
    this.options.metrics?.set('watching', this.labels(), 1)
    const pending: KvWatchEntry[] = []
    let flushing: Promise<void> | undefined
    const flush = async () => {
      while (pending.length) await this.apply(pending.splice(0, pending.length))
      flushing = undefined
    }
    for await (const e of w) {
      this.sequence(e.revision)
      pending.push(e)
      flushing ??= new Promise<void>((r) => setImmediate(r)).then(flush)
    }
    await flushing
    throw new Interrupted()
  }

  /** Replaces the table's contents with the listed entries, in one transaction that also initializes it. */
  private async replace(entries: Iterable<KvWatchEntry>, maxRev: number): Promise<void> {
    const t = this.options.table
    const txn = await this.options.db.writeTxn(t)
    if (this.stopper.signal.aborted) return txn.abort() // stopped: nothing more is written
    let changed: number
    try {
      changed = this.rows.replace(txn, entries)
      this.markInitialized?.(txn)
      this.markInitialized = undefined
      txn.commit()
    } catch (err) {
      txn.abort()
      throw err
    }
    if (this.initialized && changed > 0) {
      this.h.repaired += changed
      logTo(
        this.options.logger,
        'warn',
        { reflector: this.name, bucket: this.options.bucket, rows: changed },
        'a relist found rows the watch had not delivered',
      )
    }
    this.rev = maxRev
    this.initialized = true
    this.h.lists++
    this.h.lastSyncAt = Date.now()
    this.h.state = 'watching'
    this.options.metrics?.inc('lists', this.labels())
    this.options.metrics?.set('watching', this.labels(), 1)
    this.options.metrics?.set('objects', this.labels(), t.count(this.options.db.readTxn()))
    if (!this.h.synced) {
      this.h.synced = true
      for (const w of this.syncedWaiters.splice(0)) w()
    }
  }

  /** Applies a burst of entries in one transaction. */
  private async apply(batch: KvWatchEntry[]): Promise<void> {
    if (batch.length === 0) return
    const t = this.options.table
    const txn = await this.options.db.writeTxn(t)
    if (this.stopper.signal.aborted) return txn.abort()
    let maxRev = this.rev
    try {
      for (const e of batch) {
        if (e.revision <= this.rev) continue // already applied (a resume that overlapped)
        if (e.revision > maxRev) maxRev = e.revision
        this.h.events++
        this.options.metrics?.inc('events', { ...this.labels(), op: e.operation })
        this.rows.apply(txn, e)
      }
      txn.commit()
    } catch (err) {
      txn.abort()
      throw err
    }
    this.rev = maxRev
    this.h.lastEventAt = Date.now()
    this.options.metrics?.set('revision', this.labels(), maxRev)
  }
}
