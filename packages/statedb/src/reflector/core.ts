// The one reflector core: events from a source (source.ts: a cluster's list and watch, a KV
// bucket's watch) become rows of one statedb table. The k8s Reflector and the NatsKvReflector are a
// source and a row writer each, joined by this core (kube-rs splits its watcher from its store
// writer the same way).
//
// It lives in statedb, not in the reconciler: it only writes tables (initializers, write
// transactions) with what statedb already holds (retry backoff, Logger, Lifecycle, Health), and
// knows nothing of reconciliation (no target, no status, no operation); the lowest floor with
// everything it needs is this one.
//
// Invariants:
// - sessions run one at a time: a list (the first one, a requested one, or after a resume was
//   refused) or a resume from the last position; a list replaces the rows in one transaction, which
//   also marks the table initialized the first time; buffered events it supersedes are dropped;
// - watch events are coalesced by key into transactions of at most `batchSize` keys, written at most
//   `batchDelayMs` after the first; a failed write relists (the table may miss those events);
// - a session that ends cleanly, or that fails after delivering something, resumes at once; a
//   refused resume lists at once (a relist); any other failure backs off (`retry`), forever: health
//   says what is wrong; a session that ends within a second without delivering is a failure;
// - a watch silent (no event, no bookmark) for `inactivityTimeoutMs` is ended and resumed from the
//   last position, counted and logged: nothing else notices a connection that died quietly;
// - a list asked for while a list runs comes after it (that list may predate the request);
// - nothing is written after stop() resolves; what was buffered before is written first.
// Its options are options.ts, one session (and its inactivity bound) session.ts, the batches
// batch.ts, the shared health health.ts.
import { setTimeout as sleep } from 'node:timers/promises'
import type { WriteTxn } from '../txn.ts'
import { StoppedError, UsageError } from '../errors.ts'
import type { Lifecycle } from '../lifecycle.ts'
import { logTo } from '../logger.ts'
import { backoffDelay, resolveRetry, type RetryOptions } from '../retry.ts'
import { Batcher, type PendingEvent } from './batch.ts'
import { reflectorLevel, type ReflectorCoreHealth } from './health.ts'
import type { ReflectorCoreOptions } from './options.ts'
import { Session } from './session.ts'
import type { SourceEvent } from './source.ts'

export class ReflectorCore<Item, P> implements Lifecycle {
  readonly name: string
  private readonly o: ReflectorCoreOptions<Item, P>
  private readonly retry: Required<RetryOptions>
  private readonly batcher: Batcher<Item>
  private readonly stopping = new AbortController()
  private starting: Promise<void> | undefined
  private loop: Promise<void> | undefined
  private markInitialized: ((txn: WriteTxn) => void) | undefined
  /** Stopped and flushed: nothing more is written. */
  private closed = false
  private session: Session | undefined
  private position: P | undefined
  private needList = true
  /** Why the next list is a relist (a source's request), if it is one. */
  private relistReason: string | undefined
  private pollWait: AbortController | undefined
  private listsStarted = 0
  private listsDone = 0
  private readonly listWaiters = new Set<() => void>()
  /** Unix ms of the first failure since the last success (readiness). */
  private failingSince: number | undefined
  private readonly h: Omit<ReflectorCoreHealth, 'ready' | 'level' | 'message'> = {
    state: 'new',
    synced: false,
    lastSyncAt: undefined,
    lastEventAt: undefined,
    lists: 0,
    relists: 0,
    watches: 0,
    events: 0,
    inactivityRestarts: 0,
    errors: 0,
    lastError: undefined,
  }

  constructor(opts: ReflectorCoreOptions<Item, P>) {
    this.o = opts
    this.name = opts.name
    this.retry = resolveRetry(opts.retry, `reflector ${opts.name}`)
    this.batcher = new Batcher(opts.batchSize ?? 1000, opts.batchDelayMs ?? 10, (b) => this.writeBatch(b))
  }

  /** Registers the table initializer and starts the sessions; a second call shares the first. */
  start(): Promise<void> {
    if (this.stopping.signal.aborted) return Promise.reject(new UsageError(`reflector ${this.name}: start() after stop()`))
    return (this.starting ??= this.begin())
  }

  private async begin(): Promise<void> {
    const { db, table } = this.o
    try {
      await db.write(table, (txn) => {
        this.markInitialized = table.registerInitializer(txn, this.o.initializer ?? this.name)
      })
    } catch (err) {
      this.starting = undefined // a start that failed may be tried again
      throw err
    }
    if (!this.stopping.signal.aborted) this.loop = this.run()
  }

  /** Ends the session, writes what is buffered, and resolves when nothing is left running. */
  async stop(): Promise<void> {
    this.stopping.abort(new StoppedError(`reflector ${this.name} stopped`))
    this.pollWait?.abort()
    await this.starting?.catch(() => {})
    const loop = this.loop?.catch(() => {})
    const grace = this.o.stopGraceMs
    if (grace === undefined) await loop
    else await Promise.race([loop, sleep(grace, undefined, { ref: false })])
    await this.batcher.flush()
    this.closed = true
    this.o.hooks?.up?.(false)
  }

