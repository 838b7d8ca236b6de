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
// - Every write of the Manager's work is fenced by the term it is made under (k8s's WriteFence):
//   with leader election the leader's term (applies, deletes, prunes, finalizers, status writes),
//   with sharding the term of the object's shard; a write goes on the wire only while its term is
//   valid and is cut off when it ends.
// This file: the Manager's registration of parts and its lifecycle; the parts' wiring is beside it.
import { ConfigError, UsageError } from '../errors.ts'
import { DB, Table } from '@statewright/statedb'
import { loadOptionalPeer, type Reconciler, type PromRegistry } from '@statewright/reconciler'
import type * as PromClient from 'prom-client'
import {
  Cluster,
  DriftWatcher,
  EventRecorder,
  K8sMetrics,
  LeaderElector,
  NOT_LEADING,
  Reflector,
  ShardedLeases,
  Target,
  newDesiredTable,
  type LeaseTerm,
  type WriteFence,
  type DesiredObject,
  type DesiredTable,
  type KindRef,
  type KubeObject,
} from '@statewright/k8s'
import { Derivation } from '../derive/derivation.ts'
import type { Finalizer } from '../finalizers.ts'
import { ManagerServer } from '../http.ts'
import type { NamedGraph } from '@statewright/statedb'
import { createLogger, type Logger } from '../logging.ts'
import { ControllerMetrics } from '../metrics.ts'
import { SHARD_LABEL, desiredEquals, desiredOf, invalidDesired, shardLabelOf, shardOfInput } from './desired.ts'
import { managedFinalizer } from './managedfinalizer.ts'
import { readinessOf, statusOf, type ManagerParts, type ManagerState } from './health.ts'
import { newLeaderElector, newShardLeases, type LeaderPart } from './leadership.ts'
import {
  validateOptions,
  type Component,
  type ManagedDeriveOptions,
  type ManagedFinalizerOptions,
  type ManagerOptions,
  type WatchOptions,
} from './options.ts'
import { newDesiredReconciler } from './reconciler.ts'
import { ShardWork } from './shards.ts'
import { trapSignals } from './signals.ts'
import { byName, newDriftWatcher, newReflector, ownedTableName, plural } from './watch.ts'

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
  private readonly options: ManagerOptions
  private readonly ownsCluster: boolean
  private readonly owned = new Map<string, KindRef>()
  private readonly metrics: ControllerMetrics | undefined
  private readonly k8sMetrics: K8sMetrics | undefined
  private readonly server: ManagerServer | undefined
  private elector: LeaderElector | undefined
  private shardLeases: ShardedLeases | undefined
  /** Shards this replica holds now (sharded managers). */
  private readonly held = new Set<number>()
  /** The leader's term while leading (leader election). */
  private term: LeaseTerm | undefined
  /** Reflectors whose cache follows the held shards (sharded managers), with their selector's fixed part. */
  private readonly shardedCaches: Array<{ reflector: Reflector<KubeObject>; base: string | undefined }> = []
  private state: ManagerState = 'new'
  private stopping: Promise<void> | undefined
  private leading = false
  private url_: string | undefined
  private readonly offSignals: Array<() => void> = []
  private readonly offMetrics: Array<() => void> = []

  constructor(o: ManagerOptions) {
    validateOptions(o)
    this.options = o
    this.name = o.name
    this.db = o.db ?? new DB()
    this.logger = (o.logger ?? createLogger()).child({ controller: o.name })
    // without prom-client installed the Manager runs without metrics
    const prom = o.registry ? undefined : loadOptionalPeer<typeof PromClient>('prom-client', { from: import.meta.url })
    this.registry = o.registry ?? (prom ? new prom.Registry() : undefined)
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
      ...(o.sharding || o.leaderElection ? { fence: (obj: KubeObject) => this.fenceOf(obj) } : {}),
      ...((o.sharding && o.sharding.preconditions !== false) || (o.leaderElection && o.leaderElection.preconditions !== false)
        ? { preconditions: true, observedVersion: (obj: KubeObject, cluster: string) => this.observedVersion(obj, cluster) }
        : {}),
      ...(o.pruneNamespace ? { pruneNamespace: o.pruneNamespace } : {}),
      ...(o.adopt === false ? { adopt: false } : {}),
      ...(this.k8sMetrics ? { metrics: this.k8sMetrics } : {}),
    })
    this.events = this.eventsFor(this.cluster.name)
    this.reconciler = newDesiredReconciler({
      name: this.name,
      db: this.db,
      desired: this.desired,
      target: this.target,
      logger: this.logger,
      mine: (d) => !this.options.sharding || this.held.has(shardLabelOf(d.object)),
      options: o,
      ...(this.metrics ? { metrics: this.metrics } : {}),
    })
    if (o.http !== false) {
      this.server = new ManagerServer(o.http ?? {}, {
        db: this.db,
        registry: this.registry,
        live: () => this.state === 'running' || this.state === 'starting',
        ready: () => this.readiness(),
        status: () => this.status(),
        reconcilers: () => [this.reconciler, ...this.components.flatMap((c) => c.reconcilers?.() ?? [])],
        graphs: () => this.graphs(),
        onError: (err, path) => this.logger.error({ err, path }, 'http: answering a request failed'),
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
    this.watched.set(name, { kind, table, options: opts, cluster })
    const sh = this.options.sharding
    const perShard = !!sh && sh.cachePerShard !== false && !!opts.sharded
    const reflector = newReflector({
      cluster,
      db: this.db,
      table,
      kind,
      name,
      // a per-shard cache holds no shard until this replica holds one
      options: perShard ? { ...opts, labelSelector: withShards(opts.labelSelector, []) } : opts,
      metrics: this.k8sMetrics,
      logger: this.logger,
    })
    if (perShard) this.shardedCaches.push({ reflector, base: opts.labelSelector })
    this.reflectors.set(name, reflector)
    return table as unknown as Table<T>
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
        const shard = this.options.sharding ? shardOfInput(input, this.options.sharding.shards) : undefined
        if (shard !== undefined && !this.held.has(shard)) return [] // another replica's (or nobody's yet)
        return desiredOf(o.fn(input, ctx), this.cluster.name, shard, (name) => void this.clusterNamed(name))
      },
      validate: invalidDesired,
      equals: desiredEquals,
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
    const { finalizer, component } = managedFinalizer(o, {
      cluster: this.cluster,
      db: this.db,
      fieldManager: this.name,
      logger: this.logger,
      fence: () => this.writeFence(),
    })
    this.add(component)
    return finalizer
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
      const leaderParts: LeaderPart[] = [
        ...this.derivations,
        this.reconciler,
        ...this.drift.map((d, i) => ({ name: `drift-${i}`, start: () => d.start(), stop: () => d.stop() })),
        ...this.components.filter((c) => c.leaderOnly),
      ]
      for (const c of this.components.filter((c) => !c.leaderOnly)) await c.start()
      const le = this.options.leaderElection
      const sh = this.options.sharding
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
        this.shardLeases = newShardLeases({
          cluster: this.cluster,
          name: this.name,
          sharding: sh,
          logger: this.logger,
          work: new ShardWork({
            shards: sh.shards,
            held: this.held,
            db: this.db,
            desired: this.desired,
            target: this.target,
            derivations: this.derivations,
            shardedCaches: () => this.shardedCaches,
            catchUp: (term) => this.catchUp(term.signal),
            logger: this.logger,
          }),
        }).start()
      } else if (le) {
        this.metrics?.leading(this.name, false)
        this.elector = newLeaderElector({
          cluster: this.cluster,
          name: this.name,
          leaderElection: le,
          logger: this.logger,
          parts: leaderParts,
          catchUp: (term) => this.catchUp(term.signal),
          leading: (term) => {
            this.term = term
            this.leading = term !== undefined
            this.metrics?.leading(this.name, this.leading)
          },
        })
        this.elector.start()
      } else {
        for (const p of leaderParts) await p.start()
        this.leading = true
        this.metrics?.leading(this.name, true)
      }
      if (this.options.handleSignals !== false) this.offSignals.push(...trapSignals(this.logger, () => this.stop()))
      this.state = 'running'
      this.logger.info({ url: this.url_, leaderElection: !!le }, 'manager started')
    } catch (err) {
      this.logger.error({ err }, 'manager failed to start')
      await this.stop().catch(() => {})
      throw err
    }
  }

  /** Every cache listed again after now (see Reflector.refresh); rejects when `signal` aborts. */
  private catchUp(signal: AbortSignal): Promise<unknown> {
    return Promise.all([...this.reflectors.values()].map((r) => r.refresh(signal)))
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
      const deadline = AbortSignal.timeout(this.options.shutdownTimeoutMs ?? 30_000)
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
    return readinessOf(this.parts())
  }

  /** Everything /statusz shows: each part's health, object errors with examples. */
  status(): Record<string, unknown> {
    return statusOf(this.parts(), () => this.readiness())
  }

  /** The graphs of the components that have one (GET /topology). */
  graphs(): NamedGraph[] {
    const out: NamedGraph[] = []
    for (const c of this.components) if (c.graph) out.push({ component: c.name, graph: c.graph() })
    return out
  }

  private parts(): ManagerParts {
    const { name, state, reflectors, derivations, reconciler, drift, components, elector, shardLeases, leading } = this
    return { name, state, reflectors, derivations, reconciler, drift, components, elector, shardLeases, leading }
  }

  // ---- wiring ----

  /** A reflector of an owned kind in one cluster (selected by our owner label) and drift repair over it. */
  private watchOwned(kind: KindRef, cluster: Cluster): void {
    const other = cluster === this.cluster ? undefined : cluster.name
    const observed = this.watch(kind, {
      name: ownedTableName(kind, other),
      labelSelector: `statewright.io/owner=${this.name}`,
      keepManagedFields: true,
      cluster: cluster.name,
      sharded: true, // the Manager labels what it applies with its shard
    })
    this.drift.push(
      newDriftWatcher({
        db: this.db,
        observed,
        desired: this.desired,
        fieldManager: this.name,
        events: this.eventsFor(cluster.name),
        cluster: other,
        pacing: this.options.drift,
        metrics: this.k8sMetrics,
        logger: this.logger.child({ drift: kind.kind, cluster: cluster.name }),
      }),
    )
  }

  /** The Event recorder of a cluster (Events must be in the cluster of the object they are about). */
  eventsFor(cluster: string): EventRecorder {
    let r = this.recorders.get(cluster)
    if (!r) {
      r = new EventRecorder({
        cluster: this.clusterNamed(cluster),
        component: this.name,
        logger: this.logger, // 'event not recorded' at warn, with the cluster, object and reason
      })
      this.recorders.set(cluster, r)
    }
    return r
  }

  /**
   * The lease term the Manager's writes are made under now: the leader's term with leader election
   * (a never-valid fence between terms), undefined without leader election (writes are not fenced).
   * Pass it to writes of your own that belong to the leader's work (RequestOptions.fence).
   */
  writeFence(): WriteFence | undefined {
    if (!this.options.leaderElection) return undefined
    return this.term ?? NOT_LEADING
  }

  /** The fence of a write of `obj`: its shard's term (sharding), the leader's (leader election); null: not ours. */
  private fenceOf(obj: KubeObject): WriteFence | null | undefined {
    if (!this.options.sharding) return this.writeFence()
    const shard = shardLabelOf(obj)
    const term = this.held.has(shard) ? this.shardLeases?.termOfShard(shard) : undefined
    return term ?? null
  }

  /** The resourceVersion an owned object was last observed with (its owned-kind table), for preconditions. */
  private observedVersion(obj: KubeObject, cluster: string): string | undefined {
    if (!obj.kind) return undefined
    const name = ownedTableName({ kind: obj.kind }, cluster === this.cluster.name ? undefined : cluster)
    const w = this.watched.get(name)
    return w?.table.get(this.db.readTxn(), byName.queryOf(obj))?.metadata.resourceVersion
  }

  /** Shards this replica holds now (sharded managers). */
  shards(): number[] {
    return [...this.held].sort((a, b) => a - b)
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

/** A label selector narrowed to some shards (none: a shard that does not exist). */
function withShards(base: string | undefined, shards: readonly number[]): string {
  const sel = `${SHARD_LABEL} in (${shards.length ? shards.join(',') : 'none'})`
  return base ? `${base},${sel}` : sel
}
