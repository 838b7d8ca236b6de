// @statewright/controller: the operator surface on statedb, the reconciler and the k8s package.
// The one public face of the package.
export {
  setCondition, findCondition, isConditionTrue, conditionsOf, conditionTime, StatusWriter,
  type Condition, type ConditionInput, type ConditionStatus, type StatusPatch, type StatusWriterOptions,
} from './conditions.ts'
export {
  Finalizer,
  type FinalizerOptions, type FinalizerHealth, type FailingCleanup, type CleanupContext,
} from './finalizers.ts'
export { controllerRef, withOwner, ownerOf, ownerReferences, isOwnedBy, type OwnerReference } from './owners.ts'
