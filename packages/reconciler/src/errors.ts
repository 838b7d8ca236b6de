// What @statewright/reconciler throws of its own: a ReconcilerError (a StatewrightError); the shared
// classes are re-exported here. The whole tree is in docs/architecture.md.
//   ReconcilerError   this file
//   ├─ PruneError     'Prune'     a target's prune could not remove some objects (all were tried)
//   └─ ReconciliationFailedError 'ReconciliationFailed'  waitForReconciliation({ onError: 'reject' }): objects in error
// Operation failures are not wrapped: they are the operations' own errors, kept as statuses.
// PruneError lives here because prune is a reconciler operation: the k8s and nats targets throw it.
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, StoppedError, TimeoutError, UsageError, type StatewrightErrorCode } from '@statewright/statedb'

export type ReconcilerErrorCode = 'Prune' | 'ReconciliationFailed'

/** The reconciler's own failures. */
export class ReconcilerError extends StatewrightError {
  override name = 'ReconcilerError'
  declare readonly code: ReconcilerErrorCode
  constructor(message: string, code: ReconcilerErrorCode, options?: ErrorOptions) {
    super(message, code, options)
  }
}

/**
 * A target's prune could not remove some objects: every one was tried, `failures` says why each
 * failed. The full reconciliation reports it (health degraded) and prunes again on the next round.
 */
export class PruneError extends ReconcilerError {
  override name = 'PruneError'
  constructor(
    message: string,
    readonly failures: readonly string[] = [],
    options?: ErrorOptions,
  ) {
    super(message, 'Prune', options)
  }
}

/**
 * waitForReconciliation with `onError: 'reject'`: nothing is pending, and these objects are in
 * error (the message names the first few, with their errors).
 */
export class ReconciliationFailedError extends ReconcilerError {
  override name = 'ReconciliationFailedError'
  constructor(
    message: string,
    readonly failed: readonly unknown[],
    options?: ErrorOptions,
  ) {
    super(message, 'ReconciliationFailed', options)
  }
}
