// The Manager: one object that owns a controller's parts and runs them, as controller-runtime's does.
// It owns the DB, the cluster client, reflectors (watch), derivations into one desired table, the
// Target that applies that table (server-side apply, prune of what it owns), the reconciler driving
// it, drift repair of what it owns, Events, optional leader election, and one HTTP server.
// Invariants:
// - Parts are declared before start(); start() runs them once (a second start throws) and fails
//   fast (a port in use) before anything touches the cluster.
// - With leader election, reflectors run on every replica (warm caches); derivations, the reconciler,
//   drift repair and leaderOnly parts run only during a term.
// - Readiness never depends on an object's error: only on initialization, stopped parts and lost
//   watches. Object errors show as degraded health with counts and examples (/statusz).
// - stop() is graceful and idempotent: intake stops first, in-flight applies get until the deadline,
//   then everything stops and the Lease is released. SIGTERM and SIGINT call it.
import { ConfigError, UsageError } from './errors.ts'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { Reconciler, type BatchEntry, type Health, type PromRegistry } from '@statewright/reconciler'
import {
  Cluster,
  DriftWatcher,
  EventRecorder,
  K8sMetrics,
  LeaderElector,
  Reflector,
  ShardedLeases,
  Target,
  desired,
  leaderOnly,
  namespacedName,
  newDesiredTable,
  shardOf,
  type DesiredObject,
  type DesiredTable,
  type KindRef,
  type KubeObject,
  type RepairPacing,
  type ReflectorOptions,
} from '@statewright/k8s'
import { Derivation, type DeriveContext } from './derive.ts'
import { Finalizer, type CleanupContext, type FinalizerOptions } from './finalizers.ts'
import { ManagerServer, type HttpOptions } from './http.ts'
import type { InspectGraph, NamedGraph } from './inspect/graph.ts'
import { createLogger, type Logger } from './logging.ts'
import { ControllerMetrics, loadPromClient } from './metrics.ts'

/** A part the Manager starts and stops (finalizers, controllers, anything with a lifecycle). */
export interface Component {
  readonly name: string
  start(): void | Promise<unknown>
  stop(): Promise<void>
  /** Readiness and health; absent: always ready. */
  health?(): ComponentHealth
  /** Runs only while this replica leads (default false). */
  leaderOnly?: boolean
  /** For waitForConvergence: nothing to do now. */
  idle?(): boolean
  /** For waitForConvergence: resolves once the part has acted on everything it has seen. */
  converged?(signal: AbortSignal): Promise<void>
  /** A graph to show (GET /topology, the web view's Topology, `statewright topology`). */
  graph?(): InspectGraph
  /** Reconcilers the part runs, whose per-object status to show (GET /reconcilers, the web view, `statewright status`). */
  reconcilers?(): ReadonlyArray<Reconciler<any>>
}

export interface ManagedFinalizerOptions<T extends KubeObject> extends Pick<FinalizerOptions, 'name' | 'kind' | 'condition' | 'retry'> {
  /** The table of the kind (from watch()). */
  on: Table<T>
  /** Releases what the object holds outside the cluster. Must be idempotent; throw to retry. */
  cleanup(obj: T, ctx: CleanupContext): void | Promise<void>
}

export interface ComponentHealth {
  ready: boolean
  level: 'ok' | 'degraded' | 'stopped'
  message: string
  /** Object errors, a few, with keys. */
  failing?: ReadonlyArray<{ key: string; error: string }>
}

