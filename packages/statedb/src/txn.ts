// Read and write transactions.
//
// A ReadTxn is a snapshot: an array of immutable table states, taken in O(1), never changed.
// A WriteTxn holds the locks of the tables it declared, builds new states for them, and on commit
// publishes all of them in one step (one assignment of the database root): atomic across tables.
// Abort drops what it built. Either way the transaction is finished and using it throws.

import { TxnError } from './errors.ts'
import type { Graveyard } from './graveyard.ts'
import type { TableState, TableView } from './state.ts'
import type { WatchRegistry } from './registry.ts'
import type { TableSchema } from './schema.ts'
import { TableWriter } from './writer.ts'

/**
 * What a transaction needs from its database (the DB implements it): table ids, the clock switch, and
 * commit and release. Transactions depend on this, not on the DB, so no module cycle runs through them.
 */
/** What a transaction uses of a table (Table implements it). */
export interface TxnTable<Obj = any> {
  readonly name: string
  /** @internal */ readonly empty: TableState<Obj>
  /** @internal */ readonly schema: TableSchema<Obj>
  /** @internal */ readonly watches: WatchRegistry
  /** @internal The database the table was last registered with, and its id there (a cache). */
  readonly home: object | undefined
  /** @internal */ readonly homeId: number
}

export interface TxnHost {
  tableId(table: TxnTable): number
  /** The table's deletions in this database (kept by the database: a table may be registered with several). */
  graveyardOf(table: TxnTable): Graveyard<unknown>
  readonly timed: boolean
  readTxn(): ReadTxn
  commit(txn: WriteTxn, writers: ReadonlyArray<TableWriter<unknown> | undefined>): ReadTxn
  release(txn: WriteTxn, aborted?: boolean): void
}

export class ReadTxn {
  /** @internal */
  constructor(
    /** @internal */ readonly db: TxnHost,
    /** @internal */ readonly states: ReadonlyArray<TableState<unknown>>,
  ) {}

  /** @internal */ view<Obj>(table: TxnTable<Obj>): TableView<Obj> {
    // A table registered after this snapshot was empty when it was taken.
    return (this.states[this.db.tableId(table)] ?? table.empty) as TableState<Obj>
  }
}

export class WriteTxn {
  private readonly writers: Array<TableWriter<unknown> | undefined>
  private finished: 'committed' | 'aborted' | undefined
  /** @internal When it began, for the metrics hooks (0 without: a clock read per transaction adds up). */
  readonly startedAt: number

  /** @internal */
  constructor(
    /** @internal */ readonly db: TxnHost,
    /** @internal */ readonly base: ReadonlyArray<TableState<unknown>>,
    /** @internal */ readonly tables: ReadonlyArray<TxnTable>,
    /** @internal */ readonly waitedMs: number,
  ) {
    this.writers = new Array(base.length)
    this.startedAt = db.timed ? performance.now() : 0
  }

  /** Whether commit or abort has been called. */
  get done(): boolean {
    return this.finished !== undefined
  }

  /** @internal */ view<Obj>(table: TxnTable<Obj>): TableView<Obj> {
    this.checkOpen(table)
    const id = this.db.tableId(table)
    const w = this.writers[id]
    if (w !== undefined) return w as TableWriter<Obj>
    return (this.base[id] ?? table.empty) as TableState<Obj>
  }

  /** @internal The writer of a declared table. */
  writer<Obj>(table: TxnTable<Obj>): TableWriter<Obj> {
    this.checkOpen(table)
    const id = this.db.tableId(table)
    let w = this.writers[id]
    if (w === undefined) {
      if (!this.tables.includes(table as TxnTable)) {
        throw new TxnError(
          `table "${table.name}" is not locked by this write transaction (declared: ${this.tables.map((t) => t.name).join(', ') || 'none'})`,
        )
      }
      w = new TableWriter<unknown>(table.schema as never, this.base[id] ?? table.empty, table.watches.watchedPositions())
      this.writers[id] = w
    }
    return w as TableWriter<Obj>
  }

  /** Publishes every change atomically and returns a snapshot that includes them. */
  commit(): ReadTxn {
    this.checkOpen()
    this.finished = 'committed'
    return this.db.commit(this, this.writers)
  }

  /** Drops every change. Calling abort on a finished transaction does nothing, so it fits `finally`. */
  abort(): void {
    if (this.finished) return
    this.finished = 'aborted'
    this.db.release(this)
    this.dropped()
  }

  /** @internal Nothing of it was published: the watches insertWatch handed out fire now. */
  dropped(): void {
    for (const w of this.writers) if (w?.insertWatches) for (const i of w.insertWatches) i.watch.close()
  }

  private checkOpen(table?: TxnTable): void {
    if (this.finished) {
      throw new TxnError(`write transaction already ${this.finished}${table ? ` (used on table "${table.name}")` : ''}`)
    }
  }
}

export type Txn = ReadTxn | WriteTxn
