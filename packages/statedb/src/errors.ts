// Errors name what they concern: the table, the index, the key, the object.

export class StateDBError extends Error {
  override name = 'StateDBError'
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
    super(`table "${table}": unique index "${index}" already has key ${key} (held by object ${existing}; inserting object ${object})`)
  }
}

/** A transaction was used after commit or abort, or for a table it did not declare. */
export class TxnError extends StateDBError {
  override name = 'TxnError'
}

/** An index function produced something that is not a key. */
export class IndexKeyError extends StateDBError {
  override name = 'IndexKeyError'
}