export interface ManagerOptions {
  /** The controller's name: field manager, owner label value, Event source, metrics label. */
  name: string
  /** The database (default: a new one). Tables of other parts may share it. */
  db?: DB
  /** The cluster (default: KUBECONFIG or in-cluster config). A given cluster is not closed by stop(). */
  cluster?: Cluster
  /**
   * More clusters, by their `name`: watch(kind, { cluster }) reflects from one, and a derivation
   * places an object in one with inCluster(name, obj). Leader election and Events of objects in the
   * default cluster use `cluster`; each cluster gets its own Event recorder.
   */
  clusters?: Cluster[]
  /** The HTTP server (default port 8080 on 127.0.0.1); false: none. */
  http?: HttpOptions | false
  logger?: Logger
  /** A prom-client Registry for every metric (default: a new one when prom-client is installed). */
  registry?: PromRegistry
  /** Run the leader-only parts only while holding this Lease. */
  leaderElection?: {
    namespace: string
    name?: string
    identity?: string
    leaseDurationMs?: number
    renewDeadlineMs?: number
    retryPeriodMs?: number
  }
  /**
   * Share the work among replicas by shard (instead of one leader): each input of a derivation
   * belongs to shard fnv1a(namespace/name) % shards, a replica derives and applies only the shards
   * whose Lease it holds (k8s ShardedLeases), deletes and prunes only in them, and hands a shard over
   * without deleting what it applied. Leader-only components (finalizers) need leaderElection instead.
   */
  sharding?: {
    namespace: string
    shards: number
    identity?: string
    leaseDurationMs?: number
    renewDeadlineMs?: number
    retryPeriodMs?: number
  }
  /** Stop gracefully on SIGTERM/SIGINT, then exit (default true). */
  handleSignals?: boolean
  /** How long stop() lets in-flight applies finish (default 30 000 ms). */
  shutdownTimeoutMs?: number
  /** Backoff of failing applies (default 100 ms doubling up to 60 s). */
  retry?: { minMs?: number; maxMs?: number }
  /** Pacing of drift repairs and fight detection. */
  drift?: RepairPacing
  /** Full reconciliation (with prune) every this many ms (default 300 000; 0: never). */
  fullReconciliationIntervalMs?: number
  /** Limit pruning to one namespace (default: every namespace). */
  pruneNamespace?: string
  /**
   * Take over an existing object of a desired name that lacks our owner label (default true, as
   * server-side apply does). False: never adopt; the apply fails (retried with backoff, an error in
   * /statusz) until the foreign object is gone.
   */
  adopt?: boolean
}

export interface WatchOptions extends Pick<
  ReflectorOptions,
  'namespace' | 'labelSelector' | 'fieldSelector' | 'keepManagedFields' | 'transform'
> {
  /** The table's name (default: the kind, lower case, plural-ish: "sites"; "<cluster>-sites" for another cluster). */
  name?: string
  /** The cluster to reflect from, by name (default: the manager's `cluster`). */
  cluster?: string
}

/** An object a derivation places in a named cluster (see inCluster). */
export interface Placed {
  readonly cluster: string
  readonly object: KubeObject
}
/** Places a derived object in another cluster of the manager: `fn: (s) => inCluster('west', cm)`. */
export function inCluster(cluster: string, object: KubeObject): Placed {
  return { cluster, object }
}
/** Whether a derived value is an object placed in a named cluster (inCluster). */
export const isPlaced = (x: KubeObject | Placed): x is Placed =>
  typeof (x as Placed).cluster === 'string' && typeof (x as Placed).object === 'object' && !('apiVersion' in x)

export interface ManagedDeriveOptions<In> {
  name?: string
  from: Table<In> | ReadonlyArray<Table<In>>
  joins?: ReadonlyArray<Table<any>>
  /** The objects this input wants in the cluster (applied by server-side apply, pruned when gone). */
  fn: (input: In, ctx: DeriveContext) => KubeObject | Placed | ReadonlyArray<KubeObject | Placed> | undefined | null
  /** Kinds this derivation produces: pruned and watched for drift (like controller-runtime's Owns). */
  owns?: KindRef[]
}

const byName = defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true })
/** The label that says which shard a derived object belongs to (sharded managers). */
export const SHARD_LABEL = 'statewright.io/shard'
const shardLabelOf = (obj: KubeObject | undefined): number => Number(obj?.metadata?.labels?.[SHARD_LABEL] ?? NaN)
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'PersistentVolume',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'StorageClass',
  'PriorityClass',
  'GatewayClass',
])

