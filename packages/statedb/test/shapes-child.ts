// Run by shapes.test.ts in a child process with --expose-gc --allow-natives-syntax: prints the
// optimization state of the write path's hot methods after a full GC taken between transactions.
import { DB, defineIndex, Table } from '../src/index.ts'
import { TreeWriter } from '../src/treewriter.ts'
import { TableWriter } from '../src/writer.ts'

const native = (src: string) => new Function('f', src) as (f: unknown) => number
const prepare = native('%PrepareFunctionForOptimization(f)')
const optimizeNext = native('%OptimizeFunctionOnNextCall(f)')
const status = native('return %GetOptimizationStatus(f)')
const OPTIMIZED = 1 << 4 // V8's OptimizationStatus::kOptimized
const gc = (globalThis as { gc?: () => void }).gc!

interface O {
  readonly id: number
}
const table = new Table<O>({ name: 'things', primary: defineIndex<O, number>({ name: 'id', key: (o) => o.id, unique: true }) })
const db = new DB({ tables: [table] })
const write = (from: number) => {
  const txn = db.tryWriteTxn(table)!
  for (let i = from; i < from + 100; i++) table.insert(txn, { id: i % 1000 })
  txn.commit()
}
const hot = { 'TableWriter.insert': TableWriter.prototype.insert, 'TreeWriter.set': TreeWriter.prototype.set }
for (const f of Object.values(hot)) prepare(f)
for (let i = 0; i < 50; i++) write(i * 100)
for (const f of Object.values(hot)) optimizeNext(f)
write(0)
const state = () => Object.fromEntries(Object.entries(hot).map(([name, f]) => [name, (status(f) & OPTIMIZED) !== 0]))
const before = state()
// No transaction is open now: only the table and its snapshot are alive.
gc()
gc()
console.log(JSON.stringify({ before, after: state() }))
