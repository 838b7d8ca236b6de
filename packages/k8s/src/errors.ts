// What @statewright/k8s throws: a StatewrightError (statedb's root; the whole tree and every code are
// in statedb's src/errors.ts), either one of the shared classes re-exported here, or a K8sError for
// the failures of Kubernetes itself. `code` says what kind of failure it is: a string, and for
// ApiError the HTTP status the server answered (as Kubernetes' Status.code), with `reason`
// (NotFound, Conflict, Expired...).
//   StatewrightError          statedb; shared by every package
//   ├─ ConfigError            'Config'         bad options or kubeconfig, a missing peer dependency
//   ├─ TimeoutError           'Timeout'        no answer within the request timeout
//   ├─ StoppedError           'Stopped'        the part was stopped (an abort reason, or a call after stop)
//   ├─ UsageError             'Usage'          a call at the wrong time (a reflector started twice)
//   ├─ PruneError             'Prune'          some objects could not be pruned (all were tried); the reconciler's
//   └─ K8sError               this file
//      ├─ ApiError            404, 409, 410, 422, 500...   the API server refused or failed a request (src/cluster.ts)
//      ├─ UnknownKindError    'UnknownKind'    the server serves no such kind (discovery)
//      ├─ InvalidObjectError  'InvalidObject'  an object lacks what the operation needs (name, namespace); the controller's too
//      ├─ WatchError          'Watch'          a watch stream line that is not a watch event
//      ├─ ReflectorError      'Reflector'      a list, transform or table write of a reflector failed
//      ├─ ForeignObjectError  'Foreign'        an object of the desired name is not ours (Target with adopt: false)
//      └─ FencedError         'Fenced'         a write whose lease term is over: not sent, or not awaited past the term (src/fence.ts)
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, StoppedError, TimeoutError, UsageError, type StatewrightErrorCode } from '@statewright/statedb'
export { PruneError } from '@statewright/reconciler'

export type K8sErrorCode = 'UnknownKind' | 'InvalidObject' | 'Watch' | 'Reflector' | 'Foreign' | 'Fenced'

/** The failures of Kubernetes itself: what the server answered, and objects it cannot take. */
export class K8sError extends StatewrightError {
  override name = 'K8sError'
  declare readonly code: K8sErrorCode | number
  constructor(message: string, code: K8sErrorCode | number, options?: ErrorOptions) {
    super(message, code, options)
  }
}

export class UnknownKindError extends K8sError {
  override name = 'UnknownKindError'
  constructor(message: string) {
    super(message, 'UnknownKind')
  }
}
/** An object or condition lacks what the operation needs (a name, a namespace, a uid). */
export class InvalidObjectError extends K8sError {
  override name = 'InvalidObjectError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'InvalidObject', options)
  }
}
export class WatchError extends K8sError {
  override name = 'WatchError'
  constructor(message: string) {
    super(message, 'Watch')
  }
}
export class ReflectorError extends K8sError {
  override name = 'ReflectorError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Reflector', options)
  }
}
export class ForeignObjectError extends K8sError {
  override name = 'ForeignObjectError'
  constructor(message: string) {
    super(message, 'Foreign')
  }
}
