// A table's writes within one write transaction through one handle (`table.batch(txn)`): the
// transaction's and the table's lookups (is the transaction open, is the table declared, which
// writer) happen once per batch instead of once per object. For loops of many writes to one table,
// such as the reconciler's status write-back (a compare-and-swap per object of a round).
//
// Invariant: a batch writes exactly what the same calls on the Table would write; it refuses every
// call once its transaction is committed or aborted.

import { TxnError } from './errors.ts'
import type { WriteTxn } from './txn.ts'
import { deepFreeze, validating } from './validate.ts'
import type { TableWriter } from './writer.ts'

export class TableBatch<Obj> {
  /** @internal */
  constructor(
    private readonly txn: WriteTxn,
    private readonly w: TableWriter<Obj>,
  ) {}

  /** Table.insert: inserts or replaces; returns the object it replaced. */
  insert(obj: Obj): Obj | undefined {
    this.check()
    if (validating) deepFreeze(obj)
    return this.w.insert(obj)
  }

  /** Table.compareAndSwap: replaces only if the stored object was last written at `revision`. */
  compareAndSwap(revision: number, obj: Obj): boolean {
    this.check()
    if (validating) deepFreeze(obj)
    this.w.insert(obj, revision)
    return !this.w.swapFailed
  }

  private check(): void {
    if (this.txn.done) throw new TxnError(`write transaction already finished (used through a batch on table "${this.w.schema.name}")`)
  }
}
