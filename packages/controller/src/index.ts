// @statewright/controller: the operator surface on statedb, the reconciler and the k8s package.
// The one public face of the package.
export { derive, Derivation } from './derive/derivation.ts'
export { derivationErrors, type DerivationError } from './derive/failures.ts'
export type { DeriveContext, DeriveOptions, DerivationHealth, RunReason } from './derive/options.ts'
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
export { parseManagerFlags, managerUsage, type ManagerFlags, type ParsedFlags } from './manager/flags.ts'
export {
  customKind,
  type CustomKind,
  type CustomKindOptions,
  type CustomObject,
  type PrinterColumn,
  type SchemaLike,
  type StaticOf,
} from './crd/customkind.ts'
export { rbacRules, manifests, type PolicyRule, type ManifestOptions, type ManagerShape } from './manager/manifests.ts'
export { startAsServiceAccount, type RbacTestServer } from './manager/serviceaccount.ts'
export { WebhookServer, webhookPath, type AdmissionContext, type WebhookOptions, type WebhookServerOptions } from './webhooks/server.ts'
export { KindConversion, type Converted, type VersionOptions, type SameSchemaVersionOptions } from './crd/versions.ts'
export { ConversionWebhook, CONVERT_PATH, type ConversionAnswer } from './webhooks/conversion.ts'
export { ReconcileStep, type ChildObject, type ReconcileResult, type ReconcileOutcome } from './manager/reconcilestep.ts'
export { ControllerMetrics } from './metrics.ts'
export type { HttpOptions } from './http.ts'
export { inspectHandler, UI_CSP, type InspectOptions, type ObjectReconcileStatus } from './inspect/handler.ts'
export { waitForConvergence, type ConvergenceOptions, type ConvergenceResult } from './wait.ts'
export {
  setCondition,
  findCondition,
  isConditionTrue,
  conditionsOf,
  conditionTime,
  StatusWriter,
  type Condition,
  type ConditionInput,
  type ConditionStatus,
  type StatusPatch,
  type StatusWriterOptions,
} from './conditions.ts'
export { Finalizer, type FinalizerOptions, type FinalizerHealth, type FailingCleanup, type CleanupContext } from './finalizers.ts'
export { controllerRef, withOwner, ownerOf, ownerReferences, isOwnedBy, type OwnerReference } from './owners.ts'
export { StateOfWorldController, type StateOfWorldOptions } from './stateofworld/stateofworld.ts'
export type { ReconcileContext, ReconcileFn, ResourceEvent } from './stateofworld/reconcile.ts'
export type { WatchSpec } from './stateofworld/watched.ts'
export { Subscription, Workflow, matches, type EventMatcher, type WorkflowOptions } from './stateofworld/workflow.ts'
export { type TracerLike, type SpanLike } from './stateofworld/tracing.ts'
export { traceReconcile } from './stateofworld/reconcile.ts'
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
