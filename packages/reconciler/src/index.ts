// @statewright/reconciler: drives a target (a cluster, a file system, a device) towards the desired
// objects in one statedb table. The one public face of the package; docs/reconciler.md explains it.

export { Reconciler, type FailedObject, type ReconcilerStats } from './reconciler.ts'
export {
  defaultClone,
  DEFAULT_FULL_RECONCILIATION_INTERVAL_MS,
  type BatchEntry,
  type BatchOperations,
  type OpContext,
  type ObjectOpContext,
  type Operations,
  type ReconcilerConfig,
  type RefreshOptions,
  type ResolvedReconcilerConfig,
} from './config.ts'
export {
  newStatusIndex,
  newStatusSetIndex,
  nextStatusId,
  showStatus,
  statusDone,
  statusError,
  statusPending,
  statusRefreshing,
  StatusIndex,
  StatusSet,
  statusFromJSON,
  type StatusSetIndexOptions,
  type Status,
  type StatusKind,
} from './status.ts'
export {
  StatewrightError,
  ConfigError,
  StoppedError,
  TimeoutError,
  UsageError,
  ReconcilerError,
  PruneError,
  ReconciliationFailedError,
  type StatewrightErrorCode,
  type ReconcilerErrorCode,
} from './errors.ts'
export type { FullReport } from './full.ts'
export type { PruneReport } from './prune.ts'
export { describeHealth, type HealthInput, type ReconcilerHealth, type FailingObject } from './health.ts'
export { InMemoryMetrics, type Metrics, type OperationName, type OperationResult, type ReconcilerCounters } from './metrics.ts'
export { PrometheusMetrics, type PrometheusMetricsOptions, type PromRegistry } from './prometheus.ts'
export { waitForReconciliation, waitForSettled, type WaitOptions, type WaitForReconciliationOptions } from './wait.ts'
export { RateLimiter, checkRateLimit, type RateLimitOptions } from './ratelimit.ts'
export { eachEntry, BATCH_CONCURRENCY } from './batchpool.ts'
