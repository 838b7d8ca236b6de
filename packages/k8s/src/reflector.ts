// A reflector mirrors one kind of one cluster into a statedb table, with client-go's reflector
// semantics:
// - a paginated list, replacing the table's contents in one transaction (insert what is there,
//   delete what is gone), then a watch from the list's resourceVersion with bookmarks and a
//   randomized server-side timeout; a watch that ends resumes from the last version seen;
// - 410 Gone / Expired (HTTP status or ERROR event, or an expired continue token) relists;
// - any other failure is retried with exponential backoff (`retry`, statedb's backoffDelay: the
//   shared default, jittered), forever: the reflector never stops by itself, its health says what is
//   wrong; an attempt that made progress (a list, a watch that resumed) starts the backoff over;
// - watch events are coalesced by object (the latest wins) into write transactions of at most
//   `batchSize` objects, written at most `batchDelayMs` after the first event of a batch;
// - the table is initialized (statedb initializer) after the first complete list, in the same
//   transaction; how listed and watched objects become rows is reflector-rows.ts;
// - state-of-world mode: no watch, a full list replacing the table every `intervalMs`.
// This file is the list/watch loop, one state machine (resourceVersion, selector, refreshes, health
// counters), and stays at ~400 lines for it; its options, rows, health, batching, paging and event
// decoding are beside it (reflector-options.ts, reflector-rows.ts, reflector-health.ts, batch.ts,
// list.ts, ndjson.ts).
import { ReflectorError, StoppedError, UsageError } from './errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import type { RetryOptions, WriteTxn } from '@statewright/statedb'
import { backoffDelay, resolveRetry } from '@statewright/statedb'
import { ApiError, isGone } from './api-error.ts'
import { collectionPath, namespacedName, resolveKind, type KubeObject, type ResourceRef } from './gvk.ts'
import { LineDecoder, parseEvent } from './ndjson.ts'
import { listAll } from './list.ts'
import { Batcher, type Pending } from './batch.ts'
import { logTo } from '@statewright/statedb'
import type { ReflectorOptions } from './reflector-options.ts'
import { reflectorLevel, type ReflectorHealth } from './reflector-health.ts'
import { ReflectedRows } from './reflector-rows.ts'

/** A Status that says "Too large resource version" (504 Timeout, cause ResourceVersionTooLarge). */
function isTooLargeResourceVersion(st: any): boolean {
  if (st?.code !== 504 && st?.reason !== 'Timeout') return false
  const causes: Array<{ reason?: string }> = Array.isArray(st?.details?.causes) ? st.details.causes : []
  return causes.some((c) => c?.reason === 'ResourceVersionTooLarge') || /too large resource version/i.test(String(st?.message ?? ''))
}

class Relist extends Error {
  override name = 'Relist'
}

export class Reflector<Obj = KubeObject> {
  readonly name: string
  private readonly options: ReflectorOptions<Obj>
  private readonly retry: Required<RetryOptions>
  private readonly rows: ReflectedRows<Obj>
  private readonly batcher: Batcher<KubeObject>
  private ctrl = new AbortController()
  private loop: Promise<void> | undefined
  private markInitialized: ((txn: WriteTxn) => void) | undefined
  private resource: ResourceRef | undefined
  private rv: string | undefined
  private needList = true
  private endWatch: (() => void) | undefined
  /** Unix ms of the first failure since the last successful list or watch (readiness). */
  private failingSince: number | undefined
  /** Unix ms the current watch connection opened (undefined: no watch open). */
  private watchingSince: number | undefined
  private readonly h: Omit<ReflectorHealth, 'objects' | 'name' | 'cluster' | 'ready' | 'level' | 'message'> = {
    state: 'new',
    synced: false,
    lastSyncAt: undefined,
    lastEventAt: undefined,
    resourceVersion: undefined,
    lists: 0,
    relists: 0,
    watches: 0,
    events: 0,
    errors: 0,
    lastError: undefined,
  }

  constructor(opts: ReflectorOptions<Obj>) {
    this.options = opts
    this.labelSelector = opts.labelSelector
    this.name = opts.name ?? `${opts.cluster.name}/${opts.kind.kind}`
    this.retry = resolveRetry(opts.retry, `reflector ${this.name}`)
    this.rows = new ReflectedRows(opts, this.name, (err) => this.failed(err, true))
    this.batcher = new Batcher(opts.batchSize ?? 1000, opts.batchDelayMs ?? 10, (b) => this.writeBatch(b))
  }

