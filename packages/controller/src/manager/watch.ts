// What a Manager watches: the tables its reflectors fill (named after the kind, keyed by
// namespace/name), the kinds it owns, and the drift repair over the objects of an owned kind.
// Invariants:
// - A table of a cluster other than the default one is named with that cluster's name first, so one
//   kind watched in several clusters gets one table per cluster.
// - Owned kinds are watched through our owner label only, in every cluster: drift repair never sees,
//   so never touches, an object we did not apply.
// - A sharded watch with a cache per shard holds no shard until this replica holds one (its label
//   selector names the held shards; ./shards.ts narrows and widens it).
import {
  DriftWatcher,
  Reflector,
  namespacedName,
  type Cluster,
  type DesiredTable,
  type EventRecorder,
  type K8sMetrics,
  type KindRef,
  type KubeObject,
  type RepairPacing,
  type Target,
} from '@statewright/k8s'
import type { ManagerOptions, WatchOptions } from './options.ts'
import { defineIndex, Table, type DB } from '@statewright/statedb'
import type { Logger } from '@statewright/statedb'
import type { ManagerClusters } from './clusters.ts'
import { withShards } from './desired.ts'

/** The primary index of a watched table: namespace/name. */
export const byName = defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true })

/** A kind's table name: lower case, plural-ish ("sites", "gatewayclasses", "ratelimitpolicies"). */
export function plural(kind: string): string {
  const k = kind.toLowerCase()
  return /(s|x|ch|sh)$/.test(k) ? `${k}es` : /[^aeiou]y$/.test(k) ? `${k.slice(0, -1)}ies` : `${k}s`
}

/** The table of an owned kind in a cluster (the default cluster's has no cluster prefix). */
export function ownedTableName(kind: Pick<KindRef, 'kind'>, cluster: string | undefined): string {
  return `owned-${cluster === undefined ? '' : `${cluster}-`}${plural(kind.kind)}`
}

/** The reflector of a watch() into `table`; list/watch failures are logged (it retries with backoff). */
export function newReflector(o: {
  cluster: Cluster
  db: DB
  table: Table<KubeObject>
  kind: KindRef
  name: string
  options: WatchOptions
  metrics: K8sMetrics | undefined
  logger: Logger
}): Reflector<KubeObject> {
  const { name: _n, cluster: _c, sharded: _s, ...ropts } = o.options
  return new Reflector({
    cluster: o.cluster,
    db: o.db,
    table: o.table,
    kind: o.kind,
    name: o.name,
    ...ropts,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    logger: o.logger, // failures at warn, with the reflector, cluster and kind
  })
}

/** Drift repair over the observed objects of an owned kind in one cluster. */
export function newDriftWatcher(o: {
  db: DB
  observed: Table<KubeObject>
  desired: DesiredTable
  fieldManager: string
  events: EventRecorder
  /** Another cluster than the default one: its name. */
  cluster: string | undefined
  pacing: RepairPacing | undefined
  metrics: K8sMetrics | undefined
  logger: Logger
}): DriftWatcher {
  const log = o.logger
  return new DriftWatcher({
    db: o.db,
    observed: o.observed,
    desired: o.desired,
    fieldManager: o.fieldManager,
    events: o.events,
    // desired objects that name no cluster belong to the default one; those of another name it
    ...(o.cluster === undefined ? {} : { cluster: o.cluster, matchDefaultCluster: false }),
    ...(o.pacing ? { pacing: o.pacing } : {}),
    ...(o.metrics ? { metrics: o.metrics } : {}),
    onDrift: (d, reason) =>
      log.info({ object: `${d.object.metadata.namespace ?? ''}/${d.object.metadata.name}`, reason }, 'managed object drifted; repairing'),
    onFight: (f) =>
      log.warn(
        { object: f.key, otherManager: f.otherManager, repairs: f.repairs },
        'another writer keeps reverting this object; repairs are backed off',
      ),
  })
}

