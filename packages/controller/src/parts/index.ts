// @statewright/controller/parts: the parts a Manager is made of, for a program that runs one without
// a Manager (an embedded derivation, a finalizer of its own, a status writer, the metrics): the
// Manager's methods (derive, reconcile, finalizer) make and run them for an operator.
export { derive, Derivation } from '../derive/derivation.ts'
export { derivationErrors, type DerivationError } from '../derive/failures.ts'
export type { DeriveOptions, DerivationHealth } from '../derive/options.ts'
export { Finalizer, type FinalizerOptions, type FinalizerHealth, type FailingCleanup } from '../finalizers.ts'
export { StatusWriter, type StatusWriterOptions } from '../conditions.ts'
export { ControllerMetrics } from '../metrics.ts'