export class Manager {
  readonly name: string
  readonly db: DB
  readonly cluster: Cluster
  /** Every cluster, by name (the default one included). */
  readonly clusters = new Map<string, Cluster>()
  readonly logger: Logger
  readonly desired: DesiredTable
  readonly target: Target
  readonly reconciler: Reconciler<DesiredObject>
  /** Events about objects of the default cluster (eventsFor(name) for another). */
  readonly events: EventRecorder
  private readonly recorders = new Map<string, EventRecorder>()
  readonly registry: PromRegistry | undefined
  /** Reflectors, by table name. */
  readonly reflectors = new Map<string, Reflector<KubeObject>>()
  /** What each reflector reflects, by table name (waitForConvergence lists the same). */
  readonly watched = new Map<string, { kind: KindRef; table: Table<KubeObject>; options: WatchOptions; cluster: Cluster }>()
  readonly derivations: Derivation<any, DesiredObject>[] = []
  readonly drift: DriftWatcher[] = []
  readonly components: Component[] = []
  private readonly o: ManagerOptions
  private readonly ownsCluster: boolean
  private readonly owned = new Map<string, KindRef>()
  private readonly metrics: ControllerMetrics | undefined
  private readonly k8sMetrics: K8sMetrics | undefined
  private readonly server: ManagerServer | undefined
  private elector: LeaderElector | undefined
  private shardLeases: ShardedLeases | undefined
  /** Shards this replica holds now (sharded managers). */
  private readonly held = new Set<number>()
  private state: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new'
  private stopping: Promise<void> | undefined
  private leading = false
  private url_: string | undefined
  private readonly offSignals: Array<() => void> = []
  private readonly offMetrics: Array<() => void> = []

  constructor(o: ManagerOptions) {
    if (!o.name) throw new ConfigError('Manager: `name` is required (field manager and owner label value)')
    if (o.sharding && o.leaderElection)
      throw new ConfigError(
        `Manager "${o.name}": sharding and leaderElection exclude each other (every sharded replica works, each on its shards)`,
      )
    if (o.sharding && !(o.sharding.shards >= 1)) throw new ConfigError(`Manager "${o.name}": sharding.shards must be at least 1`)
    this.o = o
    this.name = o.name
    this.db = o.db ?? new DB()
    this.logger = (o.logger ?? createLogger()).child({ controller: o.name })
    this.registry = o.registry ?? (loadPromClient() ? new (loadPromClient()!.Registry)() : undefined)
    this.metrics = this.registry ? new ControllerMetrics(this.registry) : undefined
    this.k8sMetrics = this.registry ? new K8sMetrics(this.registry) : undefined
    this.ownsCluster = !o.cluster
    this.cluster = o.cluster ?? new Cluster()
    for (const c of [this.cluster, ...(o.clusters ?? [])]) {
      if (this.clusters.has(c.name))
        throw new ConfigError(`Manager "${o.name}": two clusters are named "${c.name}" (give each Cluster a distinct name)`)
      this.clusters.set(c.name, c)
      if (this.metrics) this.offMetrics.push(c.onResponse(this.metrics.request))
    }
    this.desired = newDesiredTable('desired')
    this.db.register(this.desired.table)
    this.target = new Target({
      clusters: [...this.clusters.values()],
      fieldManager: o.name,
      ...(o.sharding ? { prunable: (obj: KubeObject) => this.held.has(shardLabelOf(obj)) } : {}),
      ...(o.pruneNamespace ? { pruneNamespace: o.pruneNamespace } : {}),
      ...(o.adopt === false ? { adopt: false } : {}),
      ...(this.k8sMetrics ? { metrics: this.k8sMetrics } : {}),
    })
    this.events = this.eventsFor(this.cluster.name)
    this.reconciler = this.makeReconciler()
    if (o.http !== false) {
      this.server = new ManagerServer(o.http ?? {}, {
        db: this.db,
        registry: this.registry,
        live: () => this.state === 'running' || this.state === 'starting',
        ready: () => this.readiness(),
        status: () => this.status(),
        reconcilers: () => [this.reconciler, ...this.components.flatMap((c) => c.reconcilers?.() ?? [])],
        graphs: () => this.graphs(),
      })
    }
  }

