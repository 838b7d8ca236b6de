// StateOfWorldController: Kuadrant policy-machinery's state-of-world reconciliation on statewright.
// Watched kinds are reflected into tables; the topology over them is kept incrementally; `reconcile`
// receives the events coalesced since its last run, a view of the topology and a snapshot of every
// table, and declares what it wants: derived objects (applied by the k8s Target, retried per object,
// pruned by owner label) and statuses (server-side apply on /status).
// Invariants:
// - Nothing runs before every watched kind is synced (its table initialized), and nothing runs
//   without a reason: an event, a change of the topology, a derived object's apply status, a resync.
//   An empty world at startup is no run (policy-machinery makes no call either).
// - One run at a time. Events are coalesced per object (create+update = create with the newest,
//   create+delete = nothing, update+delete = delete with the oldest); a failed run keeps its events
//   for the retry, which backs off (100 ms doubling to 30 s); events arriving meanwhile join them.
// - A run declares its derived objects by group (`ctx.desire(group, objects)`): a group's set is
//   replaced whole when the run succeeds and kept when a run does not mention it; an object equal to
//   the stored one is not written (stable resourceVersions, also across restarts).
// - A status equal to the object's current one is not written. Status writes are a reconciler's
//   operations: retried per object with backoff, never dropped.
// - A change of a derived object's apply status (applied, failed) runs reconcile again without
//   events, so a status that waits for "applied" is written once it is.
// - A run is given the topology's cycle as `ctx.error` (policy-machinery hands its reconcile
//   function the topology build error) and is traced (tracing.ts) when a tracer is at hand.
// This file: the controller (its loop and its Component); one run of reconcile is run.ts, what
// reconcile sees reconcile.ts, the watched kinds watched.ts, the derived groups desiredgroups.ts,
// events events.ts, statuses statuswrites.ts.
import { nextProgress } from '../progress.ts'
import { ConfigError, StoppedError, UsageError } from '../errors.ts'
import {
  backoffDelay,
  resolveRetry,
  waitAny,
  type RetryOptions,
  type ChangeIterator,
  type DB,
  type ReadTxn,
  type Table,
  type Watch,
} from '@statewright/statedb'
import type { Cluster, KubeObject } from '@statewright/k8s'
import { StatusWrites } from './statuswrites.ts'
import type { WriteTxn } from '@statewright/statedb'
import type { InspectGraph } from '@statewright/topology'
import { PendingEvents } from './events.ts'
import type { Logger } from '@statewright/statedb'
import { Manager } from '../manager/manager.ts'
import type { Component, ComponentHealth } from '../manager/options.ts'
import { plural } from '../manager/watch.ts'
import { Topology, groupOfApiVersion, type TopologyDefinition } from '@statewright/topology'
import { DesiredGroups } from './desiredgroups.ts'
import type { StateOfWorldFn } from './reconcile.ts'
import { runOnce, type RunContext } from './run.ts'
import { resolveTracer, type TracerLike } from './tracing.ts'
import { newListedTable, relist, relistUntilDone, type WatchSpec, type WatchedKind } from './watched.ts'

export interface StateOfWorldOptions {
  name: string
  /** The Manager to run in (its DB, clusters, desired table, Events, logger). */
  manager?: Manager
  /** Without a manager: the DB and clusters (the first is the default); a Manager is made inside. */
  db?: DB
  clusters?: Cluster[]
  /** Without a manager: the logger (default: JSON lines on stderr at info). */
  logger?: Logger
  watch: WatchSpec[]
  topology: TopologyDefinition
  reconcile: StateOfWorldFn
  /** Run again every this many ms without events (default 0: never). */
  resyncIntervalMs?: number
  /** Backoff after a failed run, of status writes and of listing (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter 0.2). */
  retry?: RetryOptions
  /**
   * Traces runs (spans `controller.reconcile` and `topology.build`): an OpenTelemetry Tracer; by
   * default @opentelemetry/api's global tracer when that optional peer is installed; false: none.
   */
  tracer?: TracerLike | false
}

