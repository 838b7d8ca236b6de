// The database: registered tables, the current root (one immutable state per table), table locks.
//
// Writers and locks: each table has one lock. A write transaction declares its tables up front and
// takes their locks in table registration order, one after the other, waiting in a FIFO queue on a
// lock that is held. Because every writer takes locks in the same global order, two multi-table
// writers cannot wait on each other (no deadlock). A released lock passes straight to the next waiter,
// so a waiting writer is never overtaken. JavaScript runs one thing at a time, so a transaction that
// is opened and committed without an `await` in between never makes anyone wait; locks matter
// for writers that await while holding a transaction (which is allowed, but keeps others waiting).
//
// Commit builds the new root array and assigns it in one statement: readers see all of a
// transaction's tables change at once, or none.

import { DefinitionError, TxnError, UsageError } from './errors.ts'
import { Graveyard } from './graveyard.ts'
import type { TableState } from './state.ts'
import type { Table } from './table.ts'
import { ReadTxn, WriteTxn, type TxnHost, type TxnTable } from './txn.ts'
import { validateState, validating } from './validate.ts'
import type { TableWriter } from './writer.ts'

/** Hooks for metrics; every one optional. */
export interface DBMetrics {
  /** A write transaction committed: its tables, time held and time spent waiting for locks. */
  writeTxnCommitted?(info: { tables: readonly string[]; durationSeconds: number; waitSeconds: number }): void
  /** A write transaction was aborted. */
  writeTxnAborted?(info: { tables: readonly string[]; durationSeconds: number }): void
}

export interface TableStats {
  name: string
  objects: number
  revision: number
  /** Deleted objects kept for change iterators that have not seen them yet. */
  graveyard: number
  changeIterators: number
  initialized: boolean
  pendingInitializers: string[]
  locked: boolean
}

export interface DBOptions {
  tables?: ReadonlyArray<Table<any>>
  metrics?: DBMetrics
}

class TableLock {
  held = false
  private readonly waiters: Array<() => void> = []

  tryAcquire(): boolean {
    if (this.held) return false
    this.held = true
    return true
  }

  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  release(): void {
    const next = this.waiters.shift()
    if (next) next()
    else this.held = false
  }
}

export class DB {
  private readonly tables: Table<any>[] = []
  private readonly ids = new Map<TxnTable, number>()
  private readonly locks: TableLock[] = []
  /** Per table: its deletions in this database, for change iterators (./changes.ts). */
  private readonly graveyards: Graveyard<unknown>[] = []
  /** Per table: the one-element table list of its single-table transactions (shared, never changed). */
  private readonly single: Array<ReadonlyArray<Table<any>>> = []
  private root: ReadonlyArray<TableState<unknown>> = []
  private snapshot: ReadTxn | undefined
  private readonly metrics: DBMetrics | undefined

  /** @internal Whether transactions are timed (metrics hooks are set). */
  readonly timed: boolean

  constructor(opts: DBOptions = {}) {
    this.metrics = opts.metrics
    this.timed = opts.metrics !== undefined
    if (opts.tables) this.register(...opts.tables)
  }

  /** Adds tables. A table belongs to one database; names are unique within it. */
  register(...tables: Table<any>[]): this {
    const root = this.root.slice()
    for (const t of tables) {
      if (this.ids.has(t)) continue
      if (this.tables.some((o) => o.name === t.name)) throw new DefinitionError(`a table named "${t.name}" is already registered`)
      this.ids.set(t, this.tables.length)
      t.home = this
      t.homeId = this.tables.length
      this.tables.push(t)
      this.locks.push(new TableLock())
      this.graveyards.push(new Graveyard())
      this.single.push([t])
      root.push(t.empty)
    }
    this.publish(root)
    return this
  }

  /** The registered tables, in registration (and lock) order. */
  getTables(): ReadonlyArray<Table<any>> {
    return this.tables
  }

  /** @internal */ graveyardOf(table: TxnTable): Graveyard<unknown> {
    return this.graveyards[this.tableId(table)]!
  }

  /** @internal */ tableId(table: TxnTable): number {
    if (table.home === this) return table.homeId // every read and write asks: no Map lookup
    const id = this.ids.get(table)
    if (id === undefined) throw new TxnError(`table "${table.name}" is not registered with this database`)
    return id
  }

  /** A snapshot of every table: O(1), never changes. */
  readTxn(): ReadTxn {
    return (this.snapshot ??= new ReadTxn(this, this.root))
  }

  /**
   * Opens a write transaction on a table or an array of tables, waiting for their locks (FIFO, in
   * table order). One form for every writer: `writeTxn(t)`, `writeTxn([a, b])`, as `write`.
   */
  async writeTxn(tables: TableArg): Promise<WriteTxn> {
    // a JavaScript caller may pass tables as separate arguments: refused, never half-locked
    const list = tableList('writeTxn', tables, arguments.length)
    const sorted = this.lockOrder(list)
    const started = performance.now()
    let i = 0
    while (i < sorted.length && this.locks[sorted[i]!]!.tryAcquire()) i++
    for (; i < sorted.length; i++) await this.locks[sorted[i]!]!.acquire()
    return new WriteTxn(
      this,
      this.root,
      sorted.map((id) => this.tables[id]!),
      performance.now() - started,
    )
  }

