// What @statewright/reconciler throws: a StatewrightError (statedb's root; the whole tree and every
// code are in statedb's src/errors.ts), either one of the shared classes re-exported here, or a
// ReconcilerError for the reconciler's own failures.
//   StatewrightError     statedb; shared by every package
//   ├─ ConfigError       'Config'    a bad reconciler configuration, or a missing optional peer (prom-client)
//   ├─ StoppedError      'Stopped'   the reconciler was stopped (an operation's abort reason, a wait ended by stop)
//   ├─ UsageError        'Usage'     a call at the wrong time (start() while stopping, a status set query without a name)
//   └─ ReconcilerError   this file
//      ├─ PruneError     'Prune'     a target's prune could not remove some objects (all were tried)
//      └─ ReconciliationFailedError 'ReconciliationFailed'  waitForReconciliation({ onError: 'reject' }): objects in error
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
