// The one error root of statewright. Everything a statewright package throws is a StatewrightError,
// so `err instanceof StatewrightError` holds whichever package threw it, and `code` says what kind
// of failure it is: stable across releases, what callers switch on (messages are for people).
// statedb is the ground floor (every package depends on it), so the root and the four failures
// every package has are defined here, once. Every package re-exports StatewrightError and these
// four from its index under the same names: `ConfigError` from any package is this one class. Each
// package has a base of its own for its own failures; a class is defined in one package only. This
// file draws its own part of the tree; the whole tree is in docs/architecture.md (checked by a test).
//   StatewrightError            code
//   ├─ ConfigError              'Config'          bad options or configuration, a missing optional peer, a port in use
//   ├─ UsageError               'Usage'           a call at the wrong time or with the wrong arguments (start twice, start while stopping)
//   ├─ StoppedError             'Stopped'         the part was stopped or is not running (also the reason operations are aborted with)
//   ├─ TimeoutError             'Timeout'         no answer, or no convergence, in the time given
//   ├─ StateDBError             statedb: this file
//   │  ├─ DefinitionError       'Definition'      a bad table or index definition, a table registered twice
//   │  ├─ QueryError            'Query'           a query the table cannot answer (unknown index, wrong key type)
//   │  ├─ KeyError              'InvalidKey'      a value that cannot be a key (NaN, null, an object)
//   │  ├─ IndexKeyError         'IndexKey'        an index function produced no usable key for an object
//   │  ├─ UniqueConflictError   'UniqueConflict'  two objects claim one key of a unique index
//   │  ├─ TxnError              'Txn'             a transaction used after commit or abort, or for an undeclared table
//   │  └─ InternalError         'Internal'        a broken invariant (a bug; validation mode finds them early)
// Codes are strings, but for the two classes that carry an HTTP status (ApiError, StatusError), as
// Kubernetes' Status.code does. Object errors of reconcilers and derivations are statuses, not
// thrown: an operation's own error is kept as it is.

/** What kind of failure a StatewrightError is: a string, or the HTTP status of an ApiError or StatusError. */
export type StatewrightErrorCode = string | number

/** The root of every error statewright throws (`instanceof` holds across packages). */
export class StatewrightError extends Error {
  override name = 'StatewrightError'
  /** What kind of failure this is; stable across releases. */
  readonly code: StatewrightErrorCode
  constructor(message: string, code: StatewrightErrorCode, options?: ErrorOptions) {
    super(message, options)
    this.code = code
  }
}

/** Bad options or configuration (naming the field), a missing optional peer, a port in use. */
export class ConfigError extends StatewrightError {
  override name = 'ConfigError'
  declare readonly code: 'Config'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Config', options)
  }
}

/** A call at the wrong time or with the wrong arguments. */
export class UsageError extends StatewrightError {
  override name = 'UsageError'
  declare readonly code: 'Usage'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Usage', options)
  }
}

/** The part was stopped or is not running; also the reason its operations are aborted with. */
export class StoppedError extends StatewrightError {
  override name = 'StoppedError'
  declare readonly code: 'Stopped'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Stopped', options)
  }
}

/** No answer, or no convergence, in the time given (the message says what is still pending). */
export class TimeoutError extends StatewrightError {
  override name = 'TimeoutError'
  declare readonly code: 'Timeout'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Timeout', options)
  }
}

export type StateDBErrorCode = 'Definition' | 'Query' | 'InvalidKey' | 'IndexKey' | 'UniqueConflict' | 'Txn' | 'Internal'

/** statedb's own failures; each names what it concerns (the table, the index, the key, the object). */
export class StateDBError extends StatewrightError {
  override name = 'StateDBError'
  declare readonly code: StateDBErrorCode
  constructor(message: string, code: StateDBErrorCode, options?: ErrorOptions) {
    super(message, code, options)
  }
}

/** A bad table or index definition, or a table registered twice. */
export class DefinitionError extends StateDBError {
  override name = 'DefinitionError'
  constructor(message: string) {
    super(message, 'Definition')
  }
}

/** A query the table cannot answer: an unknown index, a key of the wrong type. */
export class QueryError extends StateDBError {
  override name = 'QueryError'
  constructor(message: string) {
    super(message, 'Query')
  }
}

/** A value that cannot be a key. */
export class KeyError extends StateDBError {
  override name = 'KeyError'
  constructor(message: string) {
    super(message, 'InvalidKey')
  }
}

/** Two objects claim one key of a unique index. */
export class UniqueConflictError extends StateDBError {
  override name = 'UniqueConflictError'
  constructor(
    readonly table: string,
    readonly index: string,
    readonly key: string,
    readonly existing: string,
    readonly object: string,
  ) {
    super(
      `table "${table}": unique index "${index}" already has key ${key} (held by object ${existing}; inserting object ${object})`,
      'UniqueConflict',
    )
  }
}

/** A transaction was used after commit or abort, or for a table it did not declare. */
export class TxnError extends StateDBError {
  override name = 'TxnError'
  constructor(message: string) {
    super(message, 'Txn')
  }
}

/** An index function produced something that is not a key. */
export class IndexKeyError extends StateDBError {
  override name = 'IndexKeyError'
  constructor(message: string) {
    super(message, 'IndexKey')
  }
}

/** A broken invariant: a bug in statedb (or an object mutated after insert). */
export class InternalError extends StateDBError {
  override name = 'InternalError'
  constructor(message: string) {
    super(message, 'Internal')
  }
}
