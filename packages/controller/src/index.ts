// @statewright/controller: the operator surface on statedb, the reconciler and the k8s package.
// The one public face of the package.
export { derive, derivationErrors, Derivation, type DeriveContext, type DeriveOptions, type DerivationError, type DerivationHealth } from './derive.ts'
export { createLogger, nullLogger, type Logger, type LoggerOptions, type LogLevel } from './logging.ts'
export { Manager, inCluster, type Placed, type Component, type ComponentHealth, type ManagerOptions, type ManagedDeriveOptions, type ManagedFinalizerOptions, type WatchOptions } from './manager.ts'
export { ControllerMetrics } from './metrics.ts'
export type { HttpOptions } from './http.ts'
export { waitForConvergence, type ConvergenceOptions, type ConvergenceResult } from './wait.ts'
export { genTypes, type GenTypesOptions } from './gentypes.ts'
export {
  setCondition, findCondition, isConditionTrue, conditionsOf, conditionTime, StatusWriter,
  type Condition, type ConditionInput, type ConditionStatus, type StatusPatch, type StatusWriterOptions,
} from './conditions.ts'
export {
  Finalizer,
  type FinalizerOptions, type FinalizerHealth, type FailingCleanup, type CleanupContext,
} from './finalizers.ts'
export { controllerRef, withOwner, ownerOf, ownerReferences, isOwnedBy, type OwnerReference } from './owners.ts'
export {
  PrimaryController, KubeSecondaries, kubeStatusWriter, ownerKeyLabelValue, ownerStampKeys,
  type PrimaryControllerOptions, type PrimaryControllerStats, type SecondarySpec, type SecondaryTarget, type SecondaryWriteResult,
  type OwnerStamps, type PrimaryStatusWriter, type EventSink, type SyncContext, type SyncResult,
} from './primary.ts'
