// What a Manager watches: the tables its reflectors fill (named after the kind, keyed by
// namespace/name), and the drift repair over the objects of an owned kind.
// Invariants:
// - A table of a cluster other than the default one is named with that cluster's name first, so one
//   kind watched in several clusters gets one table per cluster.
// - Owned kinds are watched through our owner label only: drift repair never sees, so never touches,
//   an object we did not apply.
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
} from '@statewright/k8s'
import type { WatchOptions } from './options.ts'
import { defineIndex, type DB, type Table } from '@statewright/statedb'
import type { Logger } from '../logging.ts'

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
