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
// This file: the Manager's registration of parts and its lifecycle; the parts' wiring is beside it
// (clusters.ts, watch.ts, target.ts, reconciler.ts, servers.ts, fences.ts, leadership.ts,
// reconcilestep.ts, flags.ts, manifests.ts, ../webhooks, ../crd). It is longer than a file should be
// because each public method of the one Manager class is here, with its doc comment; their machinery
// is not.
import { ConfigError, StoppedError, UsageError } from '../errors.ts'
import { nextProgress } from '../progress.ts'
import { DB, Table } from '@statewright/statedb'
import type { Reconciler, PromRegistry } from '@statewright/reconciler'
import { loadOptionalPeer, resolveTracer, type TracerLike } from '@statewright/statedb'
import { runCause, wrapRun } from './tracing.ts'
import type * as PromClient from 'prom-client'
import {
  K8sMetrics,
  newDesiredTable,
  type Cluster,
  type DriftWatcher,
  type EventRecorder,
  type LeaderElector,
  type Reflector,
  type ShardedLeases,
  type Target,
  type LeaseTerm,
  type WriteFence,
  type DesiredObject,
  type DesiredTable,
  type KindRef,
  type KubeObject,
} from '@statewright/k8s'
import { Derivation } from '../derive/derivation.ts'
import type { Finalizer } from '../finalizers.ts'
import type { NamedGraph } from '@statewright/topology'
import { createLogger } from '../logging.ts'
import type { Logger } from '@statewright/statedb'
import { ControllerMetrics } from '../metrics.ts'
import { desiredEquals, desiredOf, invalidDesired, pendingApply, shardLabelOf, shardOfInput, withCause } from './desired.ts'
import { managedFinalizer } from './managedfinalizer.ts'
import { readinessOf, statusOf, type ManagerParts, type ManagerState } from './health.ts'
import { startWork, type LeaderPart } from './leadership.ts'
import { ManagerServers } from './servers.ts'
import { WriteFences } from './fences.ts'
import {
  validateOptions,
  type Component,
  type ManagedDeriveOptions,
  type ManagedFinalizerOptions,
  type ManagedReconcileOptions,
  type ManagerOptions,
  type WatchOptions,
} from './options.ts'
import { newDesiredReconciler } from './reconciler.ts'
import { ReconcileStep } from './reconcilestep.ts'
import { StatusWriter } from '../conditions.ts'
import { ShardWork } from './shards.ts'
import { trapSignals } from './signals.ts'
import { installCrd } from '../crd/install.ts'
import type { WebhookOptions } from '../webhooks/server.ts'
import { manifests, rbacRules, shapeOf, type ManagerShape, type ManifestOptions, type PolicyRule } from './manifests.ts'
import { managerUsage, parseManagerFlags, withFlags, type ManagerFlags } from './flags.ts'
import type { ParseArgsConfig } from 'node:util'
import { ManagerWatches } from './watch.ts'
import { ManagerClusters } from './clusters.ts'
import { newManagerTarget } from './target.ts'
import { PruneGuard, derivationOwners, type PruneSource } from './pruneguard.ts'
import { OwnWrites } from './ownwrites.ts'

