// One error hierarchy: what @statewright/controller throws is a ControllerError with a `code`.
//   ControllerError        code
//   ├─ ConfigError         'Config'         bad options, a missing optional peer, a port in use
//   ├─ UsageError          'Usage'          a call at the wrong time (after start, a second start)
//   ├─ InvalidObjectError  'InvalidObject'  an object or condition lacking what the operation needs
//   ├─ CleanupError        'Cleanup'        a finalizer's cleanup failed (retried with backoff)
//   ├─ SyncError           'Sync'           a PrimaryController sync, or a write of its secondaries, failed (retried with backoff)
//   ├─ StoppedError        'Stopped'        the part is not running
//   └─ TimeoutError        'Timeout'        waitForConvergence ran out of time (the message lists what is pending)
// Errors of the layers below keep their own classes (statedb's StateDBError, k8s's K8sError and
// ApiError, the reconciler's ReconcilerError); object errors of derivations and reconcilers are kept
// as statuses and in health, not thrown.

export type ControllerErrorCode = 'Config' | 'Usage' | 'InvalidObject' | 'Cleanup' | 'Sync' | 'Stopped' | 'Timeout'

export class ControllerError extends Error {
  override name = 'ControllerError'
  constructor(
    message: string,
    readonly code: ControllerErrorCode,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}
export class ConfigError extends ControllerError {
  override name = 'ConfigError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Config', options)
  }
}
export class UsageError extends ControllerError {
  override name = 'UsageError'
  constructor(message: string) {
    super(message, 'Usage')
  }
}
export class InvalidObjectError extends ControllerError {
  override name = 'InvalidObjectError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'InvalidObject', options)
  }
}
export class CleanupError extends ControllerError {
  override name = 'CleanupError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Cleanup', options)
  }
}
export class SyncError extends ControllerError {
  override name = 'SyncError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Sync', options)
  }
}
export class StoppedError extends ControllerError {
  override name = 'StoppedError'
  constructor(message: string) {
    super(message, 'Stopped')
  }
}
export class TimeoutError extends ControllerError {
  override name = 'TimeoutError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Timeout', options)
  }
}
