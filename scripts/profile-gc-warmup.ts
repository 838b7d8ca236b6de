// Whether the write path stays optimized across full GCs taken between transactions (see
// packages/statedb/src/shapes.ts): samples of 50k writes in cilium's shape (ids 0..99 rewritten, 100
// per transaction) on a fresh table, a forced full GC before each, and the milliseconds of each.
//   node --conditions=@statewright/source --import tsx --expose-gc scripts/profile-gc-warmup.ts [samples] [nogc]
// With `nogc` no GC is forced: the samples should then take about as long as with it.
import { DB, defineIndex, Table } from '@statewright/statedb'

interface O {
  readonly id: number
  readonly tags: readonly string[]
}
const idIndex = defineIndex<O, number>({ name: 'id', key: (o) => o.id, unique: true })
const NO_TAGS: readonly string[] = []
const objs = Array.from({ length: 50_000 }, (_, i) => ({ id: i % 100, tags: NO_TAGS }))
const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run node with --expose-gc')
const samples: string[] = []
for (let s = 0; s < Number(process.argv[2] ?? 16); s++) {
  const t = new Table<O>({ name: 't', primary: idIndex })
  const db = new DB({ tables: [t] })
  if (process.argv[3] !== 'nogc') gc()
  const t0 = performance.now()
  for (let i = 0; i < objs.length;) {
    const txn = db.tryWriteTxn(t)!
    for (const end = i + 100; i < end; i++) t.insert(txn, objs[i]!)
    txn.commit()
  }
  samples.push((performance.now() - t0).toFixed(1))
}
console.log(samples.join(' '))
