// Joins: read-only tables a sync reads besides its primary (Kumori's "tertiary" objects; derive's joins:
// a shared config, a catalogue). Declared in the options, so that
// - no sync runs before every joined table is initialized (a sync never reads a half-loaded one);
// - the reads a sync makes through its context are recorded per primary, and a change of an object
//   (or, for a whole-table read, of any object) marks the primaries that read it pending again.
// Invariants:
// - a primary's recorded reads are those of its last sync (replaced when it ends); a read counts from
//   the moment it is made, so a change that lands while the sync runs still marks it;
// - reads of a primary that is deleted are forgotten with it.
import type { ChangeIterator, ReadTxn, Table } from '@statewright/statedb'
import { UsageError } from './errors.ts'

const ALL = '\u0000*'

export class JoinReads {
  /** owner -> the `${table}\0${key}` (or `${table}\0*`) it read */
  private readonly byOwner = new Map<string, Set<string>>()
  /** `${table}\0${key}` -> owners */
  private readonly readers = new Map<string, Set<string>>()
  private readonly tables: ReadonlyArray<Table<any>>

  constructor(tables: ReadonlyArray<Table<any>> = []) {
    this.tables = tables
  }

  get size(): number {
    return this.tables.length
  }

  /** Every joined table is initialized in `txn`. */
  ready(txn: ReadTxn): boolean {
    return this.tables.every((t) => t.initialized(txn)[0])
  }

  /** Watches of the tables not yet initialized. */
  pending(txn: ReadTxn) {
    return this.tables
      .map((t) => t.initialized(txn))
      .filter(([ok]) => !ok)
      .map(([, w]) => w)
  }

  /** The tables' revisions in `txn`, in declaration order. */
  revisions(txn: ReadTxn): number[] {
    return this.tables.map((t) => t.revision(txn))
  }

  /** Change iterators, one per table (taken at start). */
  iterators(txn: ReadTxn): Array<ChangeIterator<any>> {
    return this.tables.map((t) => t.changes(txn))
  }

  /** The owners to sync again for a batch of changes of joined table `i`. */
  affected(i: number, changes: Iterable<{ object: unknown }>): Set<string> {
    const t = this.tables[i]!
    const out = new Set<string>()
    let any = false
    for (const c of changes) {
      any = true
      for (const o of this.readers.get(`${t.name}\u0000${String(t.primary.keyOf(c.object))}`) ?? []) out.add(o)
    }
    if (any) for (const o of this.readers.get(`${t.name}${ALL}`) ?? []) out.add(o)
    return out
  }

  /** A recorder of one sync's reads; `commit()` makes them the owner's reads. */
  recorder(owner: string, txn: ReadTxn) {
    const seen = new Set<string>()
    const check = (table: Table<any>) => {
      if (!this.tables.includes(table))
        throw new UsageError(`table "${table.name}" is not a declared join (options.joins): its changes would go unseen`)
    }
    return {
      get: <T>(table: Table<T>, key: unknown): T | undefined => {
        check(table)
        this.note(owner, seen, `${table.name}\u0000${String(key)}`)
        return table.get(txn, table.primary.query(key as never))
      },
      list: <T>(table: Table<T>): T[] => {
        check(table)
        this.note(owner, seen, `${table.name}${ALL}`)
        return table.all(txn).toArray()
      },
      commit: () => this.set(owner, seen),
    }
  }

  private note(owner: string, seen: Set<string>, read: string): void {
    seen.add(read)
    let s = this.readers.get(read)
    if (!s) this.readers.set(read, (s = new Set()))
    s.add(owner)
  }

  forget(owner: string): void {
    this.set(owner, new Set())
  }

  private set(owner: string, reads: Set<string>): void {
    for (const r of this.byOwner.get(owner) ?? []) {
      const s = this.readers.get(r)
      s?.delete(owner)
      if (s && s.size === 0) this.readers.delete(r)
    }
    if (reads.size === 0) {
      this.byOwner.delete(owner)
      return
    }
    this.byOwner.set(owner, reads)
    for (const r of reads) {
      let s = this.readers.get(r)
      if (!s) this.readers.set(r, (s = new Set()))
      s.add(owner)
    }
  }
}
