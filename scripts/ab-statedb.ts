// statedb from this checkout against statedb from another checkout (say a worktree of main), in one
// process, alternating per round: the machine's load drifts alike for both, so the per-round ratio
// is steadier than ratios of separate runs on a shared machine.
//   node --conditions=@statewright/source --import tsx --expose-gc scripts/ab-statedb.ts <other-checkout> [rounds]
// Cases (100k rows unless said): replace (transactions of 100 random replacements, with a non-unique
// tags index: RandomReplace's shape), sameids (100 ids rewritten per transaction, WriteTxn_100_SameIds),
// lookup (table.get with prebuilt queries, shuffled: RandomLookup), scan (for..of over all),
// each (Results.forEach over all), changes (5 transactions of 1000 random writes, each read back
// through a change iterator). Prints medians and the median (and range) of the per-round ratios
// this/other, the first two rounds left out (warm-up). AB_CASES=replace,changes runs only those;
// AB_DEBUG=1 prints every round's ratio.
// Fairness (each measured on two checkouts of one commit, where the ratio must be 1): the side whose
// tables were built first in the process scanned 1.5-2.6x and looked up 1.2-1.6x faster, whichever
// side it was; the side run second in a round gained 10-30%; a side's garbage was collected on the
// other's time (replace 1.35 with three cases). Hence a throwaway fixture per side first, two
// fixture pairs built in either order, a full collection before every timing, and per-round ratios
// taken over two rounds (one in each order). Identical code now gives medians of 0.97-1.02 (20 rounds)
// to 0.83-1.12 (15 rounds) on the loaded 2-core machine: use 20 rounds or more, and several runs.
import { setFlagsFromString } from 'node:v8'
import * as A from '../packages/statedb/src/index.ts'
type Mod = typeof A
const other = process.argv[2]
if (!other) {
  console.error('usage: ab-statedb.ts <other-checkout> [rounds]')
  process.exit(2)
}
const B = (await import(`${other.replace(/\/$/, '')}/packages/statedb/src/index.ts`)) as Mod
interface O {
  readonly id: number
  readonly tags: readonly string[]
}
const EVEN = ['even'],
  ODD = ['odd']
const tagsOf = (i: number) => (i % 2 ? ODD : EVEN)
let seed = 3
const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n)
const ROWS = 100_000
const order = Array.from({ length: ROWS }, (_, i) => i)
for (let i = ROWS - 1; i > 0; i--) {
  const j = rnd(i + 1)
  ;[order[i], order[j]] = [order[j]!, order[i]!]
}

