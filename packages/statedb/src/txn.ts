// Read and write transactions.
//
// A ReadTxn is a snapshot: an array of immutable table states, taken in O(1), never changed.
// A WriteTxn holds the locks of the tables it declared, builds new states for them, and on commit
// publishes all of them in one step (one assignment of the database root): atomic across tables.
// Abort drops what it built. Either way the transaction is finished and using it throws.

import type { DB } from './db.ts'
import { TxnError } from './errors.ts'
import type { TableState, TableView } from './state.ts'
import type { Table } from './table.ts'
import { TableWriter } from './writer.ts'

export class ReadTxn {
  /** @internal */
  constructor(
    readonly db: DB,
    /** @internal */ readonly states: ReadonlyArray<TableState<unknown>>,
  ) {}

  /** @internal */ view<Obj>(table: Table<Obj>): TableView<Obj> {
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
    readonly db: DB,
    /** @internal */ readonly base: ReadonlyArray<TableState<unknown>>,
    /** @internal */ readonly tables: ReadonlyArray<Table<any>>,
    /** @internal */ readonly waitedMs: number,
  ) {
    this.writers = new Array(base.length)
    this.startedAt = db.timed ? performance.now() : 0
  }

  /** Whether commit or abort has been called. */
  get done(): boolean {
    return this.finished !== undefined
  }

  /** @internal */ view<Obj>(table: Table<Obj>): TableView<Obj> {
    this.checkOpen(table)
    const id = this.db.tableId(table)
    const w = this.writers[id]
    if (w !== undefined) return w as TableWriter<Obj>
    return (this.base[id] ?? table.empty) as TableState<Obj>
  }

  /** @internal The writer of a declared table. */
  writer<Obj>(table: Table<Obj>): TableWriter<Obj> {
    this.checkOpen(table)
    const id = this.db.tableId(table)
    let w = this.writers[id]
    if (w === undefined) {
      if (!this.tables.includes(table as Table<any>)) {
        throw new TxnError(`table "${table.name}" is not locked by this write transaction (declared: ${this.tables.map((t) => t.name).join(', ') || 'none'})`)
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
  }

  private checkOpen(table?: Table<any>): void {
    if (this.finished) {
      throw new TxnError(`write transaction already ${this.finished}${table ? ` (used on table "${table.name}")` : ''}`)
    }
  }
}

export type Txn = ReadTxn | WriteTxn