  /** Reflects a kind into a new table (call before start). */
  watch<T extends KubeObject = KubeObject>(kind: KindRef, opts: WatchOptions = {}): Table<T> {
    this.notStarted('watch')
    const cluster = this.clusterNamed(opts.cluster)
    const name = opts.name ?? `${cluster === this.cluster ? '' : `${cluster.name}-`}${plural(kind.kind)}`
    const table = new Table<KubeObject>({ name, primary: byName })
    this.db.register(table)
    const typed = table as unknown as Table<T>
    const log = this.logger.child({ reflector: name, cluster: cluster.name })
    const { name: _n, cluster: _c, ...ropts } = opts
    this.watched.set(name, { kind, table, options: opts, cluster })
    this.reflectors.set(
      name,
      new Reflector({
        cluster,
        db: this.db,
        table,
        kind,
        name,
        ...ropts,
        ...(this.k8sMetrics ? { metrics: this.k8sMetrics } : {}),
        onError: (err) => log.warn({ err: err.message }, 'list/watch failed; retrying with backoff'),
      }),
    )
    return typed
  }

  /** Derives desired objects from tables: what `fn` returns is applied, and deleted when no longer returned. */
  derive<In>(o: ManagedDeriveOptions<In>): Derivation<In, DesiredObject> {
    this.notStarted('derive')
    this.owns(...(o.owns ?? []))
    const d = new Derivation<In, DesiredObject>({
      db: this.db,
      from: o.from,
      to: this.desired.table,
      logger: this.logger,
      ...(o.name ? { name: o.name } : {}),
      ...(o.joins ? { joins: o.joins } : {}),
      fn: (input, ctx) => {
        const shard = this.o.sharding ? this.shardOfInput(input) : undefined
        if (shard !== undefined && !this.held.has(shard)) return [] // another replica's (or nobody's yet)
        const r = o.fn(input, ctx)
        const objs =
          r === undefined || r === null ? [] : Array.isArray(r) ? (r as ReadonlyArray<KubeObject | Placed>) : [r as KubeObject | Placed]
        return objs.map((x) => {
          const placed = isPlaced(x) ? x : { cluster: this.cluster.name, object: x }
          this.clusterNamed(placed.cluster)
          const object =
            shard === undefined
              ? placed.object
              : {
                  ...placed.object,
                  metadata: { ...placed.object.metadata, labels: { ...placed.object.metadata.labels, [SHARD_LABEL]: String(shard) } },
                }
          return desired(object, placed.cluster === this.cluster.name ? undefined : placed.cluster)
        })
      },
      validate: (out) => {
        const m = out.object?.metadata
        if (!out.object?.apiVersion || !out.object?.kind) return 'the object has no apiVersion or kind'
        if (!m?.name) return `the ${out.object.kind} has no metadata.name`
        if (!m.namespace && !CLUSTER_SCOPED.has(out.object.kind)) return `the ${out.object.kind} "${m.name}" has no metadata.namespace`
        return undefined
      },
      equals: (a, b) => a.cluster === b.cluster && JSON.stringify(a.object) === JSON.stringify(b.object),
    })
    this.derivations.push(d)
    return d
  }

  /**
   * Kinds the desired objects have (like controller-runtime's Owns): objects of them carrying our
   * owner label are pruned when not desired (also right after a restart), and watched for drift.
   */
  owns(...kinds: KindRef[]): void {
    this.notStarted('owns')
    for (const k of kinds) {
      const id = `${k.apiVersion}/${k.kind}`
      if (this.owned.has(id)) continue
      this.owned.set(id, k)
      this.target.manage(k)
      for (const c of this.clusters.values()) this.watchOwned(k, c)
    }
  }