  /** Registers the table initializer and starts listing and watching. Resolves once started. */
  async start(): Promise<void> {
    if (this.loop) throw new UsageError(`reflector ${this.name}: already started`)
    const txn = await this.options.db.writeTxn(this.options.table)
    try {
      this.markInitialized = this.options.table.registerInitializer(txn, `reflector:${this.name}`)
      txn.commit()
    } catch (err) {
      txn.abort()
      throw err
    }
    this.loop = this.run()
  }

  /** The label selector of the next list and watch (options.labelSelector until setLabelSelector). */
  private labelSelector: string | undefined

  /** The label selector the reflector lists and watches with now. */
  get currentLabelSelector(): string | undefined {
    return this.labelSelector
  }

  /**
   * Reflects the objects `selector` selects from now on (a sharded replica narrowing its cache to the
   * shards it holds): the running watch ends and the next list replaces the table's objects with the
   * ones selected. Nothing happens when the selector is the current one.
   */
  setLabelSelector(selector: string | undefined): void {
    if (selector === this.labelSelector) return
    this.labelSelector = selector
    this.needList = true
    this.endWatch?.()
  }

  /** Lists started, the last list completed, and the list a refresh waits for (see refresh). */
  private listsStarted = 0
  private listsDone = 0
  private refreshWanted = 0
  private readonly listWaiters = new Set<() => void>()

