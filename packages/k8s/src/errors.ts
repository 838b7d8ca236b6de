// What @statewright/k8s throws of its own: a K8sError (a StatewrightError) for the failures of
// Kubernetes itself; the shared classes (ConfigError, UsageError, StoppedError, TimeoutError) are
// re-exported here, and a target's failed prune is the reconciler's PruneError. The whole tree is in
// docs/architecture.md. `code` says what kind of failure it is: a string, and for ApiError the HTTP
// status the server answered (as Kubernetes' Status.code), with `reason` (NotFound, Conflict...).
//   K8sError               this file
//   ├─ ApiError            404, 409, 410, 422, 500...   the API server refused or failed a request (src/api-error.ts)
//   ├─ UnknownKindError    'UnknownKind'    the server serves no such kind (discovery)
//   ├─ InvalidObjectError  'InvalidObject'  an object lacks what the operation needs (name, namespace); the controller's too
//   ├─ WatchError          'Watch'          a watch stream line that is not a watch event
//   ├─ ReflectorError      'Reflector'      a list, transform or table write of a reflector failed
//   ├─ ForeignObjectError  'Foreign'        an object of the desired name is not ours (Target with adopt: false)
//   └─ FencedError         'Fenced'         a write whose lease term is over: not sent, or not awaited past the term (src/fence.ts)
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, StoppedError, TimeoutError, UsageError, type StatewrightErrorCode } from '@statewright/statedb'

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
