// Random point lookups by primary key on a 100k-row table, statedb's `table.get` against
// sorted-btree's `get` on the same ids, alternating, in lookups/s:
//   node --conditions=@statewright/source --import tsx scripts/profile-lookups.ts
import { DB, defineIndex, Table } from '@statewright/statedb'
import sortedBtree from 'sorted-btree'
import { rng, shuffle } from '../bench/lib/index.ts'

const BTree = sortedBtree.default
interface O {
  readonly id: number
}
const idIndex = defineIndex<O, number>({ name: 'id', key: (o) => o.id, unique: true })
const table = new Table<O>({ name: 't', primary: idIndex })
const db = new DB({ tables: [table] })
const N = 100_000
const objs = Array.from({ length: N }, (_, id) => ({ id }))
for (let i = 0; i < N; i += 10_000) {
  const txn = db.tryWriteTxn(table)!
  for (let j = i; j < i + 10_000; j++) table.insert(txn, objs[j]!)
  txn.commit()
}
const bt = new BTree<number, O>()
for (const o of objs) bt.set(o.id, o)
const ids = shuffle(
  objs.map((o) => o.id),
  rng(3),
)
const rate = (get: (id: number) => O | undefined): string => {
  const t0 = performance.now()
  for (let p = 0; p < 5; p++) for (let i = 0; i < N; i++) if (get(ids[i]!) === undefined) throw new Error('not found')
  return `${((5 * N) / (performance.now() - t0) / 1000).toFixed(2)}M`
}
for (let round = 0; round < 5; round++) {
  const txn = db.readTxn()
  console.log(`statedb ${rate((id) => table.get(txn, idIndex.query(id)))}  sorted-btree ${rate((id) => bt.get(id))}`)
}
