// Keeps the hidden classes of the write path alive between transactions.
//
// Why: V8 holds map transitions, and the maps embedded in optimized code, weakly. Writers, write
// transactions and iterators live only while a transaction or a scan runs, so a full GC taken
// between transactions found no object of those classes, collected their maps, and threw away the
// optimized code of the whole write path (deopt reason "weak objects"); the next few thousand writes
// ran unoptimized again. In a bench that forces a GC before every sample, the write path ran at about
// a third of its speed; in a service, every major GC outside a transaction cost a warm-up.
//
// How: one private table, written once and kept with a write transaction open (it is never
// committed and blocks nobody: no one else can reach its database), and one iterator of each kind
// left open over it. That holds one live object of every short-lived class, with the same fields in
// the same order as any other, so their maps survive.
//
// Invariant: nothing here is reachable from the public API. The cost, once per process: the table
// (its revision clock alone is 64 KB), roughly 100-400 KB of heap in all, and about 10 ms at import
// (import plus a first transaction of 100 writes, from dist/: 36 -> 47 ms; part of it is compiling
// the write path, which the first transaction would otherwise pay).

import { DB } from './db.ts'
import { defineIndex, type Query } from './indexes.ts'
import { Table } from './table.ts'
import { InternalError } from './errors.ts'

interface Shape {
  readonly id: number
  readonly name: string
  readonly group: string
}

function build(): unknown[] {
  const byId = defineIndex<Shape, number>({ name: 'id', key: (o) => o.id, unique: true })
  const byName = defineIndex<Shape, string>({ name: 'name', key: (o) => o.name, unique: true })
  const byGroup = defineIndex<Shape, string>({ name: 'group', keys: (o) => [o.group] })
  const table = new Table<Shape>({ name: 'statewright-shapes', primary: byId, indexes: [byName, byGroup] })
  const db = new DB({ tables: [table] })
  // Enough rows to split leaves (64 keys a node) and give the non-unique index a bucket tree.
  const rows = (from: number, to: number, group: string) => {
    const txn = db.tryWriteTxn(table)!
    for (let i = from; i < to; i++) table.insert(txn, { id: i, name: `n${i}`, group })
    return txn
  }
  rows(0, 80, 'a').commit()
  const snap = db.readTxn()
  const changes = table.changes(snap)
  const txn = rows(40, 120, 'b')
  table.delete(txn, { id: 0, name: 'n0', group: 'a' })
  if (!table.compareAndSwap(txn, 2, { id: 1, name: 'n1', group: 'b' })) throw new InternalError('statedb internal error: shapes') // id 1: revision 2
  // One open iterator of each kind: over a snapshot and over the transaction, by each index kind.
  // Scans rather than point lookups where there is a choice (the writes above do a few: unique
  // checks, the delete): a search that has also run over this table's trees may compile to less
  // specialised code for the application's (point lookups from here measured slower for it).
  const open = <T>(it: Iterable<T>) => {
    const i = it[Symbol.iterator]()
    i.next()
    return i
  }
  const scans = [byGroup.query('a'), byName.query('n1')].flatMap((x: Query<Shape>) => [
    open(table.prefix(snap, x)),
    open(table.lowerBound(txn, x)),
  ])
  scans.push(open(table.lowerBound(snap, byId.query(2))), open(table.lowerBound(txn, byId.query(2))))
  scans.push(open(table.list(snap, byGroup.query('a')))) // a bucket's list (resolved through the primary index)
  return [db, table, txn, snap, changes, open(changes.next(snap)[0]), open(table.all(txn)), ...scans]
}

/** @internal The anchored objects (tests look at them). */
export const shapes: readonly unknown[] = build()
