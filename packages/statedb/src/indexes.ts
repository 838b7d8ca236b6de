// Index definitions and queries.
//
// An index maps an object to zero or more keys (a primary index: exactly one). Keys are encoded
// once per write with the order-preserving encoding of ./encoding.ts; queries carry their key and
// encode it lazily, once.

import { encodeKey, encodePrefix, showKey, type EncodedKey, type Key } from './encoding.ts'
import { DefinitionError, IndexKeyError } from './errors.ts'

export const REVISION_INDEX = 'revision'

const NAME = /^[a-z][a-z0-9_.-]{0,62}$/i

export interface IndexOptions<Obj, K extends Key> {
  /** Name of the index: letters, digits, '.', '_', '-'; unique within its table. */
  name: string
  /** The object's one key. Give this or `keys`. */
  key?: (obj: Obj) => K
  /** The object's keys (zero or more). Give this or `key`. */
  keys?: (obj: Obj) => Iterable<K>
  /** Whether two objects may share a key. Primary indexes are always unique. */
  unique?: boolean
  /** Parses a key from text (for the HTTP inspection handler). Default: the text itself. */
  fromString?: (text: string) => K
}

export class Index<Obj, K extends Key = Key> {
  readonly name: string
  readonly unique: boolean
  /** @internal */ readonly single: ((obj: Obj) => K) | undefined
  /** @internal */ readonly multi: ((obj: Obj) => Iterable<K>) | undefined
  private readonly parse: ((text: string) => K) | undefined

  constructor(opts: IndexOptions<Obj, K>) {
    if (typeof opts.name !== 'string' || !NAME.test(opts.name)) {
      throw new DefinitionError(
        `invalid index name ${JSON.stringify(opts.name)}: want letters, digits, '.', '_' or '-', starting with a letter`,
      )
    }
    if (opts.name === REVISION_INDEX) throw new DefinitionError(`index name "${REVISION_INDEX}" is reserved for the revision index`)
    if ((opts.key === undefined) === (opts.keys === undefined)) {
      throw new DefinitionError(`index "${opts.name}": give exactly one of key() or keys()`)
    }
    this.name = opts.name
    this.unique = opts.unique ?? false
    this.single = opts.key
    this.multi = opts.keys
    this.parse = opts.fromString
  }

  /** The object's keys in this index. */
  keysOf(obj: Obj): K[] {
    return this.single ? [this.single(obj)] : [...this.multi!(obj)]
  }

  /** The object's one key (for an index defined with `key`, or a `keys` index giving exactly one). */
  keyOf(obj: Obj): K {
    if (this.single) return this.single(obj)
    const keys = this.keysOf(obj)
    if (keys.length !== 1) throw new IndexKeyError(`index "${this.name}": keyOf needs exactly one key, the object has ${keys.length}`)
    return keys[0]!
  }

  /** A query for the object's own key in this index (for example, to look up its stored version). */
  queryOf(obj: Obj): Query<Obj> {
    return this.query(this.keyOf(obj))
  }

  /** A query for objects whose key equals `key`. */
  query(key: K): Query<Obj> {
    return new Query<Obj>(this.name, key)
  }

  /** Parses a key from text, for tools such as the HTTP handler. */
  fromString(text: string): Query<Obj> {
    return this.query(this.parse ? this.parse(text) : (text as unknown as K))
  }
}

/** Defines an index. `key` gives one key per object, `keys` any number. */
export function defineIndex<Obj, K extends Key = string>(opts: IndexOptions<Obj, K>): Index<Obj, K> {
  return new Index(opts)
}

export class Query<Obj> {
  private full: EncodedKey | undefined
  private open: EncodedKey | undefined
  /** Phantom: ties the query to its object type. */
  declare readonly __obj?: (o: Obj) => void

  constructor(
    readonly index: string,
    readonly key: Key,
  ) {}

  /** @internal */ encoded(): EncodedKey {
    const full = this.full
    if (full !== undefined) return full
    const key = this.key
    // Fast path: a plain string key is its own encoding.
    return (this.full = typeof key === 'string' && key.indexOf('\0') === -1 ? key : encodeKey(key))
  }

  /** @internal */ encodedPrefix(): EncodedKey {
    return (this.open ??= encodePrefix(this.key))
  }

  toString(): string {
    return `${this.index}=${showKey(this.key)}`
  }
}

/** A query on the revision index: with `lowerBound`, the objects written at or after `revision`. */
export function byRevision<Obj>(revision: number): Query<Obj> {
  return new Query<Obj>(REVISION_INDEX, revision)
}
