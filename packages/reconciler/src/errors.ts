// One error hierarchy: what @statewright/reconciler throws is a ReconcilerError with a `code`.
//   ReconcilerError   code
//   ├─ ConfigError    'Config'    a bad reconciler configuration, or a missing optional peer (prom-client)
//   ├─ StoppedError   'Stopped'   the reconciler was stopped (an operation's abort reason, a wait ended by stop)
//   └─ UsageError     'Usage'     a call at the wrong time (start() while stopping, a status set query without a name)
// Operation failures are not wrapped: they are the operations' own errors, kept as statuses.

export type ReconcilerErrorCode = 'Config' | 'Stopped' | 'Usage'

export class ReconcilerError extends Error {
  override name = 'ReconcilerError'
  constructor(
    message: string,
    readonly code: ReconcilerErrorCode,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/** A configuration a reconciler refuses, naming the field. */
export class ConfigError extends ReconcilerError {
  override name = 'ConfigError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Config', options)
  }
}

/** The reconciler was stopped. */
export class StoppedError extends ReconcilerError {
  override name = 'StoppedError'
  constructor(message: string) {
    super(message, 'Stopped')
  }
}

/** A call at the wrong time or with the wrong arguments. */
export class UsageError extends ReconcilerError {
  override name = 'UsageError'
  constructor(message: string) {
    super(message, 'Usage')
  }
}
