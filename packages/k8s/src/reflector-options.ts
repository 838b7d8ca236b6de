// What a reflector is told: which cluster, kind and table, how a cluster object becomes table rows,
// and how it lists, batches, backs off and reports. Defaults are stated on each field.
import type { DB, RetryOptions, Table, Txn } from '@statewright/statedb'
import type { Logger } from '@statewright/statedb'
import type { Cluster } from './cluster.ts'
import type { KindRef, KubeObject, ResourceRef } from './gvk.ts'
import type { K8sMetrics } from './metrics.ts'

export interface ReflectorOptions<Obj = KubeObject> {
  cluster: Cluster
  db: DB
  table: Table<Obj>
  /** The kind (discovery finds its resource) or a ResourceRef (no discovery). */
  kind: KindRef | ResourceRef
  /** Name in health, metrics and the table's initializer (default "<cluster>/<kind>"). */
  name?: string
  /** Only this namespace (default: all). */
  namespace?: string
  labelSelector?: string
  fieldSelector?: string
  /**
   * Turns a cluster object into the table's objects: one, several (an array), or none. Default: the
   * object itself, compacted (compactObject: metadata.managedFields dropped unless keepManagedFields,
   * repeated metadata strings shared, identical label and annotation maps and ConfigMap data shared
   * and frozen unless `compact: false`). The object is fresh from JSON.parse: a transform may keep it.
   */
  transform?: (obj: KubeObject) => Obj | Obj[] | undefined | null
  /** The primary key of a table object as a string (default: namespace/name of a Kubernetes object). */
  key?: (obj: Obj) => string
  /** Insert with a merge (table.modify) instead of replacing. */
  merge?: (old: Obj, obj: Obj) => Obj
  /** The table objects this reflector owns, for relists (default: the whole table). */
  queryAll?: (txn: Txn) => Iterable<Obj>
  /** Keep metadata.managedFields in the default transform (default: dropped, as controller-runtime's TransformStripManagedFields). */
  keepManagedFields?: boolean
  /**
   * The default transform shares repeated strings and identical small string maps (labels,
   * annotations, a core ConfigMap's data; not for sensitive objects) between objects, the shared
   * maps frozen (default true). false: objects are stored as parsed (managedFields still dropped
   * unless keepManagedFields). Ignored with a `transform`.
   */
  compact?: boolean
  /**
   * Mark what this reflector stores as sensitive (statedb's markSensitive): inspection then redacts
   * its `data`/`stringData` whatever a transform made of it. Default: true for core Secrets.
   */
  sensitive?: boolean
  /** Objects per list page (default 500). */
  pageSize?: number
  /** Most objects per write transaction (default 1000). */
  batchSize?: number
  /** Longest delay between an event and its write, ms (default 10). */
  batchDelayMs?: number
  /** Server-side watch timeout: random in [s, 2s] (default 300 s, like client-go). */
  watchTimeoutSeconds?: number
  /**
   * A watch that delivers nothing, no event and no bookmark, for this long is ended and resumed from
   * its resourceVersion (a connection that died quietly: kopf's inactivity timeout). Default
   * 300 000 ms: the watch asks for bookmarks, which kube-apiserver sends about every minute.
   * 0 or Infinity: never.
   */
  inactivityTimeoutMs?: number
  /** Backoff after failures (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter ±20%). */
  retry?: RetryOptions
  /** Readiness is lost when lists and watches have failed for this long without a success (default 15 000 ms). */
  lostAfterMs?: number
  /** State-of-world mode: no watch; a full list every intervalMs replaces the table. */
  stateOfWorld?: { intervalMs: number }
  metrics?: K8sMetrics
  /**
   * Logs every failure at warn (the reflector retries anyway), with `err`, the reflector's name, its
   * cluster and kind: "list/watch failed; retrying with backoff", or "object skipped"; and a silent
   * watch restarted (`silentMs`, `resumeFrom`).
   */
  logger?: Logger
}
