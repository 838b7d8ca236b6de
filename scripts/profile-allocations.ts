// Where the bytes allocated per object come from, in the reconciler bench's shapes: `floor` (insert
// 1000 pending objects per transaction, a change iterator, a clone per pending object,
// compare-and-swap of a shared done status) or `reconciler` (the same objects through a Reconciler
// with a no-op update): V8's sampling heap profiler, counting objects already collected too.
//   node --import tsx scripts/profile-allocations.ts [floor|reconciler] [objects] [--top N] [--fail F]
// (--fail: the fraction of objects whose first Update fails, as the bench's Fail10pctOnce: 0.1)
// (after `npm run build`: from dist/, whose line numbers the profile names; add
// --conditions=@statewright/source to run the sources). --no-turbo-inlining names callees that
// optimized code would inline into their callers.
// Prints bytes per object by allocating function (self) and by the statedb/reconciler function
// nearest the allocation.
import { Session } from 'node:inspector/promises'
import { floorWorkload, reconcilerWorkload } from '../bench/reconciler.ts'

const args = process.argv.slice(2)
const ti = args.indexOf('--top')
const top = ti >= 0 ? Number(args.splice(ti, 2)[1]) : 20
const fi = args.indexOf('--fail')
const fail = fi >= 0 ? Number(args.splice(fi, 2)[1]) : 0
const shape = args[0] === 'reconciler' || args[0] === 'floor' ? args.shift()! : 'floor'
const n = Number(args[0] ?? 300_000)
const run = shape === 'reconciler' ? () => reconcilerWorkload(n, fail) : () => floorWorkload(n)

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  children: Node[]
}
const where = (f: Node['callFrame']) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(packages|bench|scripts|node_modules)\//, '$1/')}:${f.lineNumber + 1}`
const ours = (f: Node['callFrame']) => /packages\/(statedb|reconciler)\//.test(f.url)

const session = new Session()
session.connect()
await run() // warm up, untimed
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 512,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
} as never)
await run()
const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: Node } }
const self = new Map<string, number>()
const nearest = new Map<string, number>()
let total = 0
const walk = (node: Node, near: string, parent = '') => {
  // A builtin (slice, push) is named with its caller.
  const here = node.callFrame.url === '' && parent !== '' ? `${node.callFrame.functionName} <- ${parent}` : where(node.callFrame)
  const n2 = ours(node.callFrame) ? here : near
  if (node.selfSize > 0) {
    self.set(here, (self.get(here) ?? 0) + node.selfSize)
    nearest.set(n2, (nearest.get(n2) ?? 0) + node.selfSize)
    total += node.selfSize
  }
  for (const c of node.children) walk(c, n2, where(node.callFrame))
}
walk(profile.head, '(outside statedb/reconciler)')
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`)
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(v / n).toFixed(1).padStart(8)} B/object  ${k}`)
}
console.log(`${shape}, ${n} objects: ${(total / n).toFixed(0)} B/object sampled`)
show('by allocating function', self)
show('by nearest statedb/reconciler function', nearest)
