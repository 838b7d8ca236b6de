// What @statewright/controller throws of its own: a ControllerError (a StatewrightError); the shared
// classes are re-exported here, and the package's modules import k8s's InvalidObjectError from here
// too (not exported: it is k8s's). The whole tree is in docs/architecture.md.
//   ControllerError      this file
//   ├─ CleanupError      'Cleanup'        a finalizer's cleanup failed (retried with backoff)
//   ├─ WorkflowError     'Workflow'       a Workflow step's error joined with the error it was given (`errors`)
//   ├─ ConversionError   'Conversion'     an object could not be converted between its kind's versions (the /convert webhook answers Failure with the message)
//   └─ TerminalError     'Terminal'       thrown by a reconcile or derive function: the object's error, not retried until it changes
// Errors of the layers below keep their classes (statedb's StateDBError, k8s's ApiError...); object
// errors of derivations and reconcilers are kept as statuses and in health, not thrown.
export { StatewrightError, ConfigError, StoppedError, TimeoutError, UsageError, type StatewrightErrorCode } from '@statewright/statedb'
export { InvalidObjectError } from '@statewright/k8s'
import { StatewrightError } from '@statewright/statedb'

export type ControllerErrorCode = 'Cleanup' | 'Workflow' | 'Conversion' | 'Terminal'

/** The controller's own failures: finalizer cleanups. */
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

/**
 * A Workflow step's error joined with the error the workflow was given (policy-machinery's
 * errors.Join): `errors` holds both, the given one first; the message is theirs, one per line.
 */
export class WorkflowError extends ControllerError {
  override name = 'WorkflowError'
  constructor(readonly errors: readonly unknown[]) {
    super(errors.map((e) => (e instanceof Error ? e.message : String(e))).join('\n'), 'Workflow', { cause: errors.at(-1) })
  }
}

/** An object could not be converted between its kind's versions; the message names it and both versions. */
export class ConversionError extends ControllerError {
  override name = 'ConversionError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Conversion', options)
  }
}

/**
 * Thrown by a reconcile or derive function for an error that retrying cannot fix (a spec that can
 * never work): the object's error as any other (Ready=False, a Warning Event, health) but not
 * retried; the function runs again when the object or what it read changes (controller-runtime's
 * reconcile.TerminalError).
 */
export class TerminalError extends ControllerError {
  override name = 'TerminalError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Terminal', options)
  }
}