export class Manager {
  readonly name: string
  readonly db: DB
  readonly cluster: Cluster
  /** Every cluster, by name (the default one included). */
  /** The clusters by name (set by ManagerOptions.clusters). */
  readonly clusters: ReadonlyMap<string, Cluster>
  readonly logger: Logger
  /** The tracer of the Manager's function runs (ManagerOptions.tracer), or none. */
  readonly tracer: TracerLike | undefined
  readonly desired: DesiredTable
  readonly target: Target
  readonly reconciler: Reconciler<DesiredObject>
  /** Events about objects of the default cluster (eventsFor(name) for another). */
  readonly events: EventRecorder
  readonly registry: PromRegistry | undefined
  /** Reflectors, by table name. */
  /** The reflectors by table name (made by watch() and owns()). */
  readonly reflectors: ReadonlyMap<string, Reflector<KubeObject>>
  /** What each reflector reflects, by table name (waitForConvergence lists the same). */
  /** The watched kinds by table name. */
  readonly watched: ReadonlyMap<string, { kind: KindRef; table: Table<KubeObject>; options: WatchOptions; cluster: Cluster }>
  /** Derivations: derive()'s, and each reconcile step's two. */
  /** The derivations (derive(), and each reconcile step's two). */
  get derivations(): ReadonlyArray<Derivation<any, any>> {
    return this.derivationList
  }
  private readonly derivationList: Derivation<any, any>[] = []
  /** The drift watchers of the owned kinds. */
  readonly drift: ReadonlyArray<DriftWatcher>
  /** The components (add()). */
  get components(): ReadonlyArray<Component> {
    return this.componentList
  }
  private readonly componentList: Component[] = []
  private readonly options: ManagerOptions
  private readonly clusterSet: ManagerClusters
  private readonly watches: ManagerWatches
  /** Tables whose objects' /status a reconcile step writes, and finalizers' tables (for rbacRules). */
  private readonly statusTables: Table<any>[] = []
  private readonly finalizedTables: Array<{ table: Table<any>; condition: boolean }> = []
  private readonly webhookKinds: Array<{ kind: KindRef<any>; validate: boolean; mutate: boolean }> = []
  private readonly metrics: ControllerMetrics | undefined
  private readonly k8sMetrics: K8sMetrics | undefined
  private readonly servers: ManagerServers
  private elector: LeaderElector | undefined
  private shardLeases: ShardedLeases | undefined
  /** Shards this replica holds now (sharded managers). */
  private readonly held = new Set<number>()
  private readonly ownWrites: OwnWrites
  private readonly fences: WriteFences
  private state: ManagerState = 'new'
  private stopping: Promise<void> | undefined
  private leading = false
  /** The leader-only parts run (this replica leads and its term's parts started; always without leader election). */
  private working = false
  private workWaiters: Array<() => void> = []
  private readonly offSignals: Array<() => void> = []
  /** derive()'s derivations and the reconcile steps: whose unsettled owners' children prune keeps. */
  private readonly pruneSources: PruneSource[] = []

  constructor(o: ManagerOptions) {
    validateOptions(o)
    this.options = o
    this.name = o.name
    this.db = o.db ?? new DB()
    this.logger = (o.logger ?? createLogger()).child({ controller: o.name })
    this.tracer = resolveTracer(o.tracer, '@statewright/controller')
    // without prom-client installed the Manager runs without metrics
    const prom = o.registry
      ? undefined
      : loadOptionalPeer<Pick<typeof PromClient, 'Registry'>>('prom-client', { from: import.meta.url, parts: { Registry: 'lib/registry' } })
    this.registry = o.registry ?? (prom ? new prom.Registry() : undefined)
    this.metrics = this.registry ? new ControllerMetrics(this.registry) : undefined
    this.k8sMetrics = this.registry ? new K8sMetrics(this.registry) : undefined
    this.fences = new WriteFences(o, this.held, (shard) => this.shardLeases?.termOfShard(shard))
    this.clusterSet = new ManagerClusters(o, this.metrics, this.logger)
    this.cluster = this.clusterSet.default
    this.clusters = this.clusterSet.byName
    if (this.tracer) for (const c of this.clusters.values()) c.setTracer(this.tracer) // k8s.request spans
    this.desired = newDesiredTable('desired')
    this.db.register(this.desired.table)
    const guard = new PruneGuard(this.db, () => this.pruneSources, this.logger)
    this.target = newManagerTarget({
      options: o,
      clusters: [...this.clusters.values()],
      held: this.held,
      fences: this.fences,
      observedVersion: (obj, cluster) => this.watches.observedVersion(obj, cluster),
      metrics: this.k8sMetrics,
      prunable: (obj, cluster, txn) => guard.prunable(obj, cluster, txn),
      // reads that see our own writes (./ownwrites.ts)
      onApplied: (obj, cluster) => this.sawOwnWrite(obj, cluster),
    })
    this.watches = new ManagerWatches({
      name: o.name,
      db: this.db,
      options: o,
      desired: this.desired,
      target: this.target,
      clusters: this.clusterSet,
      metrics: this.k8sMetrics,
      logger: this.logger,
    })
    this.reflectors = this.watches.reflectors
    this.watched = this.watches.watched
    this.ownWrites = new OwnWrites(
      this.db,
      () => this.watched.values(),
      (t) => this.reflectors.get(t.name)?.currentLabelSelector,
      (t) => this.reflectors.get(t.name)?.writtenResourceVersion,
    )
    this.drift = this.watches.drift
    this.events = this.eventsFor(this.cluster.name)
    this.reconciler = newDesiredReconciler({
      name: this.name,
      db: this.db,
      desired: this.desired,
      target: this.target,
      logger: this.logger,
      mine: (d) => !this.options.sharding || this.held.has(shardLabelOf(d.object)),
      options: o,
      events: (cluster) => this.eventsFor(cluster ?? this.cluster.name),
      ...(this.metrics ? { metrics: this.metrics } : {}),
    })
    this.servers = new ManagerServers(
      o,
      {
        db: this.db,
        registry: this.registry,
        live: () => this.state === 'running' || this.state === 'starting',
        ready: () => this.readiness(),
        status: () => this.status(),
        reconcilers: () => [this.reconciler, ...this.components.flatMap((c) => c.reconcilers?.() ?? [])],
        graphs: () => this.graphs(),
        onError: (err, path) => this.logger.error({ err, path }, 'http: answering a request failed'),
      },
      this.logger,
    )
  }

