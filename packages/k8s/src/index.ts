// @statewright/k8s: mirror a Kubernetes cluster into statedb tables (reflectors) and drive a cluster
// from a table of desired objects (targets for the reconciler). The one public face of the package.
export { Cluster, ApiError, isNotFound, isConflict, isGone, type ClusterOptions, type RequestOptions, type RequestRecord } from './cluster.ts'
export {
  resolveKind, collectionPath, objectPath, namespacedName, describe, groupKind, splitApiVersion,
  type KubeObject, type KindRef, type ResourceRef,
} from './gvk.ts'
export { Reflector, type ReflectorOptions, type ReflectorHealth, type ReflectorState } from './reflector.ts'
export { LineDecoder, parseEvent, type WatchEvent } from './ndjson.ts'
export { Batcher, type Pending } from './batch.ts'
export { K8sMetrics, type CounterLike, type GaugeLike } from './metrics.ts'
export { StringPool, compactObject, stripManagedFields } from './compact.ts'
export { listAll, peekContinue, type ListOptions } from './list.ts'
export * from './lease.ts'
export * from './leader.ts'
export {
  Target, newDesiredTable, desired, objectKey,
  type DesiredObject, type DesiredTable, type TargetOptions, type TargetStats,
} from './target.ts'
export { DriftWatcher, holds, targetReconciler, type DriftOptions, type DriftHealth, type TargetReconcilerOptions } from './drift.ts'
export { type Fight, type RepairPacing } from './repairs.ts'
export * from './events.ts'
export * from './sharding.ts'
export * from './registry.ts'
export * from './ondemand.ts'