function setup(M: Mod, tags: boolean) {
  const idIndex = M.defineIndex<O, number>({ name: 'id', key: (o) => o.id, unique: true })
  const tagsIndex = M.defineIndex<O, string>({ name: 'tags', keys: (o) => o.tags })
  const t = new M.Table<O>({ name: 't', primary: idIndex, indexes: tags ? [tagsIndex] : [] })
  const db = new M.DB({ tables: [t] })
  const txn = db.tryWriteTxn(t)!
  for (let i = 0; i < ROWS; i++) t.insert(txn, { id: i, tags: tagsOf(i) })
  txn.commit()
  return { db, t, idIndex }
}
function cases(M: Mod): Record<string, () => number> {
  const r = setup(M, true)
  let pos = 0
  const replace = () => {
    const n = 20_000
    for (let i = 0; i < n; i += 100) {
      const txn = r.db.tryWriteTxn(r.t)!
      for (let j = 0; j < 100; j++) {
        const id = order[pos]!
        pos = (pos + 1) % ROWS
        r.t.insert(txn, { id, tags: tagsOf(id) })
      }
      txn.commit()
    }
    return n
  }
  const s = setup(M, false)
  const sameids = () => {
    const n = 200_000
    for (let i = 0; i < n; i += 100) {
      const txn = s.db.tryWriteTxn(s.t)!
      for (let j = 0; j < 100; j++) s.t.insert(txn, { id: j, tags: EVEN })
      txn.commit()
    }
    return n
  }
  const queries = order.map((id) => s.idIndex.query(id))
  // The reads pass over the table several times: one pass takes a few milliseconds, too short to
  // time right after a forced collection (its sweeping runs on).
  const lookup = () => {
    const txn = s.db.readTxn()
    for (let pass = 0; pass < 3; pass++) for (let i = 0; i < ROWS; i++) if (s.t.get(txn, queries[i]!) === undefined) throw new Error('x')
    return 3 * ROWS
  }
  const scan = () => {
    let n = 0
    for (let pass = 0; pass < 20; pass++) for (const _ of s.t.all(s.db.readTxn())) n++
    return n
  }
  const each = () => {
    let n = 0
    for (let pass = 0; pass < 20; pass++) s.t.all(s.db.readTxn()).forEach(() => n++)
    return n
  }
  const c = setup(M, false)
  const changes = () => {
    const it = c.t.changes(c.db.readTxn())
    let n = 0
    for (let k = 0; k < 5; k++) {
      const txn = c.db.tryWriteTxn(c.t)!
      for (let j = 0; j < 1000; j++) c.t.insert(txn, { id: rnd(ROWS), tags: EVEN })
      txn.commit()
      const [ch] = it.next(c.db.readTxn())
      for (const x of ch) if (x.revision > 0) n++
    }
    it.close()
    return n
  }
  const all: Record<string, () => number> = { replace, sameids, lookup, scan, each, changes }
  // AB_CASES=replace,changes: only those (more rounds in the same time).
  const only = process.env.AB_CASES?.split(',')
  return only === undefined ? all : Object.fromEntries(only.map((name) => [name, all[name]!]))
}
// Two fixtures per side, set up in the orders A B and B A: whichever side's tables are built first
// scans about 2x and looks up about 1.2-1.5x faster on identical code (measured: this checkout
// against a worktree of the same commit, either side built first), so each round measures one
// pair and the pairs take turns.
cases(A)
cases(B)
const ca1 = cases(A),
  cb1 = cases(B)
const cb2 = cases(B),
  ca2 = cases(A)
const res: Record<string, { a: number[]; b: number[] }> = {}
const gc = (globalThis as { gc?: () => void }).gc
// A precaution: with a full collection before every timing, a case's code runs once per dozen full
// collections, and V8 flushes bytecode (and the optimized code with it) that several collections
// found unused.
setFlagsFromString('--no-flush-bytecode')
const time = (f: () => number) => {
  // A full collection first: garbage one side left is not collected on the other's time.
  gc?.()
  if (CPU) {
    const c0 = process.cpuUsage()
    const n = f()
    const c = process.cpuUsage(c0)
    return (n / (c.user + c.system)) * 1e6
  }
  const t0 = performance.now()
  const n = f()
  return (n / (performance.now() - t0)) * 1000
}
const ROUNDS = Number(process.argv[3] ?? 9)
/** AB_CLOCK=cpu: the process's CPU time, all threads (a collector's sweeping after `gc` counts too). */
const CPU = process.env.AB_CLOCK === 'cpu'
for (let round = 0; round < ROUNDS; round++) {
  const [ca, cb] = round % 4 < 2 ? [ca1, cb1] : [ca2, cb2]
  for (const name of Object.keys(ca)) {
    const r = (res[name] ??= { a: [], b: [] })
    if (round % 2) {
      r.a.push(time(ca[name]!))
      r.b.push(time(cb[name]!))
    } else {
      r.b.push(time(cb[name]!))
      r.a.push(time(ca[name]!))
    }
  }
}
const med = (x: number[]) => [...x].sort((p, q) => p - q)[x.length >> 1]!
for (const [name, { a, b }] of Object.entries(res)) {
  if (process.env.AB_DEBUG) console.log(name, a.map((x, i) => (x / b[i]!).toFixed(2)).join(' '))
  // Whichever side runs second in a round gains 10-30% on some cases (lookups most): the ratio of
  // a round is the geometric mean of two consecutive rounds' (one in each order).
  const ratios: number[] = []
  for (let i = 2; i + 1 < a.length; i += 2) ratios.push(Math.sqrt((a[i]! / b[i]!) * (a[i + 1]! / b[i + 1]!)))
  console.log(
    `${name.padEnd(8)} this ${(med(a) / 1e6).toFixed(2)}M  other ${(med(b) / 1e6).toFixed(2)}M  this/other median ${med(ratios).toFixed(2)} (per-round ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
  )
}