  /** Opens a write transaction at once, or returns undefined when any of the tables is locked. */
  tryWriteTxn(tables: TableArg): WriteTxn | undefined {
    if (!Array.isArray(tables) && arguments.length === 1) {
      // The common case without the arrays of the general one (one transaction per write batch).
      const id = this.tableId(tables as Table<any>)
      if (!this.locks[id]!.tryAcquire()) return undefined
      return new WriteTxn(this, this.root, this.single[id]!, 0)
    }
    const sorted = this.lockOrder(tableList('tryWriteTxn', tables, arguments.length))
    if (sorted.some((id) => this.locks[id]!.held)) return undefined
    for (const id of sorted) this.locks[id]!.tryAcquire()
    return new WriteTxn(
      this,
      this.root,
      sorted.map((id) => this.tables[id]!),
      0,
    )
  }

  /**
   * Runs fn in a write transaction on the tables: commits when it returns, aborts when it throws
   * (then rethrows). Returns what fn returned.
   */
  async write<T>(tables: TableArg, fn: (txn: WriteTxn) => T | Promise<T>): Promise<T> {
    if (typeof fn !== 'function') throw new UsageError('db.write(tables, fn): fn (the transaction body) is missing')
    const txn = await this.writeTxn(tables)
    try {
      const result = await fn(txn)
      if (!txn.done) txn.commit()
      return result
    } finally {
      txn.abort()
    }
  }

  /** Per-table figures for metrics and inspection, from a snapshot (default: the latest). */
  stats(txn: ReadTxn = this.readTxn()): TableStats[] {
    return this.tables.map((t, id) => {
      const s = txn.states[id]
      return {
        name: t.name,
        objects: s?.primary.size ?? 0,
        revision: s?.revision ?? 0,
        graveyard: this.graveyards[id]!.size,
        changeIterators: this.graveyards[id]!.trackers.size,
        initialized: (s?.pendingInit.length ?? 0) === 0,
        pendingInitializers: s?.pendingInit.map((i) => i.name) ?? [],
        locked: this.locks[id]!.held,
      }
    })
  }

  /** @internal Publishes a transaction's tables, then fires watches. */
  commit(txn: WriteTxn, writers: ReadonlyArray<TableWriter<unknown> | undefined>): ReadTxn {
    const root = this.root.slice()
    let changed = false
    for (let id = 0; id < writers.length; id++) {
      const w = writers[id]
      if (w === undefined || !w.dirty) continue
      const state = w.publish()
      if (validating) {
        try {
          validateState(w.schema, state)
        } catch (err) {
          this.release(txn) // nothing was published: the transaction ends as aborted
          txn.dropped()
          throw err
        }
      }
      root[id] = state
      changed = true
    }
    if (changed) this.publish(root)
    // Every table's deletions are in its graveyard before anything else runs (a watch listener below
    // may read any table's changes from the new root, or write).
    const now = Date.now()
    for (let id = 0; id < writers.length; id++) {
      const w = writers[id]
      if (w !== undefined && w.dirty) this.tables[id]!.committed(this.graveyards[id]!, w, now)
    }
    this.release(txn, false)
    for (let id = 0; id < writers.length; id++) {
      const w = writers[id]
      if (w !== undefined && w.dirty) this.tables[id]!.notify(w)
    }
    this.metrics?.writeTxnCommitted?.({
      tables: txn.tables.map((t) => t.name),
      durationSeconds: (performance.now() - txn.startedAt) / 1000,
      waitSeconds: txn.waitedMs / 1000,
    })
    return this.readTxn()
  }

  /** @internal Releases a finished transaction's locks. */
  release(txn: WriteTxn, aborted = true): void {
    const tables = txn.tables
    for (let i = 0; i < tables.length; i++) this.locks[this.ids.get(tables[i]!)!]!.release()
    if (aborted) {
      this.metrics?.writeTxnAborted?.({
        tables: txn.tables.map((t) => t.name),
        durationSeconds: (performance.now() - txn.startedAt) / 1000,
      })
    }
  }

  private publish(root: ReadonlyArray<TableState<unknown>>): void {
    this.root = root
    this.snapshot = undefined
  }

  private lockOrder(tables: ReadonlyArray<Table<any>>): number[] {
    if (tables.length === 1) return [this.tableId(tables[0]!)]
    if (tables.length === 0) throw new TxnError('a write transaction needs at least one table')
    const ids = [...new Set(tables.map((t) => this.tableId(t)))]
    return ids.sort((a, b) => a - b)
  }
}

/** The tables a write transaction declares: one table or an array of them. */
export type TableArg = Table<any> | ReadonlyArray<Table<any>>

function tableList(what: string, tables: TableArg, args: number): ReadonlyArray<Table<any>> {
  if (args > 1) throw new UsageError(`db.${what} takes one table or an array of tables: ${what}([a, b]), not ${what}(a, b)`)
  return Array.isArray(tables) ? tables : [tables as Table<any>]
}