  /**
   * Lists again now (a consistent read: the server answers from its store, not a cache), replaces the
   * table with what it returns and resolves once that is written: from then on the table holds every
   * change made before the call. A new leader or shard holder calls it before it writes, so that it
   * never acts on a cache older than what the previous holder acted on. Rejects on `signal` or stop.
   */
  async refresh(signal?: AbortSignal): Promise<void> {
    const want = this.listsStarted + 1
    this.refreshWanted = Math.max(this.refreshWanted, want)
    this.needList = true
    this.endWatch?.()
    const s = signal ? AbortSignal.any([signal, this.ctrl.signal]) : this.ctrl.signal
    while (this.listsDone < want) {
      s.throwIfAborted()
      await new Promise<void>((resolve) => {
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

  /** Stops watching, writes what is buffered and resolves when nothing is left running. */
  async stop(): Promise<void> {
    this.ctrl.abort(new StoppedError(`reflector ${this.name} stopped`))
    await this.loop
    await this.batcher.flush()
    this.h.state = 'stopped'
    this.gauge('up', 0)
  }

  /** Resolves after the first complete list is in the table (rejects on abort, or when stopped first). */
  async waitSynced(signal?: AbortSignal): Promise<void> {
    // A stopped reflector never syncs: waiting on its own signal too keeps callers from hanging.
    const s = signal ? AbortSignal.any([signal, this.ctrl.signal]) : this.ctrl.signal
    for (;;) {
      const [ok, w] = this.options.table.initialized(this.options.db.readTxn())
      if (ok && this.h.synced) return
      s.throwIfAborted()
      if (ok) await sleep(5, undefined, { signal: s })
      else await w.wait(s)
    }
  }

  health(): ReflectorHealth {
    const objects = this.rows.count(this.options.db.readTxn())
    const now = Date.now()
    // a watch open for a second is working (a server that closes at once is not), events or not
    const steady = this.watchingSince !== undefined && now - this.watchingSince >= 1000
    const lost = !steady && this.failingSince !== undefined && now - this.failingSince >= (this.options.lostAfterMs ?? 15_000)
    const ready = this.h.synced && this.h.state !== 'stopped' && !lost
    const { level, message } = reflectorLevel(this.h.state, this.failingSince !== undefined || lost, this.h.lastError, objects)
    return { name: this.name, cluster: this.options.cluster.name, ...this.h, level, message, ready, resourceVersion: this.rv, objects }
  }

  // ---- the loop ----

  private async run(): Promise<void> {
    const signal = this.ctrl.signal
    let failures = 0
    while (!signal.aborted) {
      try {
        // One attempt makes progress or throws; consecutive failures back off exponentially.
        await this.attempt()
        failures = 0
      } catch (err) {
        if (signal.aborted) break
        this.failed(err as Error)
        this.h.state = 'backoff'
        await sleep(backoffDelay(++failures, this.retry), undefined, { signal }).catch(() => {})
      }
    }
  }

  /** `object`: one object's error (a transform, a refused insert), which never makes the reflector unready. */
  private failed(err: Error, object = false): void {
    if (!object) this.failingSince ??= Date.now()
    this.h.errors++
    this.h.lastError = err.message
    this.count('errors')
    this.gauge('up', 0)
    logTo(
      this.options.logger,
      'warn',
      { err, reflector: this.name, cluster: this.options.cluster.name, kind: `${this.options.kind.kind}.${this.options.kind.apiVersion}` },
      object ? 'object skipped' : 'list/watch failed; retrying with backoff',
    )
  }

  /** One step: a list if needed, then one watch (or one state-of-world pause). Throws on no progress. */
  private async attempt(): Promise<void> {
    const signal = this.ctrl.signal
    try {
      if (!this.resource) this.resource = await resolveKind(this.options.cluster, this.options.kind)
      if (this.options.stateOfWorld) {
        if (!this.needList) {
          this.h.state = 'waiting'
          const wait = new AbortController() // a refresh ends the wait
          this.endWatch = () => wait.abort()
          await sleep(this.options.stateOfWorld.intervalMs, undefined, { signal: AbortSignal.any([signal, wait.signal]) }).catch((err) => {
            if (signal.aborted) throw err
          })
        }
        this.needList = true
        await this.listAndReplace()
        return
      }
      if (this.needList) {
        await this.listAndReplace()
        return
      }
      await this.watch()
    } catch (err) {
      if (signal.aborted) return
      const tooLarge = err instanceof ApiError && err.code === 504 && /too large resource version/i.test(err.message)
      if (err instanceof Relist || isGone(err) || tooLarge) {
        // The version we resume from is gone (or not there yet: the server went back in time): relist
        // at once (not a failure to back off from).
        this.needList = true
        this.h.relists++
        if (!(err instanceof Relist)) this.h.lastError = (err as Error).message
        return
      }
      // A server we could not reach may come back with another history (a restart on the same
      // address, a restore), where our version means nothing: list again once it answers.
      if (err instanceof ApiError && err.code === 0 && err.reason === 'ECONNREFUSED') this.needList = true
      // health and logs show it as the reflector's failure, with the cause kept
      throw err instanceof ApiError
        ? err
        : new ReflectorError(`reflector ${this.name}: ${(err as Error)?.message ?? String(err)}`, { cause: err })
    }
  }

  private async listAndReplace(): Promise<void> {
    const r = this.resource!
    this.h.state = 'listing'
    const selector = this.labelSelector
    const seq = ++this.listsStarted
    const { items, resourceVersion: rv } = await listAll(this.options.cluster, r, {
      namespace: this.options.namespace,
      labelSelector: selector,
      fieldSelector: this.options.fieldSelector,
      pageSize: this.options.pageSize,
      signal: this.ctrl.signal,
    })
    await this.batcher.discard() // the list supersedes every buffered event
    await this.replace(items)
    this.rv = rv
    // the selector changed, or a refresh came, during the list: list again
    this.needList = selector !== this.labelSelector || this.refreshWanted > seq
    this.listsDone = seq
    for (const w of [...this.listWaiters]) w()
    this.h.lists++
    this.h.lastSyncAt = Date.now()
    this.count('lists')
    this.options.metrics?.reflectorLastSync.set(this.labels(), this.h.lastSyncAt / 1000)
  }

  /** One transaction: the listed objects in, everything else this reflector owns out. */
  private async replace(items: KubeObject[]): Promise<void> {
    const { db, table } = this.options
    await db.write(table, (txn) => {
      this.rows.replace(txn, items)
      if (!this.h.synced && this.markInitialized) this.markInitialized(txn)
    })
    this.h.synced = true
    this.failingSince = undefined
    this.gauge('objects', this.rows.count(db.readTxn()))
  }

  private async watch(): Promise<void> {
    const r = this.resource!
    const base = this.options.watchTimeoutSeconds ?? 300
    const timeoutSeconds = Math.floor(base * (1 + Math.random()))
    this.h.state = 'watching'
    // A failed table write ends the watch early (relistWatch) so that the relist comes at once.
    const wctrl = new AbortController()
    this.endWatch = () => wctrl.abort()
    const signal = AbortSignal.any([this.ctrl.signal, wctrl.signal])
    const res = await this.options.cluster.stream({
      path: collectionPath(r, this.options.namespace),
      query: {
        watch: 1,
        resourceVersion: this.rv,
        allowWatchBookmarks: true,
        timeoutSeconds,
        labelSelector: this.labelSelector,
        fieldSelector: this.options.fieldSelector,
      },
      signal,
      what: `watch ${r.kind}`,
      deadlineMs: timeoutSeconds * 1000 + 30_000,
    })
    this.h.watches++
    this.watchingSince = Date.now()
    this.gauge('up', 1)
    const started = Date.now()
    let progressed = false
    const lines = new LineDecoder()
    try {
      for await (const chunk of res) {
        for (const line of lines.push(chunk as Buffer)) {
          if (await this.onLine(line)) {
            progressed = true
            this.failingSince = undefined
          } // a watch that delivers is not lost
        }
      }
      for (const line of lines.end()) if (await this.onLine(line)) progressed = true
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof Relist) throw err
      if (progressed) {
        // It worked for a while: count the failure, resume at once from the last version.
        this.failed(new ApiError(`watch ${r.kind}: ${(err as Error).message}`, 0, 'WatchBroken'))
        return
      }
      throw err
    } finally {
      res.destroy()
      if (this.watchingSince !== undefined && Date.now() - this.watchingSince >= 1000) this.failingSince = undefined
      this.watchingSince = undefined
      this.gauge('up', 0)
    }
    // A clean end (server timeout, or the server closing watches): resume from the last version.
    if (!progressed && Date.now() - started < 1000) {
      throw new ApiError(`watch ${r.kind}: closed at once without events`, 0, 'WatchClosed')
    }
  }

  /** Handles one watch line; true when it was progress (an event or bookmark). */
  private async onLine(line: string): Promise<boolean> {
    const ev = parseEvent(line)
    const obj = ev.object as KubeObject
    if (ev.type === 'ERROR') {
      const st = ev.object as any
      if (st?.code === 410 || st?.reason === 'Expired' || st?.reason === 'Gone') throw new Relist(String(st?.message ?? 'expired'))
      // The server does not have our version (it went back in time: restarted with a new history,
      // or restored): only a list brings the cache back in line, as client-go relists on it.
      if (isTooLargeResourceVersion(st)) throw new Relist(String(st?.message ?? 'too large resource version'))
      throw new ApiError(
        `watch ${this.resource?.kind}: ERROR event: ${st?.code} ${st?.reason}: ${st?.message}`,
        Number(st?.code) || 0,
        String(st?.reason ?? 'Error'),
        st,
      )
    }
    this.h.lastEventAt = Date.now()
    const rv = obj?.metadata?.resourceVersion
    if (ev.type === 'BOOKMARK') {
      if (rv) this.rv = rv
      return true
    }
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return false
    this.h.events++
    this.options.metrics?.reflectorEvents.inc({ ...this.labels(), type: ev.type })
    if (obj.kind === undefined) obj.kind = this.resource!.kind
    if (obj.apiVersion === undefined) obj.apiVersion = this.resource!.apiVersion
    const p = this.batcher.add(namespacedName(obj), { type: ev.type === 'DELETED' ? 'delete' : 'upsert', object: obj })
    if (rv) this.rv = rv
    if (p) await p
    return true
  }

  /** Writes one coalesced batch of watch events. Never throws (errors are counted). */
  private async writeBatch(batch: Map<string, Pending<KubeObject>>): Promise<void> {
    const { db, table } = this.options
    try {
      await db.write(table, (txn) => this.rows.apply(txn, batch))
      if (!this.options.queryAll) this.gauge('objects', table.count(db.readTxn()))
    } catch (err) {
      this.failed(new ReflectorError(`reflector ${this.name}: write of ${batch.size} objects failed: ${(err as Error).message}`))
      this.needList = true // the table may miss these events: relist to be sure, now
      this.endWatch?.()
    }
  }

  // ---- metrics ----

  private labels(): { reflector: string; cluster: string } {
    return { reflector: this.name, cluster: this.options.cluster.name }
  }
  private count(what: 'errors' | 'lists'): void {
    const m = this.options.metrics
    if (!m) return
    ;(what === 'errors' ? m.reflectorErrors : m.reflectorRelists).inc(this.labels())
  }
  private gauge(what: 'up' | 'objects', v: number): void {
    const m = this.options.metrics
    if (!m) return
    ;(what === 'up' ? m.reflectorUp : m.reflectorObjects).set(this.labels(), v)
  }
}