/** What a watched table reflects. */
export interface WatchedTable {
  kind: KindRef
  table: Table<KubeObject>
  options: WatchOptions
  cluster: Cluster
}

/** A Manager's watches: the watched kinds' reflectors and tables, the owned kinds and their drift repair. */
export class ManagerWatches {
  /** Reflectors, by table name. */
  readonly reflectors = new Map<string, Reflector<KubeObject>>()
  /** What each reflector reflects, by table name. */
  readonly watched = new Map<string, WatchedTable>()
  readonly drift: DriftWatcher[] = []
  /** Owned kinds, by apiVersion/kind. */
  readonly owned = new Map<string, KindRef>()
  /** Reflectors whose cache follows the held shards (sharded managers), with their selector's fixed part. */
  readonly shardedCaches: Array<{ reflector: Reflector<KubeObject>; base: string | undefined }> = []

  constructor(
    private readonly m: {
      name: string
      db: DB
      options: Pick<ManagerOptions, 'sharding' | 'drift'>
      desired: DesiredTable
      target: Target
      clusters: ManagerClusters
      metrics: K8sMetrics | undefined
      logger: Logger
    },
  ) {}

  /** Reflects a kind into a new table. */
  watch(kind: KindRef, opts: WatchOptions): Table<KubeObject> {
    const { m } = this
    const cluster = m.clusters.named(opts.cluster)
    const name = opts.name ?? `${cluster === m.clusters.default ? '' : `${cluster.name}-`}${plural(kind.kind)}`
    const table = new Table<KubeObject>({ name, primary: byName })
    m.db.register(table)
    this.watched.set(name, { kind, table, options: opts, cluster })
    const sh = m.options.sharding
    const perShard = !!sh && sh.cachePerShard !== false && !!opts.sharded
    const reflector = newReflector({
      cluster,
      db: m.db,
      table,
      kind,
      name,
      // a per-shard cache holds no shard until this replica holds one
      options: perShard ? { ...opts, labelSelector: withShards(opts.labelSelector, []) } : opts,
      metrics: m.metrics,
      logger: m.logger,
    })
    if (perShard) this.shardedCaches.push({ reflector, base: opts.labelSelector })
    this.reflectors.set(name, reflector)
    return table
  }

  /** Kinds the desired objects have: the Target manages them; each is watched for drift in every cluster. */
  owns(kinds: KindRef<any>[]): void {
    for (const k of kinds) {
      const id = `${k.apiVersion}/${k.kind}`
      if (this.owned.has(id)) continue
      this.owned.set(id, k)
      this.m.target.manage(k)
      for (const c of this.m.clusters.byName.values()) this.watchOwned(k, c)
    }
  }

  /** The resourceVersion an owned object was last observed with (its owned-kind table), for preconditions. */
  observedVersion(obj: KubeObject, cluster: string): string | undefined {
    if (!obj.kind) return undefined
    const name = ownedTableName({ kind: obj.kind }, cluster === this.m.clusters.default.name ? undefined : cluster)
    const w = this.watched.get(name)
    return w?.table.get(this.m.db.readTxn(), byName.queryOf(obj))?.metadata.resourceVersion
  }

  /** A reflector of an owned kind in one cluster (selected by our owner label) and drift repair over it. */
  private watchOwned(kind: KindRef, cluster: Cluster): void {
    const { m } = this
    const other = cluster === m.clusters.default ? undefined : cluster.name
    const observed = this.watch(kind, {
      name: ownedTableName(kind, other),
      labelSelector: `statewright.io/owner=${m.name}`,
      keepManagedFields: true,
      cluster: cluster.name,
      sharded: true, // the Manager labels what it applies with its shard
    })
    this.drift.push(
      newDriftWatcher({
        db: m.db,
        observed,
        desired: m.desired,
        fieldManager: m.name,
        events: m.clusters.eventsFor(cluster.name),
        cluster: other,
        pacing: m.options.drift,
        metrics: m.metrics,
        logger: m.logger.child({ drift: kind.kind, cluster: cluster.name }),
      }),
    )
  }
}
