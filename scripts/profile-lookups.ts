// Random point lookups by primary key on a 100k-row table (or the size given), in lookups/s,
// alternating in one process:
//   node --conditions=@statewright/source --import tsx scripts/profile-lookups.ts [rows]
// - statedb: `table.get(txn, query)`, the query built per lookup;
// - descent: the same tree descent, on the snapshot's primary tree, returning the stored entry
//   without reading it (internal: reads the tree through the package's sources);
// - entry.object: the descent, then the entry's object (what `get` returns);
// - sorted-btree: its `get`, which returns the stored value without reading it.
// The gap between `descent` and `entry.object` is the cost of the entry indirection: at 100k rows
// an entry is mostly not in cache.
import { DB, defineIndex, Table } from '@statewright/statedb'
import { treeGet } from '../packages/statedb/src/btree.ts'
import type { Entry, TableView } from '../packages/statedb/src/state.ts'
import sortedBtree from 'sorted-btree'
import { rng, shuffle } from '../bench/lib/index.ts'

const BTree = sortedBtree.default
interface O {
  readonly id: number
}
const idIndex = defineIndex<O, number>({ name: 'id', key: (o) => o.id, unique: true })
const table = new Table<O>({ name: 't', primary: idIndex })
const db = new DB({ tables: [table] })
const N = Number(process.argv[2] ?? 100_000)
const objs = Array.from({ length: N }, (_, id) => ({ id }))
for (let i = 0; i < N; i += 10_000) {
  const txn = db.tryWriteTxn(table)!
  for (let j = i; j < Math.min(N, i + 10_000); j++) table.insert(txn, objs[j]!)
  txn.commit()
}
const bt = new BTree<number, O>()
for (const o of objs) bt.set(o.id, o)
const ids = shuffle(
  objs.map((o) => o.id),
  rng(3),
)
const passes = Math.max(1, Math.round(500_000 / N))
const rate = (get: (id: number) => unknown): string => {
  const t0 = performance.now()
  for (let p = 0; p < passes; p++) for (let i = 0; i < N; i++) if (get(ids[i]!) === undefined) throw new Error('not found')
  return `${((passes * N) / (performance.now() - t0) / 1000).toFixed(2)}M`
}
for (let round = 0; round < 5; round++) {
  const txn = db.readTxn()
  const root = (txn as unknown as { view(t: Table<O>): TableView<O> }).view(table).primary.root
  console.log(
    [
      `statedb ${rate((id) => table.get(txn, idIndex.query(id)))}`,
      `descent ${rate((id) => treeGet(root, id))}`,
      `entry.object ${rate((id) => (treeGet(root, id) as Entry<O> | undefined)?.object)}`,
      `sorted-btree ${rate((id) => bt.get(id))}`,
    ].join('  '),
  )
}
