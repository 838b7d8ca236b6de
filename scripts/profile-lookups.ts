// Random point lookups by primary key on a 100k-row table (or the size given), in lookups/s,
// alternating in one process:
//   node --conditions=@statewright/source --import tsx scripts/profile-lookups.ts [rows]
// - statedb: `table.get(txn, query)`, the query built per lookup;
// - descent: the same tree descent, on the snapshot's primary tree, returning the stored object
//   without reading it (internal: reads the tree through the package's sources);
// - object.id: the descent, then a field of the object (what a caller that reads the object pays);
// - sorted-btree: its `get`, which returns the stored value without reading it.
// Until the primary index kept its objects in its leaves (issue 28's follow-up), a lookup returned
// an entry's `object`: a third column read the entry, and at 100k rows the entry was mostly not in
// cache (docs/performance.md, "What bounds RandomLookup, measured").
import { DB, defineIndex, Table } from '@statewright/statedb'
import { treeGet } from '../packages/statedb/src/btree.ts'
import type { TableView } from '../packages/statedb/src/state.ts'
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
      `object.id ${rate((id) => (treeGet(root, id) as O | undefined)?.id)}`,
      `sorted-btree ${rate((id) => bt.get(id))}`,
    ].join('  '),
  )
}
