// statedb benchmarks, modelled on cilium/statedb's benchmarks_test.go (same case names), with three
// baselines running the same workloads side by side in this process (./statedb/baselines.ts):
// sorted-btree (the main one: a B+tree with O(1) copy-on-write clones, one snapshot per commit),
// immutable (persistent Maps, one snapshot per commit) and Map (mutable, no snapshots: the upper
// bound). Every row names its baseline; `<case> (vs <baseline>)` rows give the others.
//
// Objects are created before the timed part (what is timed is the database, not object creation).
// Rates are medians of several runs after a warm-up, with a full GC forced before each run; the runs
// of statedb and its baselines alternate (measureInterleaved), so drifting load falls on all alike.

import { byRevision, DB, defineIndex, setValidation, Table, Watch, type Query } from '@statewright/statedb'
import {
  bytesPerObject,
  forceGc,
  measure,
  measureInterleaved,
  percentile,
  rng,
  shuffle,
  type Measurement,
  type MeasureOptions,
  type Result,
  type RunOptions,
} from './lib/index.ts'

import { BASELINES, type TestObject } from './statedb/baselines.ts'

// ---------------------------------------------------------------------------------------------
// The objects and the table (cilium's testObject: an ID and a set of tags).

const NO_TAGS: readonly string[] = Object.freeze([])
const TAG_TEST: readonly string[] = Object.freeze(['test'])
const TAG_EVEN: readonly string[] = Object.freeze(['even'])
const TAG_ODD: readonly string[] = Object.freeze(['odd'])
const parityTags = (id: number) => (id % 2 === 0 ? TAG_EVEN : TAG_ODD)

const idIndex = defineIndex<TestObject, number>({ name: 'id', key: (o) => o.id, unique: true })
const tagsIndex = defineIndex<TestObject, string>({ name: 'tags', keys: (o) => o.tags })

function newDB(withTags: boolean) {
  const table = new Table<TestObject>({ name: 'test', primary: idIndex, indexes: withTags ? [tagsIndex] : [] })
  return { db: new DB({ tables: [table] }), table }
}

function objects(n: number, tags: (id: number) => readonly string[] = () => NO_TAGS): TestObject[] {
  const out: TestObject[] = new Array(n)
  for (let i = 0; i < n; i++) out[i] = { id: i, tags: tags(i) }
  return out
}

// ---------------------------------------------------------------------------------------------
// Reporting.

interface Sizes {
  runs: number
  warmup: number
  /** Objects inserted per run by WriteTxn_N (N >= 10) and WriteTxn_1. */
  writeObjects: number
  writeTxns1: number
  modifyTxns: number
  replaceRows: number
  replaceObjects: number
  lookupRows: number
  lookupPasses: number
  prefixRows: number
  prefixPasses: number
  iterRows: number
  iterPasses: number
  changesRounds: number
  propagationRounds: number
  memoryRows: number
}

const FULL: Sizes = {
  runs: 7,
  warmup: 1,
  writeObjects: 200_000,
  writeTxns1: 50_000,
  modifyTxns: 100,
  replaceRows: 100_000,
  replaceObjects: 50_000,
  lookupRows: 100_000,
  lookupPasses: 5,
  prefixRows: 1000,
  prefixPasses: 500,
  iterRows: 100_000,
  iterPasses: 10,
  changesRounds: 100,
  propagationRounds: 10_000,
  memoryRows: 1_000_000,
}

const QUICK: Sizes = {
  runs: 3,
  warmup: 1,
  writeObjects: 50_000,
  writeTxns1: 20_000,
  modifyTxns: 30,
  replaceRows: 100_000,
  replaceObjects: 20_000,
  lookupRows: 100_000,
  lookupPasses: 2,
  prefixRows: 1000,
  prefixPasses: 200,
  iterRows: 100_000,
  iterPasses: 3,
  changesRounds: 30,
  propagationRounds: 2000,
  memoryRows: 100_000,
}

