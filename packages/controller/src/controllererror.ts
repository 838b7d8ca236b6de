// The controller's own failures: ControllerError and its classes (the whole tree and every code are
// in statedb's src/errors.ts; errors.ts is what the package's modules import).
// Apart from errors.ts on purpose: errors.ts re-exports k8s's InvalidObjectError, and importing
// @statewright/k8s loads @kubernetes/client-node (half a second, 120 MB); the statewright CLI throws
// these without it.
import { StatewrightError } from '@statewright/statedb'

export type ControllerErrorCode = 'Cleanup' | 'Inspect'

/** The controller's own failures: finalizer cleanups, the inspection CLI. */
export class ControllerError extends StatewrightError {
  override name = 'ControllerError'
  declare readonly code: ControllerErrorCode
  constructor(message: string, code: ControllerErrorCode, options?: ErrorOptions) {
    super(message, code, options)
  }
}
/** A finalizer's cleanup failed; it is retried with backoff and shown as a condition. */
export class CleanupError extends ControllerError {
  override name = 'CleanupError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Cleanup', options)
  }
}
/** The statewright CLI could not read the inspected process: unreachable, a token refused, an HTTP error. */
export class InspectError extends ControllerError {
  override name = 'InspectError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Inspect', options)
  }
}