export class StateOfWorldController {
  readonly name: string
  readonly manager: Manager
  readonly topology: Topology
  private readonly own: boolean
  private readonly options: StateOfWorldOptions
  private readonly log: Logger
  private readonly tables = new Map<string, WatchedKind>()
  private readonly statusWrites: StatusWrites
  private readonly groups = new DesiredGroups()
  private readonly inspectInfo = new Map<string, { status?: string; effective?: unknown }>()
  private readonly pending = new PendingEvents()
  /** Objects the topology processed since the last run (an attribute of the run's span); writes made by runs. */
  private readonly counts = { topologyChanges: 0, writes: 0 }
  /** What each run reads and writes of this controller. */
  private readonly runContext: RunContext
  private ac: AbortController | undefined
  private loop: Promise<void> | undefined
  private wake: (() => void) | undefined
  private idleWaiters: Array<() => void> = []
  private writesSeen = 0
  private state: { runs: number; failures: number; lastError?: string; synced: boolean; idle: boolean } = {
    runs: 0,
    failures: 0,
    synced: false,
    idle: false,
  }

  /** Marks the desired table initialized from this controller's side (after its first complete pass). */
  private markInitialized: ((w: WriteTxn) => void) | undefined

  constructor(o: StateOfWorldOptions) {
    if (!o?.name) throw new ConfigError('StateOfWorldController: `name` is required')
    if (!o.manager && !o.clusters?.length)
      throw new ConfigError(`StateOfWorldController "${o.name}": give a manager, or clusters (and a db)`)
    this.options = o
    this.name = o.name
    this.own = !o.manager
    this.manager =
      o.manager ??
      new Manager({
        name: o.name,
        cluster: o.clusters![0]!,
        clusters: o.clusters!.slice(1),
        ...(o.db ? { db: o.db } : {}),
        ...(o.logger ? { logger: o.logger } : {}),
        http: false,
        handleSignals: false,
      })
    const m = this.manager
    this.log = m.logger.child({ stateOfWorld: o.name })
    for (const w of o.watch) {
      const { kind, table: tname, mode, predicate: _p, ...wopts } = w
      const cluster = w.cluster ? m.clusters.get(w.cluster) : m.cluster
      if (!cluster) throw new ConfigError(`StateOfWorldController "${o.name}": no cluster named "${w.cluster}"`)
      const table =
        mode === 'stateOfWorld'
          ? newListedTable(m.db, tname ?? `${o.name}-${plural(kind.kind)}`)
          : (m.watch(kind, { ...wopts, ...(tname ? { name: tname } : {}) }) as Table<KubeObject>)
      if (this.tables.has(kind.kind)) throw new ConfigError(`StateOfWorldController "${o.name}": kind ${kind.kind} is watched twice`)
      this.tables.set(kind.kind, { spec: w, table, cluster })
    }
    const fill = <K extends { kind: string; table?: Table<any> }>(k: K): K =>
      k.table ? k : { ...k, table: this.tables.get(k.kind)?.table }
    const def = o.topology
    this.topology = new Topology(
      { ...def, targetables: def.targetables.map(fill), policies: (def.policies ?? []).map(fill), objects: (def.objects ?? []).map(fill) },
      { db: m.db, name: `${o.name}-topology` },
    )
    this.statusWrites = new StatusWrites({ manager: m, name: o.name, logger: this.log, ...(o.retry ? { retry: o.retry } : {}) })
    // The desired table is not complete until this controller has written its groups: the reconciler
    // prunes only an initialized table (at once when it becomes initialized), so until the first pass
    // is done the objects it owns in the cluster must not look unwanted.
    const w = m.db.tryWriteTxn(m.desired.table)
    if (!w)
      throw new UsageError(
        `StateOfWorldController "${o.name}": the desired table is being written; declare controllers before the manager starts`,
      )
    this.markInitialized = m.desired.table.registerInitializer(w, `state-of-world:${o.name}`)
    w.commit()
    this.runContext = {
      name: o.name,
      manager: m,
      tables: this.tables,
      topology: this.topology,
      reconcile: (ctx) => o.reconcile(ctx),
      tracer: resolveTracer(o.tracer, '@statewright/controller'),
      log: this.log,
      groups: this.groups,
      statusWrites: this.statusWrites,
      inspectInfo: this.inspectInfo,
      state: this.state,
      counts: this.counts,
    }
    m.add(this.component())
  }

  /** Starts (standalone: the inner Manager; with a manager, start that instead). */
  async start(): Promise<void> {
    if (!this.own) throw new UsageError(`StateOfWorldController "${this.name}": it runs in its manager; start the manager`)
    await this.manager.start()
  }
  async stop(): Promise<void> {
    if (this.own) await this.manager.stop()
  }

  /** Runs, failures, last error. */
  stats(): { runs: number; failures: number; lastError?: string } {
    return { runs: this.state.runs, failures: this.state.failures, ...(this.state.lastError ? { lastError: this.state.lastError } : {}) }
  }

