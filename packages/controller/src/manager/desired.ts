// What a Manager's derivations put in the desired table: objects placed in a cluster (inCluster),
// labelled with their shard on sharded managers, and checked before they are applied.
// Invariants:
// - An object placed in the default cluster is stored without a cluster name (a desired object
//   that names no cluster belongs to the default one).
// - A derived object names a known cluster, has apiVersion, kind and name, and a namespace unless
//   its kind is cluster-scoped; anything else is a derivation error, never applied.
// - A sharded manager labels every derived object with its input's shard (SHARD_LABEL): pruning and
//   deletes act only on the shards this replica holds.
import { isDeepStrictEqual } from 'node:util'
import { desired, namespacedName, shardOf, type DesiredObject, type KubeObject } from '@statewright/k8s'
import type { Key, SpanContextLike, Table, Txn, Watch } from '@statewright/statedb'

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

/** The label that says which shard a derived object belongs to (sharded managers). */
export const SHARD_LABEL = 'statewright.io/shard'
export const shardLabelOf = (obj: KubeObject | undefined): number => Number(obj?.metadata?.labels?.[SHARD_LABEL] ?? NaN)
/** A label selector narrowed to some shards (none: a shard that does not exist). */
export function withShards(base: string | undefined, shards: readonly number[]): string {
  const sel = `${SHARD_LABEL} in (${shards.length ? shards.join(',') : 'none'})`
  return base ? `${base},${sel}` : sel
}

/** The shard of a derivation's input: by namespace/name for objects, else by its JSON. */
export function shardOfInput(input: unknown, shards: number): number {
  const o = input as KubeObject
  const key = o?.metadata ? namespacedName(o) : JSON.stringify(input)
  return shardOf(key, shards)
}

/**
 * The desired objects of what a derivation's fn returned: placed in `defaultCluster` unless placed
 * elsewhere (`checkCluster` throws for an unknown cluster), labelled with `shard` when given.
 */
export function desiredOf(
  r: KubeObject | Placed | ReadonlyArray<KubeObject | Placed> | undefined | null,
  defaultCluster: string,
  shard: number | undefined,
  checkCluster: (name: string) => void,
): DesiredObject[] {
  const objs =
    r === undefined || r === null ? [] : Array.isArray(r) ? (r as ReadonlyArray<KubeObject | Placed>) : [r as KubeObject | Placed]
  return objs.map((x) => {
    const placed = isPlaced(x) ? x : { cluster: defaultCluster, object: x }
    checkCluster(placed.cluster)
    const object =
      shard === undefined
        ? placed.object
        : {
            ...placed.object,
            metadata: { ...placed.object.metadata, labels: { ...placed.object.metadata.labels, [SHARD_LABEL]: String(shard) } },
          }
    return desired(object, placed.cluster === defaultCluster ? undefined : placed.cluster)
  })
}

/** Desired objects with the run's span `cause` (traced only). */
export function withCause(out: DesiredObject[], cause: SpanContextLike | undefined): DesiredObject[] {
  return cause ? out.map((d) => ({ ...d, cause })) : out
}

/**
 * Expectations: the watch of the first of the desired objects `keys` whose apply is not answered yet
 * (pending in the desired table), or undefined. The Manager holds an owner's next run until then, so
 * that fn reads what its last run wrote (a generated password is not generated twice).
 */
export function pendingApply(desired: Table<DesiredObject>, keys: Iterable<Key>, txn: Txn): Watch | undefined {
  for (const k of keys) {
    const q = desired.primary.query(k)
    if (desired.get(txn, q)?.status.kind === 'pending') return desired.getWatch(txn, q)[1]
  }
  return undefined
}

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

/** Why a desired object cannot be applied, or undefined when it can. */
export function invalidDesired(out: DesiredObject): string | undefined {
  const m = out.object?.metadata
  if (!out.object?.apiVersion || !out.object?.kind) return 'the object has no apiVersion or kind'
  if (!m?.name) return `the ${out.object.kind} has no metadata.name`
  if (!m.namespace && !CLUSTER_SCOPED.has(out.object.kind)) return `the ${out.object.kind} "${m.name}" has no metadata.namespace`
  return undefined
}

/**
 * Two desired objects are equal when their cluster and object are, whatever the order of their keys
 * (an equal output is not written again, nor applied again).
 */
export function desiredEquals(a: DesiredObject, b: DesiredObject): boolean {
  return a.cluster === b.cluster && isDeepStrictEqual(a.object, b.object)
}