  /**
   * A Manager configured by controller-runtime's usual flags and their environment variables
   * (--metrics-bind-address, --health-probe-bind-address, --leader-elect, --kubeconfig,
   * --zap-log-level; see flags.ts): they override `o`'s matching options. `--help` writes the usage
   * and exits 0; an unknown flag or a bad value writes what is wrong and the usage to stderr and
   * exits 2 (Go's flag package does so). `extra` declares the
   * operator's own flags (parseArgs options); their values are in `m.flags.extra`.
   */
  static fromFlags(
    o: ManagerOptions,
    io: {
      argv?: readonly string[]
      env?: NodeJS.ProcessEnv
      extra?: ParseArgsConfig['options']
      out?: (text: string) => void
      /** Where a bad flag's message and the usage go (default stderr). */
      err?: (text: string) => void
      exit?: (code: number) => never
    } = {},
  ): Manager {
    let parsed: ReturnType<typeof parseManagerFlags>
    try {
      parsed = parseManagerFlags(o.name, io)
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      // as Go's flag package: the problem and the usage on stderr, exit status 2
      // the message quotes argv: no control sequence of it reaches the terminal
      const message = err.message.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?')
      ;(io.err ?? ((t: string) => process.stderr.write(t)))(`${o.name}: ${message}\n\n${managerUsage(o.name, io.extra)}`)
      return (io.exit ?? process.exit)(2)
    }
    if (parsed.help) {
      ;(io.out ?? ((t: string) => process.stdout.write(t)))(parsed.usage)
      return (io.exit ?? process.exit)(0)
    }
    const m = new Manager(withFlags(o, parsed.flags))
    m.flags = { ...parsed.flags, extra: parsed.extra, positionals: parsed.positionals }
    return m
  }

  /** What fromFlags read (undefined for a Manager made with `new`). */
  flags: (ManagerFlags & { extra: Record<string, string | boolean | undefined>; positionals: string[] }) | undefined

  /** Reflects a kind into a new table (call before start). */
  watch<T extends object = KubeObject>(typed: KindRef<T>, opts: WatchOptions = {}): Table<NoInfer<T>> {
    this.notStarted('watch')
    return this.watches.watch(typed as KindRef, opts) as unknown as Table<T>
  }