  /**
   * A finalizer on a watched kind: added on first sight; on deletion `cleanup` runs (retried with
   * backoff, failures as a condition on the object and in /statusz) and the finalizer is removed.
   * Leader-only; waitForConvergence waits for its cleanups.
   */
  finalizer<T extends KubeObject>(o: ManagedFinalizerOptions<T>): Finalizer {
    this.notStarted('finalizer')
    const { on, cleanup, ...rest } = o
    const f = new Finalizer({
      ...rest,
      cleanup: cleanup as FinalizerOptions['cleanup'],
      cluster: this.cluster,
      db: this.db,
      table: on as unknown as Table<KubeObject>,
      fieldManager: this.name,
      logger: this.logger.child({ finalizer: o.name }),
    })
    this.add({
      name: `finalizer ${o.name}`,
      leaderOnly: true,
      start: () => {
        f.start()
      },
      stop: () => f.stop(),
      health: () => {
        const h = f.health()
        return { ready: h.level !== 'stopped', level: h.level, message: h.message, failing: h.failing }
      },
      idle: () => f.pending() === 0,
      converged: (signal) => f.waitIdle(signal),
    })
    return f
  }

  /** Adds a part with a lifecycle (started by start(), stopped by stop()). */
  add(c: Component): void {
    this.notStarted('add')
    this.components.push(c)
  }

  /** The HTTP server's base URL once started. */
  get url(): string | undefined {
    return this.url_
  }

  async start(): Promise<void> {
    if (this.state !== 'new')
      throw new UsageError(`Manager "${this.name}": start() was already called (state ${this.state}); a Manager starts once`)
    this.state = 'starting'
    try {
      if (this.server) this.url_ = await this.server.listen()
      for (const r of this.reflectors.values()) await r.start()
      const leaderParts: Array<{ name: string; start(): unknown; stop(): Promise<void> }> = [
        ...this.derivations,
        this.reconciler,
        ...this.drift.map((d, i) => ({ name: `drift-${i}`, start: () => d.start(), stop: () => d.stop() })),
        ...this.components.filter((c) => c.leaderOnly),
      ]
      for (const c of this.components.filter((c) => !c.leaderOnly)) await c.start()
      const le = this.o.leaderElection
      const sh = this.o.sharding
      if (sh && this.components.some((c) => c.leaderOnly))
        throw new ConfigError(
          `Manager "${this.name}": leader-only components (${this.components
            .filter((c) => c.leaderOnly)
            .map((c) => c.name)
            .join(', ')}) need leaderElection, not sharding`,
        )
      if (sh) {
        for (const p of leaderParts) await p.start()
        this.leading = true
        const changed = (why: string, shard: number) => {
          this.logger.info({ shard, held: [...this.held].sort((a, b) => a - b) }, why)
          for (const d of this.derivations) d.rederive()
        }
        this.shardLeases = new ShardedLeases({
          cluster: this.cluster,
          namespace: sh.namespace,
          name: this.name,
          shards: sh.shards,
          identity: sh.identity ?? defaultIdentity(),
          ...(sh.leaseDurationMs ? { leaseDurationMs: sh.leaseDurationMs } : {}),
          ...(sh.renewDeadlineMs ? { renewDeadlineMs: sh.renewDeadlineMs } : {}),
          ...(sh.retryPeriodMs ? { retryPeriodMs: sh.retryPeriodMs } : {}),
          onShardAcquired: (shard) => {
            this.held.add(shard)
            changed('shard acquired', shard)
          },
          onShardReleased: (shard) => {
            this.held.delete(shard)
            changed('shard released', shard)
          },
          onError: (err) => this.logger.warn({ err: err.message }, 'shard lease request failed'),
        }).start()
      } else if (le) {
        const parts = leaderOnly(
          ...leaderParts.map((p) => ({
            start: () => {
              void Promise.resolve(p.start()).catch((err) => this.logger.error({ err, part: p.name }, 'a part failed to start'))
            },
            stop: () => p.stop(),
          })),
        )
        this.metrics?.leading(this.name, false)
        this.elector = new LeaderElector({
          cluster: this.cluster,
          namespace: le.namespace,
          name: le.name ?? this.name,
          ...(le.identity ? { identity: le.identity } : {}),
          ...(le.leaseDurationMs ? { leaseDurationMs: le.leaseDurationMs } : {}),
          ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
          ...(le.retryPeriodMs ? { retryPeriodMs: le.retryPeriodMs } : {}),
          onStartedLeading: (term) => {
            this.leading = true
            this.metrics?.leading(this.name, true)
            this.logger.info({}, 'started leading')
            return parts.onStartedLeading!(term)
          },
          onStoppedLeading: async (term, reason) => {
            this.leading = false
            this.metrics?.leading(this.name, false)
            this.logger.info({ reason }, 'stopped leading')
            await parts.onStoppedLeading!(term, reason)
          },
          onNewLeader: (id) => this.logger.info({ leader: id }, 'new leader'),
          onError: (err) => this.logger.warn({ err: err.message }, 'leader election request failed'),
        })
        this.elector.start()
      } else {
        for (const p of leaderParts) await p.start()
        this.leading = true
        this.metrics?.leading(this.name, true)
      }
      if (this.o.handleSignals !== false) this.trapSignals()
      this.state = 'running'
      this.logger.info({ url: this.url_, leaderElection: !!le }, 'manager started')
    } catch (err) {
      this.logger.error({ err }, 'manager failed to start')
      await this.stop().catch(() => {})
      throw err
    }
  }

