// What @statewright/controller throws: a StatewrightError (statedb's root; the whole tree and every
// code are in statedb's src/errors.ts). The package's modules import their error classes from here:
// the shared ones, k8s's InvalidObjectError, and the controller's own (controllererror.ts).
//   StatewrightError        statedb; shared by every package
//   ├─ ConfigError          'Config'         bad options, a missing optional peer, a port in use
//   ├─ UsageError           'Usage'          a call at the wrong time (after start, a second start), a bad CLI command
//   ├─ StoppedError         'Stopped'        the part is not running
//   ├─ TimeoutError         'Timeout'        waitForConvergence ran out of time (the message lists what is pending)
//   ├─ K8sError             k8s
//   │  └─ InvalidObjectError 'InvalidObject' an object or condition lacking what the operation needs
//   └─ ControllerError      controllererror.ts
//      ├─ CleanupError      'Cleanup'        a finalizer's cleanup failed (retried with backoff)
//      └─ InspectError      'Inspect'        the statewright CLI could not read the inspected process
// Errors of the layers below keep their classes (statedb's StateDBError, k8s's ApiError...); object
// errors of derivations and reconcilers are kept as statuses and in health, not thrown.
// The statewright CLI imports from statedb and controllererror.ts, not from here, so that it does not
// load @statewright/k8s (and @kubernetes/client-node).
export { StatewrightError, ConfigError, StoppedError, TimeoutError, UsageError, type StatewrightErrorCode } from '@statewright/statedb'
export { InvalidObjectError } from '@statewright/k8s'
export { ControllerError, CleanupError, InspectError, type ControllerErrorCode } from './controllererror.ts'