/** "gc 23%, ±4%": GC share of the measured time and the spread of the runs around the median. */
function note(m: Measurement): string {
  const spread = m.samples.length > 1 ? (Math.max(...m.samples) - Math.min(...m.samples)) / 2 / m.opsPerSec : 0
  return `gc ${(m.gcShare * 100).toFixed(0)}%, ±${(spread * 100).toFixed(0)}%`
}

function log(msg: string): void {
  process.stderr.write(`  ${msg}\n`)
}

/**
 * Rows for one case: statedb against its most telling baseline, then against the other baseline(s),
 * then the baselines' own figures are in those rows' baselineValue.
 */
function rows(name: string, unit: string, sdb: Measurement, base: Record<string, Measurement>, main: string): Result[] {
  const out: Result[] = [{ name, unit, value: sdb.opsPerSec, baseline: main, baselineValue: base[main]!.opsPerSec, note: note(sdb) }]
  for (const [b, m] of Object.entries(base)) {
    if (b !== main)
      out.push({ name: `${name} (vs ${b})`, unit, value: sdb.opsPerSec, baseline: b, baselineValue: m.opsPerSec, note: `${b}: ${note(m)}` })
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// The cases. Each gathers its contenders (statedb as `sdb` and its variants, the baselines as
// `base:<name>`) and measures them interleaved (measureInterleaved says why).

type Contenders = Record<string, MeasureOptions<any>>

/** The measurements of one group of contenders (`base`, `baseEach`), by baseline name. */
function group(m: Record<string, Measurement>, name: string): Record<string, Measurement> {
  const out: Record<string, Measurement> = {}
  for (const [k, v] of Object.entries(m)) if (k.startsWith(`${name}:`)) out[k.slice(name.length + 1)] = v
  return out
}

/**
 * Inserts `total` objects, `batch` per transaction, into a fresh table. `sameIds` is cilium's shape:
 * every transaction writes ids 0..batch-1 again (new objects each time), so the table stays at
 * `batch` rows and every write replaces one.
 */
async function writeTxn(s: Sizes, batch: number, withTags: boolean, sameIds = false): Promise<[Measurement, Record<string, Measurement>]> {
  const contenders: Contenders = {}
  const total = batch === 1 ? s.writeTxns1 : s.writeObjects
  const objs = sameIds
    ? Array.from({ length: total }, (_, i) => ({ id: i % batch, tags: withTags ? TAG_TEST : NO_TAGS }))
    : objects(total, withTags ? () => TAG_TEST : undefined)
  const rows = sameIds ? batch : total
  const mopts = { runs: s.runs, warmup: s.warmup }
  contenders.sdb = {
    ...mopts,
    setup: () => newDB(withTags),
    run: ({ db, table }) => {
      for (let i = 0; i < total;) {
        const txn = db.tryWriteTxn(table)!
        const end = Math.min(i + batch, total)
        for (; i < end; i++) table.insert(txn, objs[i]!)
        txn.commit()
      }
      if (table.count(db.readTxn()) !== rows) throw new Error('WriteTxn: wrong count')
      return total
    },
  }
  for (const make of BASELINES) {
    const name = make(false).name
    contenders[`base:${name}`] = {
      ...mopts,
      setup: () => make(withTags),
      run: (store) => {
        for (let i = 0; i < total;) {
          const txn = store.txn()
          const end = Math.min(i + batch, total)
          for (; i < end; i++) txn.insert(objs[i]!)
          txn.commit()
        }
        if (store.count() !== rows) throw new Error(`WriteTxn ${name}: wrong count`)
        return total
      },
    }
  }
  const m = await measureInterleaved(contenders)
  return [m.sdb!, group(m, 'base')]
}

async function writeTxnAsync(s: Sizes): Promise<Measurement> {
  const total = s.writeTxns1
  const objs = objects(total)
  return measure({
    runs: s.runs,
    warmup: s.warmup,
    setup: () => newDB(false),
    run: async ({ db, table }) => {
      for (let i = 0; i < total; i++) {
        const txn = await db.writeTxn(table)
        table.insert(txn, objs[i]!)
        txn.commit()
      }
      return total
    },
  })
}

async function modify(s: Sizes): Promise<[Measurement, Record<string, Measurement>]> {
  const contenders: Contenders = {}
  const n = 1000
  const ids = shuffle(
    Array.from({ length: n }, (_, i) => i),
    rng(1),
  )
  const objs = ids.map((id) => ({ id, tags: NO_TAGS }))
  // Like cilium's merge returning `new` (a fresh value): a new object, so every write really writes.
  const merge = (_old: TestObject, nw: TestObject): TestObject => ({ id: nw.id, tags: nw.tags })
  const mopts = { runs: s.runs, warmup: s.warmup }
  const { db, table } = newDB(false)
  const t0 = db.tryWriteTxn(table)!
  for (const o of objs) table.insert(t0, o)
  t0.commit()
  contenders.sdb = {
    ...mopts,
    run: () => {
      for (let r = 0; r < s.modifyTxns; r++) {
        const txn = db.tryWriteTxn(table)!
        for (let i = 0; i < n; i++) table.modify(txn, objs[i]!, merge)
        txn.commit()
      }
      return s.modifyTxns * n
    },
  }
  for (const make of BASELINES) {
    const store = make(false)
    const t = store.txn()
    for (const o of objs) t.insert(o)
    t.commit()
    contenders[`base:${store.name}`] = {
      ...mopts,
      run: () => {
        for (let r = 0; r < s.modifyTxns; r++) {
          const txn = store.txn()
          for (let i = 0; i < n; i++) {
            const o = objs[i]!
            const old = txn.get(o.id)
            txn.insert(old === undefined ? o : merge(old, o))
          }
          txn.commit()
        }
        return s.modifyTxns * n
      },
    }
  }
  const m = await measureInterleaved(contenders)
  return [m.sdb!, group(m, 'base')]
}

async function randomReplace(s: Sizes): Promise<[Measurement, Record<string, Measurement>]> {
  const contenders: Contenders = {}
  const rows = s.replaceRows
  const batch = 100
  const initial = objects(rows, parityTags)
  // Replacements: new objects (same keys and tags), in random order; two generations used in turn,
  // so that a replacement is never the very object stored (which `immutable` would skip as a no-op).
  const order = shuffle(
    Array.from({ length: rows }, (_, i) => i),
    rng(2),
  )
  const repl = [...order.map((id) => ({ id, tags: parityTags(id) })), ...order.map((id) => ({ id, tags: parityTags(id) }))]
  const mopts = { runs: s.runs, warmup: s.warmup }
  const count = s.replaceObjects
  // A cursor per contender: each walks the replacements from the start, so no store is ever given
  // the object it already holds (the two generations alternate within its own sequence).
  const cursor = () => {
    let pos = 0
    return () => {
      const o = repl[pos]!
      pos = pos + 1 === repl.length ? 0 : pos + 1
      return o
    }
  }

  const { db, table } = newDB(true)
  for (let i = 0; i < rows; i += 10_000) {
    const txn = db.tryWriteTxn(table)!
    for (let j = i; j < Math.min(i + 10_000, rows); j++) table.insert(txn, initial[j]!)
    txn.commit()
  }
  const next = cursor()
  contenders.sdb = {
    ...mopts,
    run: () => {
      for (let i = 0; i < count; i += batch) {
        const txn = db.tryWriteTxn(table)!
        for (let j = 0; j < batch; j++) table.insert(txn, next())
        txn.commit()
      }
      if (table.count(db.readTxn()) !== rows) throw new Error('RandomReplace: wrong count')
      return count
    },
  }
  for (const make of BASELINES) {
    const store = make(true)
    const t = store.txn()
    for (const o of initial) t.insert(o)
    t.commit()
    const next = cursor()
    contenders[`base:${store.name}`] = {
      ...mopts,
      run: () => {
        for (let i = 0; i < count; i += batch) {
          const txn = store.txn()
          for (let j = 0; j < batch; j++) txn.insert(next())
          txn.commit()
        }
        return count
      },
    }
  }
  const m = await measureInterleaved(contenders)
  return [m.sdb!, group(m, 'base')]
}

/** A table of `rows` objects in one store of each kind. */
function filled(rows: number, tags?: (id: number) => readonly string[]) {
  const objs = objects(rows, tags)
  const { db, table } = newDB(tags !== undefined)
  for (let i = 0; i < rows; i += 10_000) {
    const txn = db.tryWriteTxn(table)!
    for (let j = i; j < Math.min(i + 10_000, rows); j++) table.insert(txn, objs[j]!)
    txn.commit()
  }
  const baselines = BASELINES.map((make) => {
    const store = make(tags !== undefined)
    const txn = store.txn()
    for (const o of objs) txn.insert(o)
    txn.commit()
    return store
  })
  return { db, table, baselines }
}

async function lookups(s: Sizes, random: boolean, rows = s.lookupRows): Promise<[Measurement, Record<string, Measurement>, Measurement]> {
  const contenders: Contenders = {}
  const { db, table, baselines } = filled(rows)
  const ids = Array.from({ length: rows }, (_, i) => i)
  if (random) shuffle(ids, rng(3))
  const queries: Query<TestObject>[] = ids.map((id) => idIndex.query(id))
  const mopts = { runs: s.runs, warmup: s.warmup }
  // The same number of lookups whatever the table size.
  const passes = Math.max(1, Math.round((s.lookupPasses * s.lookupRows) / rows))
  contenders.sdb = {
    ...mopts,
    run: () => {
      const txn = db.readTxn()
      for (let p = 0; p < passes; p++) {
        for (let i = 0; i < rows; i++) if (table.get(txn, queries[i]!) === undefined) throw new Error('not found')
      }
      return rows * passes
    },
  }
  // The same with a query built per lookup (the key is encoded every time).
  contenders.fresh = {
    ...mopts,
    run: () => {
      const txn = db.readTxn()
      for (let p = 0; p < passes; p++) {
        for (let i = 0; i < rows; i++) if (table.get(txn, idIndex.query(ids[i]!)) === undefined) throw new Error('not found')
      }
      return rows * passes
    },
  }
  for (const store of baselines) {
    contenders[`base:${store.name}`] = {
      ...mopts,
      run: () => {
        for (let p = 0; p < passes; p++) {
          for (let i = 0; i < rows; i++) if (store.get(ids[i]!) === undefined) throw new Error('not found')
        }
        return rows * passes
      },
    }
  }
  const m = await measureInterleaved(contenders)
  return [m.sdb!, group(m, 'base'), m.fresh!]
}

async function prefixSecondary(s: Sizes): Promise<[Measurement, Record<string, Measurement>, Measurement]> {
  const contenders: Contenders = {}
  const rows = s.prefixRows
  const { db, table, baselines } = filled(rows, () => TAG_TEST)
  const q = tagsIndex.query('test')
  const mopts = { runs: s.runs, warmup: s.warmup }
  const passes = s.prefixPasses
  const iterate = (results: Iterable<TestObject>) => {
    let n = 0
    for (const _ of results) n++
    if (n !== rows) throw new Error(`expected ${rows}, got ${n}`)
  }
  const rtxn = db.readTxn()
  contenders.sdb = {
    ...mopts,
    run: () => {
      for (let p = 0; p < passes; p++) iterate(table.prefix(rtxn, q))
      return rows * passes
    },
  }
  contenders.list = {
    ...mopts,
    run: () => {
      for (let p = 0; p < passes; p++) iterate(table.list(rtxn, q))
      return rows * passes
    },
  }
  for (const store of baselines) {
    contenders[`base:${store.name}`] = {
      ...mopts,
      run: () => {
        for (let p = 0; p < passes; p++) iterate(store.list('test'))
        return rows * passes
      },
    }
  }
  const m = await measureInterleaved(contenders)
  return [m.sdb!, group(m, 'base'), m.list!]
}

async function fullIteration(s: Sizes): Promise<[Measurement, Record<string, Measurement>, Measurement, Record<string, Measurement>]> {
  const contenders: Contenders = {}
  const rows = s.iterRows
  const { db, table, baselines } = filled(rows)
  const mopts = { runs: s.runs, warmup: s.warmup }
  const passes = s.iterPasses
  contenders.sdb = {
    ...mopts,
    run: () => {
      for (let p = 0; p < passes; p++) {
        let i = 0
        for (const o of table.all(db.readTxn())) {
          if (o.id !== i) throw new Error(`expected ID ${i}, got ${o.id}`)
          i++
        }
        if (i !== rows) throw new Error('wrong count')
      }
      return rows * passes
    },
  }
  contenders.forEach = {
    ...mopts,
    run: () => {
      for (let p = 0; p < passes; p++) {
        let i = 0
        table.all(db.readTxn()).forEach((o) => {
          if (o.id !== i) throw new Error(`expected ID ${i}, got ${o.id}`)
          i++
        })
        if (i !== rows) throw new Error('wrong count')
      }
      return rows * passes
    },
  }
  for (const store of baselines) {
    contenders[`base:${store.name}`] = {
      ...mopts,
      run: () => {
        for (let p = 0; p < passes; p++) {
          let i = 0
          for (const o of store.all()) {
            if (o === undefined) throw new Error('hole')
            i++
          }
          if (i !== rows) throw new Error('wrong count')
        }
        return rows * passes
      },
    }
  }
  // Each baseline's own callback scan (Map/immutable/sorted-btree forEach), against Results.forEach.
  for (const store of baselines) {
    contenders[`baseEach:${store.name}`] = {
      ...mopts,
      run: () => {
        for (let p = 0; p < passes; p++) {
          let i = 0
          store.each((o) => {
            if (o === undefined) throw new Error('hole')
            i++
          })
          if (i !== rows) throw new Error('wrong count')
        }
        return rows * passes
      },
    }
  }
  const m = await measureInterleaved(contenders)
  return [m.sdb!, group(m, 'base'), m.forEach!, group(m, 'baseEach')]
}

async function changes(s: Sizes): Promise<[Measurement, Measurement]> {
  const n = 1000
  const objs = objects(n)
  const rounds = s.changesRounds
  const mopts = { runs: s.runs, warmup: s.warmup }
  const contenders: Contenders = {}
  contenders.baseline = {
    ...mopts,
    setup: () => newDB(false),
    run: ({ db, table }) => {
      for (let r = 0; r < rounds; r++) {
        let txn = db.tryWriteTxn(table)!
        for (let i = 0; i < n; i++) table.insert(txn, objs[i]!)
        txn.commit()
        txn = db.tryWriteTxn(table)!
        table.deleteAll(txn)
        txn.commit()
      }
      return rounds * n
    },
  }
  contenders.withIter = {
    ...mopts,
    setup: () => {
      const { db, table } = newDB(false)
      const iter = table.changes(db.readTxn())
      return { db, table, iter }
    },
    run: ({ db, table, iter }) => {
      for (let r = 0; r < rounds; r++) {
        let txn = db.tryWriteTxn(table)!
        for (let i = 0; i < n; i++) table.insert(txn, objs[i]!)
        txn.commit()
        let [batch, watch] = iter.next(db.readTxn())
        let exists = 0
        for (const c of batch) {
          if (c.deleted) throw new Error('expected an insert')
          exists++
        }
        if (exists !== n) throw new Error(`expected ${n} inserts, saw ${exists}`)
        txn = db.tryWriteTxn(table)!
        table.deleteAll(txn)
        txn.commit()
        if (!watch.closed) throw new Error('watch did not fire')
        ;[batch, watch] = iter.next(db.readTxn())
        let deleted = 0
        for (const c of batch) {
          if (!c.deleted) throw new Error('expected a deletion')
          deleted++
        }
        if (deleted !== n) throw new Error(`expected ${n} deletions, saw ${deleted}`)
      }
      return rounds * n
    },
    teardown: ({ db, table, iter }) => {
      if (db.stats()[0]!.graveyard !== 0) throw new Error(`graveyard not empty: ${db.stats()[0]!.graveyard}`)
      iter.close()
      void table
    },
  }
  const m = await measureInterleaved(contenders)
  return [m.baseline!, m.withIter!]
}

/** From a commit of 10 objects to table 1 until a watcher of table 2 has seen them copied there. */
async function propagationDelay(s: Sizes): Promise<number[]> {
  const batch = 10
  const t1 = new Table<TestObject>({ name: 'test', primary: idIndex })
  const t2 = new Table<TestObject>({
    name: 'test2',
    primary: defineIndex<TestObject, number>({ name: 'id', key: (o) => o.id, unique: true }),
  })
  const db = new DB({ tables: [t1, t2] })
  const objs = objects(batch)
  let revision = 0
  let watch1 = Watch.closed()
  const samples: number[] = []
  const warmup = Math.min(500, s.propagationRounds / 10)
  forceGc()
  for (let round = 0; round < warmup + s.propagationRounds; round++) {
    const start = performance.now()
    let wtxn = db.tryWriteTxn(t1)!
    for (const o of objs) t1.insert(wtxn, o)
    wtxn.commit()
    await watch1.wait()
    const txn = db.readTxn()
    const [, watch2] = t2.allWatch(txn)
    let seq
    ;[seq, watch1] = t1.lowerBoundWatch(txn, byRevision<TestObject>(revision + 1))
    wtxn = db.tryWriteTxn(t2)!
    let copied = 0
    for (const o of seq) {
      t2.insert(wtxn, o)
      copied++
    }
    wtxn.commit()
    if (copied !== batch) throw new Error(`propagated ${copied}, want ${batch}`)
    revision = t1.revision(txn)
    await watch2.wait()
    if (round >= warmup) samples.push((performance.now() - start) * 1000)
  }
  return samples.sort((a, b) => a - b)
}

interface MemoryFigures {
  objects: number
  overhead: Record<string, number>
}

/** Bytes per object: the objects themselves, then the overhead of each store holding them. */
function memory(rows: number, withTags: boolean): MemoryFigures {
  const { bytes: objBytes, value: objs } = bytesPerObject(rows, () => objects(rows, withTags ? parityTags : undefined))
  const overhead: Record<string, number> = {}
  {
    const { bytes, value } = bytesPerObject(rows, () => {
      const { db, table } = newDB(withTags)
      for (let i = 0; i < rows; i += 10_000) {
        const txn = db.tryWriteTxn(table)!
        for (let j = i; j < Math.min(i + 10_000, rows); j++) table.insert(txn, objs[j]!)
        txn.commit()
      }
      return db
    })
    if (value.stats()[0]!.objects !== rows) throw new Error('memory: wrong count')
    overhead['statedb'] = bytes
  }
  for (const make of BASELINES) {
    const { bytes, value } = bytesPerObject(rows, () => {
      const store = make(withTags)
      for (let i = 0; i < rows; i += 10_000) {
        const txn = store.txn()
        for (let j = i; j < Math.min(i + 10_000, rows); j++) txn.insert(objs[j]!)
        txn.commit()
      }
      return store
    })
    if (value.count() !== rows) throw new Error('memory: wrong count')
    overhead[value.name] = bytes
  }
  if (objs.length !== rows) throw new Error('unreachable') // keeps objs alive through the measurements
  return { objects: objBytes, overhead }
}

// ---------------------------------------------------------------------------------------------

const MAIN = 'sorted-btree'

export async function run(opts: RunOptions): Promise<Result[]> {
  setValidation(false)
  const s = opts.quick ? QUICK : FULL
  const out: Result[] = []
  const ops = 'objects/s'

  for (const n of [1, 10, 100, 1000]) {
    log(`WriteTxn_${n}`)
    const [sdb, base] = await writeTxn(s, n, false)
    out.push(...rows(`WriteTxn_${n}`, n === 1 ? 'txns/s' : ops, sdb, base, MAIN))
  }
  {
    log('WriteTxn_1_Async')
    const m = await writeTxnAsync(s)
    const sync = out.find((r) => r.name === 'WriteTxn_1')!
    out.push({
      name: 'WriteTxn_1_Async',
      unit: 'txns/s',
      value: m.opsPerSec,
      baseline: 'WriteTxn_1 (tryWriteTxn)',
      baselineValue: sync.value,
      note: note(m),
    })
  }
  {
    log('WriteTxn_100_SecondaryIndex')
    const [sdb, base] = await writeTxn(s, 100, true)
    out.push(...rows('WriteTxn_100_SecondaryIndex', ops, sdb, base, MAIN))
  }
  for (const withTags of [false, true]) {
    const name = `WriteTxn_100_SameIds${withTags ? '_SecondaryIndex' : ''}`
    log(name)
    const [sdb, base] = await writeTxn(s, 100, withTags, true)
    out.push(...rows(name, ops, sdb, base, MAIN))
  }
  {
    log('Modify')
    const [sdb, base] = await modify(s)
    out.push(...rows('Modify', ops, sdb, base, MAIN))
  }
  {
    log('RandomReplace')
    const [sdb, base] = await randomReplace(s)
    out.push(...rows('RandomReplace', ops, sdb, base, MAIN))
  }
  for (const [name, random, size] of [
    ['RandomLookup', true, s.lookupRows],
    ['RandomLookup_1k', true, 1000],
    ['SequentialLookup', false, s.lookupRows],
  ] as const) {
    log(name)
    const [sdb, base, fresh] = await lookups(s, random, size)
    out.push(...rows(name, 'lookups/s', sdb, base, MAIN))
    out.push({
      name: `${name}_NewQuery`,
      unit: 'lookups/s',
      value: fresh.opsPerSec,
      baseline: name,
      baselineValue: sdb.opsPerSec,
      note: note(fresh),
    })
  }
  {
    log('Prefix_SecondaryIndex')
    const [sdb, base, list] = await prefixSecondary(s)
    out.push(...rows('Prefix_SecondaryIndex', ops, sdb, base, MAIN))
    out.push({
      name: 'List_SecondaryIndex',
      unit: ops,
      value: list.opsPerSec,
      baseline: MAIN,
      baselineValue: base[MAIN]!.opsPerSec,
      note: note(list),
    })
  }
  {
    log('FullIteration_All')
    const [sdb, base, forEach, baseEach] = await fullIteration(s)
    out.push(...rows('FullIteration_All', ops, sdb, base, MAIN))
    out.push(...rows('FullIteration_All_forEach', ops, forEach, baseEach, MAIN))
  }
  {
    log('Changes')
    const [baseline, withIter] = await changes(s)
    out.push({ name: 'Changes_Baseline', unit: ops, value: baseline.opsPerSec, note: note(baseline) })
    out.push({
      name: 'Changes',
      unit: ops,
      value: withIter.opsPerSec,
      baseline: 'Changes_Baseline',
      baselineValue: baseline.opsPerSec,
      note: note(withIter),
    })
  }
  {
    log('PropagationDelay')
    const samples = await propagationDelay(s)
    for (const p of [50, 90, 99]) {
      out.push({
        name: `PropagationDelay_p${p}`,
        unit: 'µs',
        value: percentile(samples, p, true),
        note: `${samples.length} samples, batches of 10`,
      })
    }
  }
  const label = s.memoryRows >= 1_000_000 ? `${s.memoryRows / 1_000_000}M` : `${s.memoryRows / 1000}k`
  for (const withTags of [false, true]) {
    const suffix = withTags ? '_SecondaryIndex' : ''
    log(`Memory_${label}${suffix}`)
    forceGc()
    const m = memory(s.memoryRows, withTags)
    const b = 'bytes/object'
    out.push({
      name: `Memory_${label}${suffix}_Objects`,
      unit: b,
      value: m.objects,
      note: 'the objects alone (and the array holding them)',
    })
    out.push({
      name: `Memory_${label}${suffix}_Total`,
      unit: b,
      value: m.objects + m.overhead['statedb']!,
      baseline: MAIN,
      baselineValue: m.objects + m.overhead[MAIN]!,
    })
    out.push({
      name: `Memory_${label}${suffix}_IndexOverhead`,
      unit: b,
      value: m.overhead['statedb']!,
      baseline: MAIN,
      baselineValue: m.overhead[MAIN]!,
    })
    for (const other of ['immutable', 'Map']) {
      out.push({
        name: `Memory_${label}${suffix}_IndexOverhead (vs ${other})`,
        unit: b,
        value: m.overhead['statedb']!,
        baseline: other,
        baselineValue: m.overhead[other]!,
      })
    }
  }
  return out
}