  /** Derives desired objects from tables: what `fn` returns is applied, and deleted when no longer returned. */
  derive<In>(o: ManagedDeriveOptions<In>): Derivation<In, DesiredObject> {
    this.notStarted('derive')
    this.owns(...(o.owns ?? []))
    const fn = wrapRun(this.tracer, 'controller.derive', o.name ?? this.name, o.fn, this.logger)
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
        const r = fn(input, ctx)
        // traced: the run's span is the parent of its outputs' applies
        return withCause(
          desiredOf(r, this.cluster.name, shard, (name) => void this.clusterNamed(name)),
          runCause(r),
        )
      },
      validate: invalidDesired,
      equals: desiredEquals,
      hold: (keys, txn) => pendingApply(this.desired.table, keys, txn), // its outputs are desired rows
      ...(o.onDeleted ? { onDeleted: o.onDeleted } : {}),
      ...(this.metrics ? { observe: (result, s) => this.metrics!.reconcileRun(o.name ?? this.name, result, s) } : {}),
    })
    this.derivationList.push(d)
    this.pruneSources.push(derivationOwners(d))
    return d
  }

  /**
   * A reconcile step (controller-runtime's Reconcile, kopf's handlers): `fn` runs per object of the
   * primary kind and returns the children to apply (as derive's outputs), the status and conditions
   * to write on /status (only when changed), and `requeueAfterMs`. A throw is the object's error:
   * Ready=False with the message, a Warning Event, a retry with backoff, degraded health.
   */
  reconcile<T extends object = KubeObject>(o: ManagedReconcileOptions<T>): ReconcileStep<T> {
    this.notStarted('reconcile')
    this.owns(...(o.owns ?? []))
    const primary: Table<T> = o.for instanceof Table ? o.for : this.watch<T>(o.for)
    const name = o.name ?? primary.name
    if (this.derivations.some((d) => d.name === name))
      throw new ConfigError(`Manager "${this.name}": a derivation or reconcile step is already named "${name}" (give it a name)`)
    const sh = this.options.sharding
    const step = new ReconcileStep<T>({
      name,
      db: this.db,
      primary,
      ...(o.joins ? { joins: o.joins } : {}),
      fn: wrapRun(this.tracer, 'controller.reconcile_step', name, o.fn, this.logger.child({ reconcile: name })),
      ...(o.onDeleted ? { onDeleted: o.onDeleted } : {}),
      toDesired: (children, obj) => {
        const shard = sh ? shardOfInput(obj, sh.shards) : undefined
        if (shard !== undefined && !this.held.has(shard)) return undefined // another replica's (or nobody's yet)
        return desiredOf(children, this.cluster.name, shard, (n) => void this.clusterNamed(n))
      },
      invalid: invalidDesired,
      desired: this.desired.table,
      readyCondition: o.readyCondition ?? 'Ready',
      conditionEvents: this.options.conditionEvents === false ? false : (o.conditionEvents ?? undefined),
      observedGeneration: o.observedGeneration ?? true,
      ownerReferences: o.ownerReferences ?? true,
      writer: new StatusWriter({
        cluster: this.cluster,
        fieldManager: this.name,
        fence: (obj) => this.fences.ofPrimary(obj),
        onWritten: (answer) => void this.sawOwnWrite(answer, this.cluster.name),
      }),
      events: this.events,
      retry: this.options.retry,
      logger: this.logger.child({ reconcile: name }),
      leaderOnly: !sh,
      ...(this.metrics ? { observe: (result, s) => this.metrics!.reconcileRun(name, result, s) } : {}),
    })
    this.statusTables.push(primary)
    this.derivationList.push(step.derivation, step.children)
    this.pruneSources.push(step)
    this.add(step.component)
    return step
  }

  /**
   * Kinds the desired objects have (like controller-runtime's Owns): objects of them carrying our
   * owner label are pruned when not desired (also right after a restart), and watched for drift.
   */
  owns(...kinds: KindRef<any>[]): void {
    this.notStarted('owns')
    this.watches.owns(kinds)
  }

  /**
   * A finalizer on a watched kind: added on first sight; on deletion `cleanup` runs (retried with
   * backoff, failures as a condition on the object and in /statusz) and the finalizer is removed.
   * Leader-only; waitForConvergence waits for its cleanups.
   */
  finalizer<T extends object = KubeObject>(o: ManagedFinalizerOptions<T>): Finalizer {
    this.notStarted('finalizer')
    this.finalizedTables.push({ table: o.on, condition: o.condition !== false })
    const cleanup = wrapRun(this.tracer, 'controller.finalizer_cleanup', o.name, o.cleanup)
    const { finalizer, component } = managedFinalizer(
      { ...o, cleanup },
      {
        cluster: this.cluster,
        db: this.db,
        fieldManager: this.name,
        logger: this.logger,
        fence: () => this.writeFence(),
        events: this.events,
      },
    )
    this.add(component)
    return finalizer
  }

  /**
   * The ClusterRole rules of exactly the requests this Manager's parts make (see manifests.ts;
   * test/rbac.test.ts proves them against a run's recorded requests).
   */
  rbacRules(): PolicyRule[] {
    return rbacRules(this.shape())
  }

  /** The objects to deploy this Manager: CRDs, ServiceAccount, ClusterRole and binding, Deployment. */
  manifests(o: ManifestOptions = {}): KubeObject[] {
    return manifests(this.shape(), o)
  }

  private shape(): ManagerShape {
    const { name, options, watched, statusTables, finalizedTables, webhookKinds } = this
    return shapeOf({
      name,
      options,
      watched: [...watched.values()],
      owned: [...this.watches.owned.values()],
      statusTables,
      finalizedTables,
      webhookKinds,
      extraRules: this.components.flatMap((c) => c.rbac ?? []),
    })
  }

  /**
   * An admission webhook for a kind (validating, mutating or both), served over HTTPS by the
   * Manager's webhook server (`webhooks` option) at controller-runtime's paths; returns the paths.
   * Served on every replica (the API server may call any of them). manifests() writes its
   * WebhookConfigurations. A custom kind whose versions convert is also served at /convert.
   */
  webhook<T extends object = KubeObject>(o: WebhookOptions<T>): string[] {
    this.notStarted('webhook')
    const paths = this.servers.webhooks.add(o)
    this.webhookKinds.push({ kind: o.for as KindRef<any>, validate: !!o.validate, mutate: !!o.mutate })
    return paths
  }

  /** The webhook server's base URL once started (with webhooks). */
  get webhookUrl(): string | undefined {
    return this.servers.webhookUrl
  }

  /** Adds a part with a lifecycle (started by start(), stopped by stop()). */
  add(c: Component): void {
    this.notStarted('add')
    this.componentList.push(c)
  }

  /** The probes server's base URL once started (`probes`). */
  get probesUrl(): string | undefined {
    return this.servers.probesUrl
  }

  /** The HTTP server's base URL once started. */
  get url(): string | undefined {
    return this.servers.url
  }

  async start(): Promise<void> {
    if (this.state !== 'new')
      throw new UsageError(`Manager "${this.name}": start() was already called (state ${this.state}); a Manager starts once`)
    const unusable = this.clusterSet.unusable
    if (unusable) throw new ConfigError(`Manager "${this.name}": no cluster to run against: ${unusable.message}`, { cause: unusable })
    this.state = 'starting'
    try {
      await this.servers.listen()
      for (const k of this.options.installCrds ?? [])
        await installCrd(this.cluster, this.servers.webhooks.installable(k.crd, this.servers.webhookUrl), this.name, this.logger)
      for (const r of this.reflectors.values()) await r.start()
      const parts: LeaderPart[] = [
        ...this.derivations,
        this.reconciler,
        ...this.drift.map((d, i) => ({ name: `drift-${i}`, start: () => d.start(), stop: () => d.stop() })),
        ...this.components.filter((c) => c.leaderOnly),
      ]
      for (const c of this.components.filter((c) => !c.leaderOnly)) await c.start()
      if (this.options.sharding && this.components.some((c) => c.leaderOnly))
        throw new ConfigError(
          `Manager "${this.name}": leader-only components (${this.components
            .filter((c) => c.leaderOnly)
            .map((c) => c.name)
            .join(', ')}) need leaderElection, not sharding`,
        )
      const work = await startWork({
        cluster: this.cluster,
        name: this.name,
        options: this.options,
        logger: this.logger,
        parts,
        catchUp: (term) => this.catchUp(term.signal),
        drain: (term) => this.drain(term),
        started: () => {
          this.working = true
          for (const f of this.workWaiters.splice(0)) f()
        },
        leading: (term) => {
          this.fences.term = term === true ? undefined : term
          this.leading = term !== undefined
          if (!this.leading) this.working = false
          if (!this.options.sharding) this.metrics?.leading(this.name, this.leading) // a shard holder is no leader
        },
        work: () =>
          new ShardWork({
            shards: this.options.sharding!.shards,
            held: this.held,
            db: this.db,
            desired: this.desired,
            target: this.target,
            drain: (term) => this.drain(term),
            derivations: this.derivations,
            shardedCaches: () => this.watches.shardedCaches,
            catchUp: (term) => this.catchUp(term.signal),
            logger: this.logger,
          }),
      })
      this.elector = work.elector
      this.shardLeases = work.shardLeases
      if (this.options.handleSignals !== false) this.offSignals.push(...trapSignals(this.logger, () => this.stop()))
      this.state = 'running'
      this.logger.info({ url: this.servers.url, leaderElection: !!this.options.leaderElection }, 'manager started')
    } catch (err) {
      this.logger.error({ err }, 'manager failed to start')
      await this.stop().catch(() => {})
      throw err
    }
  }

  /** The writes sent under a term given up on purpose, answered: the Target's and every cluster's. */
  private drain(term: LeaseTerm): Promise<unknown> {
    return Promise.all([this.target.settled(term), ...[...this.clusters.values()].map((c) => c.settled(term))])
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
    this.working = false
    for (const f of this.workWaiters.splice(0)) f() // whenWorking: the Manager is stopping
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
    await this.clusterSet.closeEvents()
    await this.servers.close()
    await this.clusterSet.close()
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

  /** The Event recorder of a cluster (Events must be in the cluster of the object they are about). */
  eventsFor(cluster: string): EventRecorder {
    return this.clusterSet.eventsFor(cluster)
  }

  /**
   * The lease term the Manager's writes are made under now: the leader's term with leader election
   * (a never-valid fence between terms), undefined without leader election (writes are not fenced).
   * Pass it to writes of your own that belong to the leader's work (RequestOptions.fence).
   */
  /** @internal The answer to one of our writes (an apply, a status write) goes into the tables that reflect it. */
  sawOwnWrite(obj: KubeObject, cluster: string): Promise<void> {
    return this.ownWrites
      .saw(obj, cluster)
      .catch((err) => this.logger.warn({ err }, 'the answer to a write could not be put in its tables'))
  }

  writeFence(): WriteFence | undefined {
    return this.fences.leader()
  }

  /**
   * Resolves once this replica does the leader's work: it leads and its leader-only parts have
   * started (at once without leader election, once started). Rejects when `signal` aborts, or with a
   * StoppedError when the Manager stops first.
   */
  async whenWorking(signal?: AbortSignal): Promise<void> {
    while (!this.working) {
      if (this.state === 'stopping' || this.state === 'stopped') throw new StoppedError(`Manager "${this.name}" is ${this.state}`)
      await nextProgress(this.workWaiters, signal)
    }
  }

  /** Whether this replica does the leader's work now (see whenWorking). */
  isWorking(): boolean {
    return this.working
  }

  /** Who leads, as this replica last saw it (its own identity when it leads; undefined without leader election). */
  leader(): { identity: string; leading: boolean; leader: string | undefined } | undefined {
    if (!this.elector) return undefined
    const s = this.elector.health()
    return { identity: s.identity, leading: s.leading, leader: s.leader }
  }

  /** Shards this replica holds now (sharded managers). */
  shards(): number[] {
    return [...this.held].sort((a, b) => a - b)
  }

  private clusterNamed(name: string | undefined): Cluster {
    return this.clusterSet.named(name)
  }

  private notStarted(what: string): void {
    if (this.state !== 'new') throw new UsageError(`Manager "${this.name}": ${what}() must be called before start()`)
  }
}