  private component(): Component {
    return {
      name: `state-of-world ${this.name}`,
      leaderOnly: true,
      start: async () => {
        if (this.ac && !this.ac.signal.aborted) return // running: a no-op
        // a new term (leader election) starts from the state of the world: every object is an event again
        this.pending.reset()
        this.state.synced = false
        this.state.idle = false
        await this.statusWrites.start()
        this.ac = new AbortController()
        this.loop = this.run(this.ac.signal).catch((err) => {
          if (!this.ac?.signal.aborted) this.log.error({ err }, 'state-of-world loop failed')
        })
      },
      stop: async () => {
        this.ac?.abort(new StoppedError(`state-of-world controller "${this.name}" stopped`))
        this.wake?.()
        await this.loop
        await this.statusWrites.stop()
        for (const w of this.idleWaiters.splice(0)) w()
      },
      health: (): ComponentHealth => {
        const topoErrors = this.topology.errors()
        const failing = [
          ...topoErrors.map((e) => ({ key: e.object, error: e.error })),
          ...(this.state.lastError ? [{ key: this.name, error: this.state.lastError }] : []),
        ]
        const h = this.statusWrites.health()
        const running = this.ac !== undefined && !this.ac.signal.aborted
        if (!running) return { ready: false, level: 'stopped', message: 'stopped' }
        return {
          // ready once synced and past the first pass (a run, or nothing to run)
          ready: this.state.synced && (this.state.runs > 0 || this.state.idle),
          level: failing.length || h.level !== 'ok' ? 'degraded' : 'ok',
          message: !this.state.synced
            ? 'waiting for watched kinds to sync'
            : this.state.lastError
              ? `reconcile failed (${this.state.failures} times); retrying: ${this.state.lastError}`
              : `${this.state.runs} runs`,
          ...(failing.length ? { failing: failing.slice(0, 10) } : {}),
        }
      },
      // not idle while anything is to do, and once after a pass that wrote (waitForConvergence then
      // goes round again, so reflectors see what the writes caused)
      idle: () => {
        const wrote = this.counts.writes !== this.writesSeen
        this.writesSeen = this.counts.writes
        return !wrote && this.state.idle && this.pending.size === 0 && this.quiet()
      },
      settled: async (signal = new AbortController().signal) => {
        const ac = this.ac
        if (!ac || ac.signal.aborted) throw new StoppedError(`state-of-world controller "${this.name}" is not running`)
        signal = AbortSignal.any([signal, ac.signal])
        for (;;) {
          signal.throwIfAborted()
          while (!this.state.idle || this.pending.size) await nextProgress(this.idleWaiters, signal)
          const txn = this.manager.db.readTxn()
          await this.statusWrites.waitWritten(signal)
          if (this.manager.reconciler.isRunning)
            await this.manager.reconciler.waitForRevision(this.manager.desired.table.revision(txn), { signal })
          if (this.state.idle && !this.pending.size && this.quiet()) return
          await new Promise<void>((resolve) => setImmediate(resolve))
        }
      },
      graph: () => this.graph(),
      reconcilers: () => [this.statusWrites.reconciler],
    }
  }

  /** No status write and none of our desired objects pending. */
  private quiet(): boolean {
    const m = this.manager
    const txn = m.db.readTxn()
    if (this.statusWrites.pending()) return false
    for (const d of m.desired.table.list(txn, m.desired.statusIndex.kind('pending')))
      if (this.groups.has(m.desired.primaryKey(d))) return false
    return true
  }

  /** The topology with each node's inspection info (policy status, effective policy). */
  graph(): InspectGraph {
    const v = this.topology.view()
    return {
      nodes: v.nodes().map((n) => {
        const info = this.inspectInfo.get(n.locator)
        return {
          id: n.locator,
          kind: n.kind,
          name: n.section ? `${n.name}#${n.section}` : n.name,
          ...(n.namespace ? { namespace: n.namespace } : {}),
          ...(n.policy ? { policy: true } : {}),
          ...(info?.status ? { status: info.status } : {}),
          ...(info?.effective !== undefined ? { effective: info.effective } : {}),
        }
      }),
      edges: v.edges(),
    }
  }

