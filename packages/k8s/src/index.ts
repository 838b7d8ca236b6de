// @statewright/k8s: mirror a Kubernetes cluster into statedb tables (reflectors) and drive a cluster
// from a table of desired objects (targets for the reconciler). The one public face of the package.
// Not an export: loaded for its effect, the Kubernetes rules of statedb's redaction (./redaction.ts).
import './redaction.ts'
export { Cluster } from './cluster.ts'
export type { ClusterOptions, RequestOptions, RequestRecord } from './cluster-options.ts'
export { ApiError, isNotFound, isConflict, isGone } from './api-error.ts'
export { Kubeconfig, type KubeconfigView, type KubeconfigCluster, type KubeconfigUser, type KubeconfigContext } from './kubeconfig.ts'
export { FencedError, NOT_LEADING, checkFence, type WriteFence } from './fence.ts'
export {
  resolveKind,
  collectionPath,
  objectPath,
  namespacedName,
  newerResourceVersion,
  groupOf,
  describe,
  groupKind,
  splitApiVersion,
  type KubeObject,
  type KindRef,
  type ResourceRef,
} from './gvk.ts'
// the kind constants are a face of their own: @statewright/k8s/kinds (src/kinds.ts)
export { Reflector } from './reflector.ts'
export type { ReflectorOptions } from './reflector-options.ts'
export type { ReflectorHealth, ReflectorState } from './reflector-health.ts'
export type { WatchEvent } from './ndjson.ts'
export {
  StatewrightError,
  ConfigError,
  StoppedError,
  TimeoutError,
  UsageError,
  K8sError,
  UnknownKindError,
  InvalidObjectError,
  WatchError,
  ReflectorError,
  ForeignObjectError,
  type StatewrightErrorCode,
  type K8sErrorCode,
} from './errors.ts'
export { K8sMetrics, type CounterLike, type GaugeLike, type MetricLabels } from './metrics.ts'
export { MapPool, StringPool, compactObject, stripManagedFields } from './compact.ts'
export { listAll, peekContinue, type ListOptions } from './list.ts'
export { LeaseLock, type LeaseLockOptions, type AttemptResult, type LeaseHolding } from './lease.ts'
export { leaseDurationMsOf, LEASE_DURATION_ANNOTATION, type LeaseSpec, type LeaseObject } from './lease-record.ts'
export type { LeaseTerm } from './lease-term.ts'
export {
  LeaderElector,
  leaderOnly,
  type LeaderCallbacks,
  type LeaderElectorOptions,
  type LeaderElectorHealth,
  type Runnable,
} from './leader.ts'
export { Target, targetReconciler, type TargetReconcilerOptions } from './target.ts'
export type { TargetOptions, TargetStats } from './target-options.ts'
export { newDesiredTable, desired, objectKey, type DesiredObject, type DesiredTable } from './desired.ts'
export { DriftWatcher, holds, type DriftOptions, type DriftHealth } from './drift.ts'
export { type Fight, type RepairPacing } from './repairs.ts'
export {
  EventRecorder,
  ReconcileEvents,
  type EventType,
  type EventRecorderOptions,
  type EventRecorderStats,
  type ReconcileEventsOptions,
} from './events.ts'
export { ShardedLeases, shardOf, LEASE_GROUP_LABEL, type ShardedLeasesOptions, type ShardedLeasesHealth } from './sharding.ts'
export { ClusterRegistry, type ClusterDefaults, type SecretRef, type RegistryEvent } from './registry.ts'
export { KubeconfigSecrets, type KubeconfigSecretsOptions } from './kubeconfigsecrets.ts'
export { WatchOnDemand, type WatchOnDemandOptions, type CacheInfo, type CacheEvent } from './ondemand.ts'
export { targetString, type TargetRef } from './ondemand-targets.ts'
export { KubeSecondaries, kubeStatusWriter } from './secondaries.ts'
