// The statedb write workloads alone (no baselines), for profiling:
//   node --cpu-prof --cpu-prof-dir=<dir> --import tsx scripts/profile-writes.ts [case...]
//   node --trace-gc --import tsx scripts/profile-writes.ts ...
// then `node scripts/cpuprofile-top.mjs <dir>/*.cpuprofile`. Cases: sameids, sameids-tags, replace,
// insert (WriteTxn_100, new ids), txn1 (WriteTxn_1: one insert per transaction), cas (status write-back shape: CAS of 1000 per txn with a status
// index). The shapes are bench/statedb.ts's and bench/reconciler.ts's.

import { DB, defineIndex, setValidation, Table } from '@statewright/statedb'

interface O {
  readonly id: number
  readonly tags: readonly string[]
}
const idIndex = defineIndex<O, number>({ name: 'id', key: (o) => o.id, unique: true })
const tagsIndex = defineIndex<O, string>({ name: 'tags', keys: (o) => o.tags })
const T = ['test']
const EVEN = ['even']
const ODD = ['odd']

function table(tags: boolean) {
  const t = new Table<O>({ name: 't', primary: idIndex, indexes: tags ? [tagsIndex] : [] })
  return { db: new DB({ tables: [t] }), t }
}

const cases: Record<string, () => number> = {
  sameids: () => sameIds(false),
  'sameids-tags': () => sameIds(true),
  txn1: () => {
    const { db, t } = table(false)
    const n = 300_000
    for (let i = 0; i < n; i++) {
      const txn = db.tryWriteTxn(t)!
      t.insert(txn, { id: i, tags: T })
      txn.commit()
    }
    return n
  },
  insert: () => {
    const { db, t } = table(false)
    const n = 2_000_000
    for (let i = 0; i < n;) {
      const txn = db.tryWriteTxn(t)!
      for (const end = i + 100; i < end; i++) t.insert(txn, { id: i, tags: T })
      txn.commit()
    }
    return n
  },
  replace: () => {
    const { db, t } = table(true)
    const rows = 100_000
    let txn = db.tryWriteTxn(t)!
    for (let i = 0; i < rows; i++) t.insert(txn, { id: i, tags: i % 2 ? ODD : EVEN })
    txn.commit()
    const n = 1_000_000
    let x = 1
    for (let i = 0; i < n; i += 100) {
      txn = db.tryWriteTxn(t)!
      for (let j = 0; j < 100; j++) {
        x = (x * 1103515245 + 12345) >>> 0
        const id = x % rows
        t.insert(txn, { id, tags: id % 2 ? ODD : EVEN })
      }
      txn.commit()
    }
    return n
  },
  cas: () => {
    interface S {
      readonly id: number
      readonly status: { kind: string }
    }
    const sIdx = defineIndex<S, string>({ name: 'status', key: (o) => o.status.kind })
    const t = new Table<S>({ name: 's', primary: defineIndex<S, number>({ name: 'id', key: (o) => o.id, unique: true }), indexes: [sIdx] })
    const db = new DB({ tables: [t] })
    const n = 1_000_000
    const pending = { kind: 'pending' }
    const done = { kind: 'done' }
    for (let b = 0; b < n; b += 1000) {
      let txn = db.tryWriteTxn(t)!
      for (let i = b; i < b + 1000; i++) t.insert(txn, { id: i, status: pending })
      const rtxn = txn.commit()
      txn = db.tryWriteTxn(t)!
      for (const e of t.lowerBound(rtxn, idIndex.query(b) as never).entries()) {
        if (e.object.id >= b + 1000) break
        t.compareAndSwap(txn, e.revision, { id: e.object.id, status: done })
      }
      txn.commit()
    }
    return n
  },
}

function sameIds(tags: boolean): number {
  const { db, t } = table(tags)
  const n = 3_000_000
  for (let i = 0; i < n; i += 100) {
    const txn = db.tryWriteTxn(t)!
    for (let j = 0; j < 100; j++) t.insert(txn, { id: j, tags: T })
    txn.commit()
  }
  return n
}

setValidation(false)
for (const name of process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(cases)) {
  const t0 = performance.now()
  const n = cases[name]!()
  console.log(`${name}: ${Math.round(n / ((performance.now() - t0) / 1000)).toLocaleString('en-US')} writes/s`)
}