  /** Whether the first complete list is in the table. */
  get synced(): boolean {
    return this.h.synced
  }

  /** Where the next resume starts (a resourceVersion, a revision); undefined before the first list. */
  get resumePosition(): P | undefined {
    return this.position
  }

  /** The shared part of the health; `objects` is the rows this reflector owns now. */
  health(objects = 0): ReflectorCoreHealth {
    const now = Date.now()
    const state = this.closed ? 'stopped' : this.h.state
    // a watch open for a second is working (a server that closes at once is not), events or not
    const at = this.session?.connectedAt
    const steady = at !== undefined && now - at >= 1000
    const lost = !steady && this.failingSince !== undefined && now - this.failingSince >= (this.o.lostAfterMs ?? 15_000)
    const ready = this.h.synced && state !== 'stopped' && !lost
    const { level, message } = reflectorLevel(state, this.failingSince !== undefined || lost, this.h.lastError, objects)
    return { ...this.h, state, level, message, ready }
  }

  /** Resolves after the first complete list is in the table and the table is initialized (rejects on abort or stop). */
  async waitSynced(signal?: AbortSignal): Promise<void> {
    const s = this.until(signal)
    for (;;) {
      const [ok, w] = this.o.table.initialized(this.o.db.readTxn())
      if (ok && this.h.synced) return
      s.throwIfAborted()
      if (ok) await this.nextList(s)
      else await w.wait(s)
    }
  }

  /**
   * Resolves once everything received so far is in the table and the first list is done; rejects
   * when `signal` aborts or the reflector stops.
   */
  async settled(signal?: AbortSignal): Promise<void> {
    const s = this.until(signal)
    while (!this.h.synced) {
      s.throwIfAborted()
      await this.nextList(s)
    }
    s.throwIfAborted()
    await untilAborted(this.batcher.flush(), s)
  }

  /**
   * Lists again now and resolves once a list started after the call is in the table. Rejects on
   * `signal` or stop.
   */
  async refresh(signal?: AbortSignal): Promise<void> {
    const want = this.listsStarted + 1
    this.requestList()
    const s = this.until(signal)
    while (this.listsDone < want) {
      s.throwIfAborted()
      await this.nextList(s)
    }
  }

  /**
   * The next session lists: at once when watching (the watch ends), after the list under way when
   * listing. `relist` (a reason) counts it as a relist forced by the source.
   */
  requestList(relist?: string): void {
    if (this.stopping.signal.aborted) return
    this.needList = true
    if (relist !== undefined) this.relistReason ??= relist
    this.pollWait?.abort()
    if (this.session && !this.session.listing) this.session.ctrl.abort()
  }

  /** Ends the session and resumes from the last position (a reconnect the source saw). */
  restart(): void {
    this.session?.ctrl.abort()
  }

  /** One object's failure (a transform, a value that does not decode): counted and logged, never degrades. */
  objectFailed(err: Error, msg = 'object skipped'): void {
    this.count(err)
    logTo(this.o.logger, 'warn', { err, reflector: this.name, ...this.o.logFields }, msg)
  }

  // ---- the loop ----

  private async run(): Promise<void> {
    const stop = this.stopping.signal
    let failures = 0
    while (!stop.aborted) {
      if (this.o.pollIntervalMs !== undefined && this.h.synced && !this.needList) await this.pause(this.o.pollIntervalMs)
      if (stop.aborted) break
      const listing = this.needList || this.o.pollIntervalMs !== undefined
      const s = new Session(listing, listing ? ++this.listsStarted : 0)
      if (listing) {
        this.needList = false
        if (this.relistReason !== undefined) {
          this.relistReason = undefined
          this.h.relists++
          this.o.hooks?.relisted?.()
        }
      }
      this.session = s
      this.h.state = listing ? 'listing' : 'watching'
      let failure: Error | undefined
      try {
        const signal = AbortSignal.any([stop, s.ctrl.signal])
        const listNext = (refused?: string) => {
          this.needList = true
          s.refused ??= refused
        }
        const events = this.o.source.session(listing ? undefined : this.position, { signal, listNext })
        for await (const ev of events) {
          if (signal.aborted) break
          await this.handle(s, ev)
        }
        const openMs = s.connectedAt === undefined ? 0 : Date.now() - s.connectedAt
        if (!signal.aborted && !s.refused && !s.progressed && openMs < 1000)
          failure = this.o.error('the watch closed at once without events')
      } catch (err) {
        if (stop.aborted) break
        // ended by us (a list asked for, a silent watch, a reconnect) or a refused resume: at once
        if (!s.ctrl.signal.aborted && !s.refused) failure = err as Error
      }
      if (s.refused !== undefined && !s.ctrl.signal.aborted) this.relistReason ??= s.refused
      this.endSession(s, failure)
      if (s.progressed || !failure) failures = 0
      if (failure && !s.progressed && !stop.aborted) {
        this.h.state = 'backoff'
        await sleep(backoffDelay(++failures, this.retry), undefined, { signal: stop }).catch(() => {})
      }
    }
  }

