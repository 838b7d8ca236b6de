// statedb from this checkout against statedb from another checkout (say a worktree of main), in one
// process, alternating per round: the machine's load drifts alike for both, so the per-round ratio
// is steadier than ratios of separate runs on a shared machine.
//   node --conditions=@statewright/source --import tsx --expose-gc scripts/ab-statedb.ts <other-checkout> [rounds]
// Cases (100k rows unless said): replace (transactions of 100 random replacements, with a non-unique
// tags index: RandomReplace's shape), sameids (100 ids rewritten per transaction, WriteTxn_100_SameIds),
// lookup (table.get with prebuilt queries, shuffled: RandomLookup), scan (for..of over all),
// each (Results.forEach over all), changes (5 transactions of 1000 random writes, each read back
// through a change iterator). Prints medians and the median (and range) of the per-round ratios
// this/other, the first two rounds left out (warm-up).
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
  const lookup = () => {
    const txn = s.db.readTxn()
    for (let i = 0; i < ROWS; i++) if (s.t.get(txn, queries[i]!) === undefined) throw new Error('x')
    return ROWS
  }
  const scan = () => {
    let n = 0
    for (const _ of s.t.all(s.db.readTxn())) n++
    return n
  }
  const each = () => {
    let n = 0
    s.t.all(s.db.readTxn()).forEach(() => n++)
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
  return { replace, sameids, lookup, scan, each, changes }
}
const ca = cases(A),
  cb = cases(B)
const res: Record<string, { a: number[]; b: number[] }> = {}
const time = (f: () => number) => {
  const t0 = performance.now()
  const n = f()
  return (n / (performance.now() - t0)) * 1000
}
const ROUNDS = Number(process.argv[3] ?? 9)
for (let round = 0; round < ROUNDS; round++) {
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
  const ratios = a.map((x, i) => x / b[i]!).slice(2)
  console.log(
    `${name.padEnd(8)} this ${(med(a) / 1e6).toFixed(2)}M  other ${(med(b) / 1e6).toFixed(2)}M  this/other median ${med(ratios).toFixed(2)} (per-round ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
  )
}
