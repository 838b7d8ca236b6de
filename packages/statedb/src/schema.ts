// A table's schema: its name and indexes, and how an object's keys are computed and encoded.

import { encodeKey, showKey, type EncodedKey, type Key } from './encoding.ts'
import { DefinitionError, IndexKeyError, KeyError } from './errors.ts'
import type { Index } from './indexes.ts'
import { GatherPool } from './treewriter.ts'

const TABLE_NAME = /^[a-z][a-z0-9_.-]{0,62}$/i

export class TableSchema<Obj> {
  /** @internal The arrays this table's writers gather removals in, passed from one to the next. */
  readonly gatherPool = new GatherPool()

  constructor(
    readonly name: string,
    readonly primary: Index<Obj, Key>,
    readonly secondary: ReadonlyArray<Index<Obj, Key>>,
  ) {
    if (typeof name !== 'string' || !TABLE_NAME.test(name)) {
      throw new DefinitionError(
        `invalid table name ${JSON.stringify(name)}: want 1-63 letters, digits, '.', '_' or '-', starting with a letter`,
      )
    }
    const seen = new Set<string>([primary.name])
    for (const idx of secondary) {
      if (seen.has(idx.name)) throw new DefinitionError(`table "${name}": two indexes named "${idx.name}"`)
      seen.add(idx.name)
    }
  }

  primaryKey(obj: Obj): EncodedKey {
    const idx = this.primary
    try {
      if (idx.single) return encodeKey(idx.single(obj))
      const keys = [...idx.multi!(obj)]
      if (keys.length !== 1) throw new KeyError(`a primary index gives exactly one key, got ${keys.length}`)
      return encodeKey(keys[0]!)
    } catch (err) {
      throw this.keyError(idx.name, obj, err)
    }
  }

  /**
   * Index i's keys of obj without an array for the common cases: the one encoded key of an index
   * defined with `key`, or of a `keys` index that gives an array of one key; else an array (writes
   * call this for the new and the old object; an array per index per write adds up).
   */
  secondaryKeysOf(i: number, obj: Obj): EncodedKey | EncodedKey[] {
    const idx = this.secondary[i]!
    try {
      if (idx.single !== undefined) return encodeKey(idx.single(obj))
      const keys = idx.multi!(obj)
      if (!Array.isArray(keys)) {
        const out: EncodedKey[] = []
        for (const k of keys) out.push(encodeKey(k))
        return out
      }
      if (keys.length === 1) return encodeKey(keys[0] as Key)
      const out: EncodedKey[] = new Array(keys.length)
      for (let j = 0; j < keys.length; j++) out[j] = encodeKey(keys[j] as Key)
      return out
    } catch (err) {
      throw this.keyError(idx.name, obj, err)
    }
  }

  secondaryKeys(i: number, obj: Obj): EncodedKey[] {
    const idx = this.secondary[i]!
    try {
      if (idx.single) return [encodeKey(idx.single(obj))]
      const out: EncodedKey[] = []
      for (const k of idx.multi!(obj)) out.push(encodeKey(k))
      return out
    } catch (err) {
      throw this.keyError(idx.name, obj, err)
    }
  }

  /** The primary key of an object, readable. */
  describeObject(obj: Obj): string {
    try {
      const idx = this.primary
      return showKey(idx.single ? idx.single(obj) : [...idx.multi!(obj)][0]!)
    } catch {
      return '(no primary key)'
    }
  }

  /** The key of index i that encodes to `encoded`, readable. */
  describeKey(i: number, obj: Obj, encoded: EncodedKey): string {
    const idx = this.secondary[i]!
    const keys = idx.single ? [idx.single(obj)] : [...idx.multi!(obj)]
    const key = keys.find((k) => encodeKey(k) === encoded)
    return key === undefined ? '(unknown key)' : showKey(key)
  }

  private keyError(index: string, obj: Obj, err: unknown): Error {
    if (err instanceof IndexKeyError) return err
    const msg = err instanceof Error ? err.message : String(err)
    const who = index === this.primary.name ? 'object' : `object ${this.describeObject(obj)}`
    return new IndexKeyError(`table "${this.name}", index "${index}": cannot key ${who}: ${msg}`)
  }
}