  /** Stops gracefully (idempotent): intake first, in-flight applies until the deadline, then the rest. */
  stop(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'stopped'
      return Promise.resolve()
    }
    this.stopping ??= this.shutdown()
    return this.stopping
  }

  private async shutdown(): Promise<void> {
    this.state = 'stopping'
    this.logger.info({}, 'manager stopping')
    for (const off of this.offSignals.splice(0)) off()
    for (const r of this.reflectors.values()) await r.stop()
    for (const d of this.derivations) await d.stop()
    if (this.reconciler.isRunning) {
      const rev = this.desired.table.revision(this.db.readTxn())
      const deadline = AbortSignal.timeout(this.o.shutdownTimeoutMs ?? 30_000)
      await this.reconciler
        .waitForRevision(rev, { signal: deadline })
        .catch(() => this.logger.warn({}, 'shutdown deadline passed with applies in flight'))
    }
    if (this.elector) await this.elector.stop() // stops the leader-only parts (awaited) and releases the Lease
    if (this.shardLeases) {
      this.held.clear()
      await this.shardLeases.stop()
    } // hand the shards over; nothing we applied is deleted
    await this.reconciler.stop()
    for (const d of this.drift) await d.stop()
    for (const c of this.components) await c.stop()
    for (const r of this.recorders.values()) await r.close()
    await this.server?.close()
    for (const off of this.offMetrics.splice(0)) off()
    if (this.ownsCluster) await this.cluster.close()
    this.state = 'stopped'
    this.logger.info({}, 'manager stopped')
  }

  // ---- health ----

  /** Ready: every part initialized and running, no watch lost. Object errors do not count. */
  readiness(): { ready: boolean; reasons: string[] } {
    const reasons: string[] = []
    if (this.state !== 'running') reasons.push(`manager is ${this.state}`)
    for (const [name, r] of this.reflectors) {
      const h = r.health()
      if (!h.ready) reasons.push(`reflector ${name}: ${h.synced ? `watch lost (${h.lastError ?? h.state})` : 'not synced yet'}`)
    }
    const leaderParts = this.elector ? this.elector.status().leading : true
    if (leaderParts) {
      for (const d of this.derivations) {
        const h = d.health()
        if (!h.ready) reasons.push(`derivation ${d.name}: not initialized`)
      }
      const h = this.reconciler.health
      if (!h.ready) reasons.push(`reconciler ${this.name}: ${h.notReady ?? 'not ready'}`)
    }
    for (const c of this.components) {
      if (c.leaderOnly && !leaderParts) continue
      const h = c.health?.()
      if (h && !h.ready) reasons.push(`${c.name}: ${h.message}`)
    }
    return { ready: reasons.length === 0, reasons }
  }

  /** Everything /statusz shows: each part's health, object errors with examples. */
  status(): Record<string, unknown> {
    const rec: Health = this.reconciler.health
    return {
      name: this.name,
      state: this.state,
      ...this.readiness(),
      leader: this.elector ? this.elector.status() : { leading: this.leading },
      ...(this.shardLeases ? { sharding: this.shardLeases.status() } : {}),
      reflectors: [...this.reflectors.values()].map((r) => r.health()),
      derivations: this.derivations.map((d) => ({ name: d.name, ...d.health() })),
      reconciler: { name: this.name, level: rec.level, message: rec.message, ready: rec.ready, errors: rec.errors, failing: rec.failing },
      drift: this.drift.map((d) => d.health()),
      components: this.components.map((c) => ({ name: c.name, ...(c.health?.() ?? { ready: true, level: 'ok', message: '' }) })),
    }
  }

  /** The graphs of the components that have one (GET /topology). */
  graphs(): NamedGraph[] {
    const out: NamedGraph[] = []
    for (const c of this.components) if (c.graph) out.push({ component: c.name, graph: c.graph() })
    return out
  }

  // ---- wiring ----

  private makeReconciler(): Reconciler<DesiredObject> {
    const log = this.logger.child({ reconciler: this.name })
    const target = this.target.operations
    const tbatch = this.target.batchOperations
    // a sharded replica deletes only in its shards: an object leaving the desired table because its
    // shard went to another replica stays in the cluster (the new owner keeps it)
    const mine = (d: DesiredObject) => !this.o.sharding || this.held.has(shardLabelOf(d.object))
    const ops: typeof target = { ...target, delete: (d, ctx) => (mine(d) ? target.delete(d, ctx) : undefined) }
    const batch: typeof tbatch = {
      updateBatch: tbatch.updateBatch,
      deleteBatch: (entries, ctx) =>
        tbatch.deleteBatch(
          entries.filter((e) => mine(e.object)),
          ctx,
        ),
    }
    const describe = (d: DesiredObject) =>
      `${d.object.kind} ${d.object.metadata.namespace ? `${d.object.metadata.namespace}/` : ''}${d.object.metadata.name}`
    const logFailed = (what: string, entries: BatchEntry<DesiredObject>[]) => {
      for (const e of entries)
        if (e.error !== undefined)
          log.warn(
            { object: describe(e.object), err: (e.error as Error)?.message ?? String(e.error) },
            `${what} failed; will retry with backoff`,
          )
    }
    return new Reconciler<DesiredObject>({
      name: this.name,
      db: this.db,
      table: this.desired.table,
      statusIndex: this.desired.statusIndex,
      primaryKey: this.desired.primaryKey,
      getObjectStatus: (d) => d.status,
      setObjectStatus: (d, status) => ({ ...d, status }),
      operations: ops,
      batchOperations: {
        updateBatch: async (entries, ctx) => {
          await batch.updateBatch(entries, ctx)
          logFailed('apply', entries)
        },
        deleteBatch: async (entries, ctx) => {
          await batch.deleteBatch(entries, ctx)
          logFailed('delete', entries)
        },
      },
      retry: { minMs: this.o.retry?.minMs ?? 100, maxMs: this.o.retry?.maxMs ?? 60_000, jitter: 0.2 },
      fullReconciliationIntervalMs: this.o.fullReconciliationIntervalMs ?? 300_000,
      ...(this.metrics ? { metrics: this.metrics } : {}),
      onError: (err, what) => log.error({ err }, what),
    })
  }

  /** A reflector of an owned kind in one cluster (selected by our owner label) and drift repair over it. */
  private watchOwned(kind: KindRef, cluster: Cluster): void {
    const isDefault = cluster === this.cluster
    const observed = this.watch(kind, {
      name: `owned-${isDefault ? '' : `${cluster.name}-`}${plural(kind.kind)}`,
      labelSelector: `statewright.io/owner=${this.name}`,
      keepManagedFields: true,
      cluster: cluster.name,
    })
    const log = this.logger.child({ drift: kind.kind, cluster: cluster.name })
    this.drift.push(
      new DriftWatcher({
        db: this.db,
        observed,
        desired: this.desired,
        fieldManager: this.name,
        events: this.eventsFor(cluster.name),
        // desired objects that name no cluster belong to the default one; those of another name it
        ...(isDefault ? {} : { cluster: cluster.name, matchDefaultCluster: false }),
        ...(this.o.drift ? { pacing: this.o.drift } : {}),
        ...(this.k8sMetrics ? { metrics: this.k8sMetrics } : {}),
        onDrift: (d, reason) =>
          log.info(
            { object: `${d.object.metadata.namespace ?? ''}/${d.object.metadata.name}`, reason },
            'managed object drifted; repairing',
          ),
        onFight: (f) =>
          log.warn(
            { object: f.key, otherManager: f.otherManager, repairs: f.repairs },
            'another writer keeps reverting this object; repairs are backed off',
          ),
      }),
    )
  }

  private trapSignals(): void {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      const on = () => {
        this.logger.info({ signal: sig }, 'signal received; stopping')
        void this.stop().then(
          () => process.exit(0),
          (err) => {
            this.logger.error({ err }, 'stop failed')
            process.exit(1)
          },
        )
      }
      process.once(sig, on)
      this.offSignals.push(() => process.off(sig, on))
    }
  }

  /** The Event recorder of a cluster (Events must be in the cluster of the object they are about). */
  eventsFor(cluster: string): EventRecorder {
    let r = this.recorders.get(cluster)
    if (!r) {
      r = new EventRecorder({
        cluster: this.clusterNamed(cluster),
        component: this.name,
        onError: (err) => this.logger.warn({ err, cluster }, 'event not recorded'),
      })
      this.recorders.set(cluster, r)
    }
    return r
  }

  /** Shards this replica holds now (sharded managers). */
  shards(): number[] {
    return [...this.held].sort((a, b) => a - b)
  }

  private shardOfInput(input: unknown): number {
    const o = input as KubeObject
    const key = o?.metadata ? namespacedName(o) : JSON.stringify(input)
    return shardOf(key, this.o.sharding!.shards)
  }

  private clusterNamed(name: string | undefined): Cluster {
    if (name === undefined) return this.cluster
    const c = this.clusters.get(name)
    if (!c) throw new ConfigError(`Manager "${this.name}": no cluster named "${name}" (clusters: ${[...this.clusters.keys()].join(', ')})`)
    return c
  }

  private notStarted(what: string): void {
    if (this.state !== 'new') throw new UsageError(`Manager "${this.name}": ${what}() must be called before start()`)
  }
}

/** A kind's table name: lower case, plural-ish ("sites", "gatewayclasses", "ratelimitpolicies"). */
export function plural(kind: string): string {
  const k = kind.toLowerCase()
  return /(s|x|ch|sh)$/.test(k) ? `${k}es` : /[^aeiou]y$/.test(k) ? `${k.slice(0, -1)}ies` : `${k}s`
}

function defaultIdentity(): string {
  const host = (process.env.POD_NAME || process.env.HOSTNAME || 'statewright').toLowerCase().replace(/[^a-z0-9.-]/g, '-')
  return `${host}-${Math.random().toString(36).slice(2, 8)}`
}
