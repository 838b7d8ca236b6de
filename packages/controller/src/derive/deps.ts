// A derivation's dependencies on joined tables: which inputs read what, recorded by the queries fn
// makes through its context, so that a change of a joined object re-derives exactly its readers.
// Invariants:
// - A read is recorded as the query (table, index=key) and as the primary key of each object it
//   returned: an object that moves out of a query's key re-derives its former readers too.
// - fn may read only `joins` tables through its context (anything else is a ConfigError: its
//   changes would never re-derive the input).
// - Reader bookkeeping goes through the journal (undone with a failed write); the set of queried
//   indexes only grows (an extra index to look at costs a lookup, never a wrong result).
import { ConfigError } from '../errors.ts'
import type { Query, Table } from '@statewright/statedb'
import type { Journal } from './journal.ts'
import { keyString } from './keys.ts'

export class Dependencies {
  /** "<join table>|<index>=<key>" or "<join table>|#<primary>" -> inputs that read it. */
  private readonly readers = new Map<string, Set<string>>()
  /** input id -> the dependency keys its last run recorded. */
  private readonly reads = new Map<string, string[]>()
  /** Indexes of each join table that some run queried. */
  private readonly queried = new Map<Table<any>, Set<string>>()

  constructor(
    private readonly name: string,
    private readonly joins: ReadonlyArray<Table<any>>,
    private readonly journal: Journal,
  ) {}

  /** The dependency keys of a read of `t` by query `q` that found `found`. */
  recordRead<T>(t: Table<T>, q: Query<T>, found: T[]): string[] {
    if (!this.joins.includes(t)) {
      throw new ConfigError(
        `derivation "${this.name}": fn read table "${t.name}", which is not in \`joins\` (add it so its changes re-derive this input)`,
      )
    }
    let idx = this.queried.get(t)
    if (!idx) this.queried.set(t, (idx = new Set()))
    idx.add(q.index)
    return [`${t.name}|${q.toString()}`, ...found.map((o) => `${t.name}|#${keyString(t.primary.keyOf(o))}`)]
  }

  /** The dependency keys a changed object of join table `t` touches. */
  depKeysOf<T>(t: Table<T>, obj: T): string[] {
    const out = [`${t.name}|#${keyString(t.primary.keyOf(obj))}`]
    for (const name of this.queried.get(t) ?? []) {
      const index = t.primary.name === name ? t.primary : t.indexNamed(name)
      if (!index) continue
      for (const k of index.keysOf(obj)) out.push(`${t.name}|${index.query(k).toString()}`)
    }
    return out
  }

  /** The inputs that read a dependency key. */
  readersOf(dep: string): Iterable<string> {
    return this.readers.get(dep) ?? []
  }

  /** Records what an input's run read. */
  remember(id: string, reads: string[]): void {
    if (reads.length === 0) return
    this.journal.mapSet(this.reads, id, reads)
    for (const r of reads) {
      let s = this.readers.get(r)
      if (!s) this.journal.mapSet(this.readers, r, (s = new Set()))
      this.journal.setAdd(s, id)
    }
  }

  /** Forgets what an input's last run read (before it runs again, or when it is gone). */
  forget(id: string): void {
    for (const r of this.reads.get(id) ?? []) {
      const s = this.readers.get(r)
      if (s) this.journal.setDel(s, id)
      if (s?.size === 0) this.journal.mapDel(this.readers, r)
    }
    this.journal.mapDel(this.reads, id)
  }
}