  private endSession(s: Session, failure: Error | undefined): void {
    s.end()
    if (s.listing) this.needList = true // its list never came
    // a failure after progress resumes at once, counted
    if (failure) this.failed(failure)
    // a watch that stayed open for a second worked, however it ended
    if (s.connectedAt !== undefined && Date.now() - s.connectedAt >= 1000) this.failingSince = undefined
    if (this.session === s) this.session = undefined
    if (s.connectedAt !== undefined) this.o.hooks?.up?.(false)
  }

  private async handle(s: Session, ev: SourceEvent<Item, P>): Promise<void> {
    switch (ev.type) {
      case 'list':
        return this.writeList(s, ev.items, ev.position)
      case 'watch':
        this.h.state = 'watching'
        return this.bound(s)
      case 'connected':
        s.connectedAt = Date.now()
        this.h.watches++
        this.o.hooks?.up?.(true)
        if (!s.listing) this.bound(s) // a list by watch (NATS) is bounded from its 'watch' on
        return
      case 'bookmark':
        if (ev.position !== undefined) this.position = ev.position
        return this.alive(s)
      default: {
        if (s.listing) return // a source that breaks the order: the list will carry it
        this.h.events++
        this.alive(s)
        const p = this.batcher.add(ev.key, { type: ev.type, object: ev.item })
        if (ev.position !== undefined) this.position = ev.position
        if (p) await p
      }
    }
  }

  private async writeList(s: Session, items: Iterable<Item>, position: P): Promise<void> {
    const { db, table } = this.o
    await this.batcher.discard() // the list supersedes every buffered event
    await db.write(table, (txn) => {
      if (this.closed) return txn.abort()
      this.o.rows.replace(txn, items, position)
      if (!this.h.synced) this.markInitialized?.(txn)
    })
    this.position = position
    s.listing = false
    s.progressed = true
    this.failingSince = undefined
    this.h.synced = true
    this.h.lists++
    this.h.lastSyncAt = Date.now()
    this.h.state = 'watching'
    this.listsDone = Math.max(this.listsDone, s.seq)
    for (const w of [...this.listWaiters]) w()
    this.o.hooks?.listed?.()
    this.o.hooks?.written?.('list')
    if (this.needList) s.ctrl.abort() // a list was asked for while this one ran: list again
  }

  /** Writes one coalesced batch of watch events. Never throws (a failure relists). */
  private async writeBatch(batch: Map<string, PendingEvent<Item>>): Promise<void> {
    try {
      await this.o.db.write(this.o.table, (txn) => {
        if (this.closed) return txn.abort()
        this.o.rows.apply(txn, batch)
      })
      this.o.hooks?.written?.('batch')
    } catch (err) {
      this.failed(this.o.error(`write of ${batch.size} objects failed: ${(err as Error).message}`, err))
      this.requestList() // the table may miss these events: relist to be sure, now
    }
  }

  /** The watch phase began: silence from now on is bounded (a connection may die quietly). */
  private bound(s: Session): void {
    s.watch(this.o.inactivityTimeoutMs, (silentMs) => {
      if (this.stopping.signal.aborted) return // stopping anyway
      this.h.inactivityRestarts++
      this.o.hooks?.inactive?.()
      const fields = { reflector: this.name, ...this.o.logFields, silentMs, resumeFrom: this.position }
      logTo(this.o.logger, 'warn', fields, 'watch silent for too long; restarting it from the last position')
    })
  }

  private alive(s: Session): void {
    s.alive()
    this.failingSince = undefined
    this.h.lastEventAt = Date.now()
  }

  // ---- failures and waits ----

  private failed(err: Error): void {
    this.failingSince ??= Date.now()
    this.count(err)
    this.o.hooks?.up?.(false)
    logTo(this.o.logger, 'warn', { err, reflector: this.name, ...this.o.logFields }, 'list/watch failed; retrying with backoff')
  }

  private count(err: Error): void {
    this.h.errors++
    this.h.lastError = err.message
    this.o.hooks?.failed?.()
  }

  private async pause(ms: number): Promise<void> {
    this.h.state = 'waiting'
    const w = new AbortController() // a requested list ends the wait
    this.pollWait = w
    await sleep(ms, undefined, { signal: AbortSignal.any([this.stopping.signal, w.signal]) }).catch(() => {})
    this.pollWait = undefined
  }

  /** `signal` and the reflector's stop, either of which ends a wait. */
  private until(signal: AbortSignal | undefined): AbortSignal {
    return signal ? AbortSignal.any([signal, this.stopping.signal]) : this.stopping.signal
  }

  /** Resolves at the next list written, or when `s` aborts. */
  private nextList(s: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.listWaiters.delete(done)
        s.removeEventListener('abort', done)
        resolve()
      }
      this.listWaiters.add(done)
      s.addEventListener('abort', done, { once: true })
    })
  }
}

/** `p`, or a rejection with the signal's reason once it aborts first. */
function untilAborted<T>(p: Promise<T>, s: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(s.reason)
    s.addEventListener('abort', onAbort, { once: true })
    p.then(resolve, reject).finally(() => s.removeEventListener('abort', onAbort))
  })
}
