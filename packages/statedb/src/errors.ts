// One error hierarchy: every error statedb throws is a StateDBError with a `code` callers can switch
// on, and names what it concerns (the table, the index, the key, the object).
//   StateDBError            code
//   ├─ DefinitionError      'Definition'     a bad table or index definition, a table registered twice
//   ├─ QueryError           'Query'          a query the table cannot answer (unknown index, wrong key type)
//   ├─ KeyError             'InvalidKey'     a value that cannot be a key (NaN, null, an object)
//   ├─ IndexKeyError        'IndexKey'       an index function produced no usable key for an object
//   ├─ UniqueConflictError  'UniqueConflict' two objects claim one key of a unique index
//   ├─ TxnError             'Txn'            a transaction used after commit or abort, or for an undeclared table
//   └─ InternalError        'Internal'       a broken invariant (a bug; validation mode finds them early)

export type StateDBErrorCode = 'Definition' | 'Query' | 'InvalidKey' | 'IndexKey' | 'UniqueConflict' | 'Txn' | 'Internal' | 'Usage'

export class StateDBError extends Error {
  override name = 'StateDBError'
  /** What kind of failure this is; stable across releases. */
  readonly code: StateDBErrorCode
  constructor(message: string, code: StateDBErrorCode = 'Usage', options?: ErrorOptions) {
    super(message, options)
    this.code = code
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
