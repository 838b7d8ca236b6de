// @statewright/controller: the operator surface on statedb, the reconciler and the k8s package.
// The package's main face; its other faces: ./parts, ./stateofworld, ./crd, ./webhooks, ./inspect, ./deploy
// (package.json's exports), each a folder's index.ts.
export type { DeriveContext, RunReason } from './derive/options.ts'
export { createLogger, nullLogger, type LoggerOptions, type LogLevel } from './logging.ts'
export { Manager } from './manager/manager.ts'
export { inCluster, type Placed } from './manager/desired.ts'
export type {
  Component,
  ComponentHealth,
  ManagerOptions,
  ManagedDeriveOptions,
  ManagedFinalizerOptions,
  ManagedReconcileOptions,
  WatchOptions,
} from './manager/options.ts'
export {
  ReconcileStep,
  type ChildObject,
  type ReconcileContext,
  type ReconcileResult,
  type ReconcileOutcome,
} from './manager/reconcilestep.ts'
export type { HttpOptions } from './http.ts'
export { waitForConvergence, type ConvergenceOptions, type ConvergenceResult } from './wait.ts'
export {
  setCondition,
  findCondition,
  isConditionTrue,
  conditionsOf,
  conditionTime,
  type Condition,
  type ConditionInput,
  type ConditionStatus,
  type StatusPatch,
} from './conditions.ts'
export type { CleanupContext } from './finalizers.ts'
export { controllerRef, withOwner, ownerOf, ownerReferences, isOwnedBy, type OwnerReference } from './owners.ts'
export {
  StatewrightError,
  ConfigError,
  StoppedError,
  TimeoutError,
  UsageError,
  ControllerError,
  CleanupError,
  WorkflowError,
  ConversionError,
  TerminalError,
  type StatewrightErrorCode,
  type ControllerErrorCode,
} from './errors.ts'