  private collect(
    iters: Array<{ kind: string; it: ChangeIterator<KubeObject>; spec: WatchSpec; group: string }>,
    txn: ReadTxn,
    watches: Watch[],
  ): void {
    for (const { kind, it, spec, group } of iters) {
      const [changes, w] = it.next(txn)
      watches.push(w)
      for (const c of changes) this.pending.add(kind, group, c.object, c.deleted, spec.predicate)
    }
  }

  private async run(signal: AbortSignal): Promise<void> {
    const m = this.manager
    const specs = [...this.tables.entries()]
    // wait for every watched (incremental) kind to sync
    for (;;) {
      if (signal.aborted) return
      const txn = m.db.readTxn()
      const waiting = specs.filter(([, t]) => t.spec.mode !== 'stateOfWorld' && !t.table.initialized(txn)[0])
      if (!waiting.length) break
      await waitAny(
        waiting.map(([, t]) => t.table.initialized(txn)[1]),
        signal,
      ).catch(() => {})
    }
    await relistUntilDone(m.db, this.tables, this.log, signal, this.options.retry)
    this.state.synced = true
    const first = m.db.readTxn()
    const iters = specs.map(([kind, t]) => ({
      kind,
      it: t.table.changes(first),
      spec: t.spec,
      group: t.spec.kind.apiVersion.includes('/') ? groupOfApiVersion(t.spec.kind.apiVersion) : '',
    }))
    const desiredIt = m.desired.table.changes(first)
    let failures = 0
    let retryAt = 0
    let nextResync = this.options.resyncIntervalMs ? Date.now() + this.options.resyncIntervalMs : Infinity
    let dirty = false // runs have reasons: events, topology changes, apply statuses, resyncs
    let applyChanges = new Set<string>() // derived objects whose apply status changed since the last run
    while (!signal.aborted) {
      const txn = m.db.readTxn()
      const watches: Watch[] = []
      this.collect(iters, txn, watches)
      const [dchanges, dw] = desiredIt.next(txn)
      watches.push(dw)
      for (const c of dchanges) {
        const key = m.desired.primaryKey(c.object)
        if (!this.groups.has(key)) continue
        dirty = true
        applyChanges.add(key)
      }
      const topo = await this.topology.sync()
      watches.push(...topo.watches)
      this.counts.topologyChanges += topo.processed
      if (topo.processed) dirty = true
      const now = Date.now()
      if (now >= nextResync) {
        dirty = true
        nextResync = now + this.options.resyncIntervalMs!
      }
      if ((dirty || this.pending.size) && now >= retryAt) {
        this.state.idle = false
        dirty = false
        const events = this.pending.take()
        const changed = applyChanges
        applyChanges = new Set()
        try {
          if (specs.some(([, t]) => t.spec.mode === 'stateOfWorld')) {
            await relist(m.db, this.tables, signal)
            this.collect(iters, m.db.readTxn(), [])
            events.push(...this.pending.take())
            this.counts.topologyChanges += (await this.topology.sync()).processed
          }
          await runOnce(this.runContext, events, signal, changed)
          failures = 0
          this.state.lastError = undefined
        } catch (err) {
          if (signal.aborted) return
          failures++
          this.state.failures++
          this.state.lastError = (err as Error)?.message ?? String(err)
          this.log.warn({ err: this.state.lastError, events: events.length, attempt: failures }, 'reconcile failed; retrying with backoff')
          // keep the events for the retry, older first
          this.pending.restore(events)
          for (const k of changed) applyChanges.add(k)
          // jittered, so that controllers failing together (an API server outage) do not retry in step
          retryAt = Date.now() + Math.round(backoffDelay(failures, resolveRetry(this.options.retry)))
        }
        continue
      }
      this.state.idle = !this.pending.size && !dirty
      if (this.state.idle && this.markInitialized) {
        const mark = this.markInitialized
        this.markInitialized = undefined
        await m.db.write(m.desired.table, (w) => mark(w))
      }
      if (this.state.idle) for (const w of this.idleWaiters.splice(0)) w()
      const wakeAt = Math.min(retryAt > now ? retryAt : Infinity, nextResync, topo.nextRetryAt ?? Infinity)
      const woke = new AbortController()
      this.wake = () => woke.abort()
      // AbortSignal.timeout takes whole milliseconds only (a fraction throws)
      const timer = wakeAt < Infinity ? AbortSignal.timeout(Math.max(1, Math.ceil(wakeAt - now))) : undefined
      await waitAny(watches, AbortSignal.any([signal, woke.signal, ...(timer ? [timer] : [])])).catch(() => {})
    }
  }
}
