// One error hierarchy: what @statewright/k8s throws is a K8sError. `code` says what kind of failure
// it is: a string for statewright's own errors, and for ApiError the HTTP status the server answered
// (as Kubernetes' Status.code), with `reason` (NotFound, Conflict, Expired...).
//   K8sError                  code
//   ├─ ApiError               404, 409, 410, 422, 500...   the API server refused or failed a request
//   ├─ ConfigError            'Config'         bad options or kubeconfig, a missing peer dependency
//   ├─ UnknownKindError       'UnknownKind'    the server serves no such kind (discovery)
//   ├─ InvalidObjectError     'InvalidObject'  an object lacks what the operation needs (name, namespace)
//   ├─ WatchError             'Watch'          a watch stream line that is not a watch event
//   ├─ ReflectorError         'Reflector'      a list, transform or table write of a reflector failed
//   ├─ PruneError             'Prune'          some objects could not be pruned (all were tried)
//   ├─ ForeignObjectError     'Foreign'        an object of the desired name is not ours (Target with adopt: false)
//   ├─ TimeoutError           'Timeout'        no answer within the request timeout
//   └─ StoppedError           'Stopped'        the part was stopped (an abort reason, or a call after stop)

export type K8sErrorCode =
  'Config' | 'UnknownKind' | 'InvalidObject' | 'Watch' | 'Reflector' | 'Prune' | 'Foreign' | 'Timeout' | 'Stopped' | 'Usage'

export class K8sError extends Error {
  override name = 'K8sError'
  constructor(
    message: string,
    readonly code: K8sErrorCode | number = 'Usage',
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

export class ConfigError extends K8sError {
  override name = 'ConfigError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Config', options)
  }
}
export class UnknownKindError extends K8sError {
  override name = 'UnknownKindError'
  constructor(message: string) {
    super(message, 'UnknownKind')
  }
}
export class InvalidObjectError extends K8sError {
  override name = 'InvalidObjectError'
  constructor(message: string) {
    super(message, 'InvalidObject')
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
export class PruneError extends K8sError {
  override name = 'PruneError'
  constructor(
    message: string,
    readonly failures: readonly string[],
  ) {
    super(message, 'Prune')
  }
}
export class ForeignObjectError extends K8sError {
  override name = 'ForeignObjectError'
  constructor(message: string) {
    super(message, 'Foreign')
  }
}
export class TimeoutError extends K8sError {
  override name = 'TimeoutError'
  constructor(message: string) {
    super(message, 'Timeout')
  }
}
export class StoppedError extends K8sError {
  override name = 'StoppedError'
  constructor(message: string) {
    super(message, 'Stopped')
  }
}
