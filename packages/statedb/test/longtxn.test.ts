// A randomized model test of whole tables against a Map model, aimed at long transactions: runs of
// hundreds of appends in one transaction (the B+tree's edge splits, from a writer's fifth on
// keeping the grown arrays), replacements in ascending and random order (the stale-revision array a
// table's writers hand on), deletes, deleteAll, unique conflicts, compare-and-swaps passing and
// refused, aborts, iterators started mid-transaction and finished after more writes, snapshots
// re-read at the end, one table in two databases with writers open in both, and validation mode
// switched on and off per transaction (it reads the revision index after every commit). Keys are
// numbers, strings and tuples. Written by a reviewer of the fourth round of issue 17 (its first
// version ran 8M operations over 300 seeds); here a fixed set of seeds, about a second per key kind.
// SEEDS=n (and FIRST_SEED) run more.

import { test } from 'uvu'
import { byRevision, DB, defineIndex, setValidation, Table, UniqueConflictError, type ReadTxn, type WriteTxn } from '../src/index.ts'
import { validateState } from '../src/validate.ts'

function rng(seed: number) {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s / 4294967296
  }
}

interface Obj {
  readonly id: number
  readonly name: string
  readonly g: number
  readonly v: number
}

type KeyKind = 'num' | 'str' | 'tuple'

function makeTable(kind: KeyKind) {
  const primary =
    kind === 'num'
      ? defineIndex<Obj, number>({ name: 'id', key: (o) => o.id, unique: true })
      : kind === 'str'
        ? defineIndex<Obj, string>({ name: 'id', key: (o) => 'k' + String(o.id).padStart(8, '0'), unique: true })
        : defineIndex<Obj, any>({ name: 'id', key: (o) => ['t', o.id], unique: true })
  const byName = defineIndex<Obj, string>({ name: 'name', key: (o) => o.name, unique: true })
  const byG = defineIndex<Obj, number>({ name: 'g', key: (o) => o.g })
  const table = new Table<Obj>({ name: 'fz', primary, indexes: [byName, byG] })
  return { table, primary, byName, byG }
}

type Row = { obj: Obj; rev: number }
type Model = Map<number, Row>

function fail(msg: string): never {
  throw new Error(msg)
}

function eqArr(a: readonly unknown[], b: readonly unknown[], what: string) {
  if (a.length !== b.length) fail(`${what}: length ${a.length} != ${b.length}`)
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) fail(`${what}: differs at ${i}: ${JSON.stringify(a[i])} vs ${JSON.stringify(b[i])}`)
}

function expectView(t: ReturnType<typeof makeTable>, txn: ReadTxn | WriteTxn, model: Model, rev: number, what: string, full = true) {
  const { table, primary, byName, byG } = t
  const byId = [...model.values()].sort((a, b) => a.obj.id - b.obj.id).map((r) => r.obj)
  eqArr(table.all(txn).toArray(), byId, `${what}: all`)
  if (table.count(txn) !== model.size) fail(`${what}: count ${table.count(txn)} != ${model.size}`)
  if (table.revision(txn) !== rev) fail(`${what}: revision ${table.revision(txn)} != ${rev}`)
  const byRev = [...model.values()].sort((a, b) => a.rev - b.rev)
  eqArr(
    table.lowerBound(txn, byRevision(0)).toArray(),
    byRev.map((r) => r.obj),
    `${what}: byRevision`,
  )
  if (!full) return
  for (const r of byRev) {
    if (table.get(txn, byRevision(r.rev)) !== r.obj) fail(`${what}: get revision ${r.rev}`)
    if (table.get(txn, primary.query(idKey(t, r.obj.id))) !== r.obj) fail(`${what}: get id ${r.obj.id}`)
    if (table.get(txn, byName.query(r.obj.name)) !== r.obj) fail(`${what}: get name ${r.obj.name}`)
  }
  const byNameWant = [...byId].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  eqArr(table.lowerBound(txn, byName.query('')).toArray(), byNameWant, `${what}: names`)
  const groups = new Map<number, Obj[]>()
  for (const o of byId) {
    const l = groups.get(o.g) ?? []
    l.push(o)
    groups.set(o.g, l)
  }
  for (let g = 0; g < 6; g++) {
    const want = groups.get(g) ?? []
    // buckets are in primary key order; for 'str' and 'num' that is id order, for tuples too
    eqArr(table.list(txn, byG.query(g)).toArray(), want, `${what}: group ${g}`)
  }
}

let keyKind: KeyKind = 'num'
function idKey(t: ReturnType<typeof makeTable>, id: number): any {
  return keyKind === 'num' ? id : keyKind === 'str' ? 'k' + String(id).padStart(8, '0') : ['t', id]
}

interface Held {
  txn: ReadTxn
  model: Model
  rev: number
  what: string
}

interface PendingIter {
  it: Iterator<Obj>
  got: Obj[]
  want: Obj[]
  what: string
}

function runSeed(seed: number, opsBudget: number): number {
  const r = rng(seed)
  const pick = (n: number) => Math.floor(r() * n)
  const t = makeTable(keyKind)
  const { table } = t
  const twoDbs = r() < 0.3
  const dbs = twoDbs ? [new DB({ tables: [table] }), new DB({ tables: [table] })] : [new DB({ tables: [table] })]
  const models: Model[] = dbs.map(() => new Map())
  const revs = dbs.map(() => 0)
  const nextId = dbs.map(() => 0)
  const held: Held[] = []
  let ops = 0
  let nameSeq = 0
  let txnNo = 0
  const changeIters = dbs.map((db) => table.changes(db.readTxn()))
  const seen: Array<Map<number, Obj>> = dbs.map(() => new Map())
  while (ops < opsBudget) {
    setValidation(r() < 0.5)
    // open transactions (in both DBs when two): interleave their writes
    const open = dbs.map((db, d) => ({
      d,
      txn: db.tryWriteTxn(table)!,
      work: new Map(models[d]!) as Model,
      rev: revs[d]!,
      next: nextId[d]!,
      pending: [] as PendingIter[],
    }))
    const steps = 1 + pick(12)
    for (let s = 0; s < steps; s++) {
      const o = open[pick(open.length)]!
      const { txn, work } = o
      const kind = r()
      const what = `seed ${seed} txn ${txnNo} db ${o.d} step ${s}`
      if (kind < 0.35) {
        // a long run of appends (new ids above every id)
        const n = pick(r() < 0.3 ? 900 : 250)
        for (let i = 0; i < n; i++) {
          const obj: Obj = { id: o.next++, name: 'n' + String(nameSeq++).padStart(9, '0'), g: pick(6), v: pick(100) }
          table.insert(txn, obj)
          work.set(obj.id, { obj, rev: ++o.rev })
        }
        ops += n
      } else if (kind < 0.5) {
        // replaces of existing objects, oldest first (ascending stale run) or random
        const ids = [...work.values()].sort((a, b) => a.rev - b.rev).map((x) => x.obj.id)
        const n = Math.min(ids.length, pick(300))
        const ordered = r() < 0.6
        for (let i = 0; i < n; i++) {
          const id = ordered ? ids[i]! : ids[pick(ids.length)]!
          const old = work.get(id)!.obj
          const sameName = r() < 0.7
          const obj: Obj = { id, name: sameName ? old.name : 'm' + String(nameSeq++).padStart(9, '0'), g: pick(6), v: pick(100) }
          table.insert(txn, obj)
          work.set(id, { obj, rev: ++o.rev })
        }
        ops += n
      } else if (kind < 0.62) {
        // deletes (random, or a run from the front)
        const ids = [...work.keys()].sort((a, b) => a - b)
        const n = Math.min(ids.length, pick(200))
        const front = r() < 0.5
        for (let i = 0; i < n; i++) {
          const id = front ? ids[i]! : ids[pick(ids.length)]!
          const had = work.get(id)
          const got = table.delete(txn, { id, name: '', g: 0, v: 0 })
          if (got !== had?.obj) fail(`${what}: delete ${id} returned ${JSON.stringify(got)}`)
          if (had) {
            work.delete(id)
            o.rev++
          }
        }
        ops += n
      } else if (kind < 0.64) {
        table.deleteAll(txn)
        o.rev += work.size
        work.clear()
        ops++
      } else if (kind < 0.72) {
        // unique conflicts: insert an object whose name another object holds
        const vals = [...work.values()]
        if (vals.length >= 2) {
          const a = vals[pick(vals.length)]!.obj
          const b = vals[pick(vals.length)]!.obj
          if (a.id !== b.id) {
            let threw = false
            try {
              table.insert(txn, { id: a.id, name: b.name, g: 0, v: 0 })
            } catch (e) {
              if (!(e instanceof UniqueConflictError)) throw e
              threw = true
            }
            if (!threw) fail(`${what}: no unique conflict for ${a.id} taking ${b.name} of ${b.id}`)
          }
          // same object, same name: no conflict
          const c = vals[pick(vals.length)]!.obj
          const obj = { ...c, v: c.v + 1 }
          table.insert(txn, obj)
          work.set(c.id, { obj, rev: ++o.rev })
          // CAS: a failing and a succeeding one
          const d = vals[pick(vals.length)]!.obj
          const cur = work.get(d.id)!
          if (table.compareAndSwap(txn, cur.rev + 1000, { ...cur.obj, v: -1 }).ok) fail(`${what}: CAS with a wrong revision succeeded`)
          const obj2 = { ...cur.obj, v: cur.obj.v + 7 }
          if (!table.compareAndSwap(txn, cur.rev, obj2).ok) fail(`${what}: CAS failed`)
          work.set(d.id, { obj: obj2, rev: ++o.rev })
        }
        ops += 4
      } else if (kind < 0.85) {
        // start an iterator mid-transaction (a snapshot of the writer), read part of it, finish later
        const byRev = [...work.values()].sort((a, b) => a.rev - b.rev).map((x) => x.obj)
        const byId = [...work.values()].sort((a, b) => a.obj.id - b.obj.id).map((x) => x.obj)
        const useRev = r() < 0.5
        const it = (useRev ? table.lowerBound(txn, byRevision(0)) : table.all(txn))[Symbol.iterator]()
        const p: PendingIter = { it, got: [], want: useRev ? byRev : byId, what: `${what} mid-txn iterator (${useRev ? 'rev' : 'id'})` }
        const k = pick(5)
        for (let i = 0; i < k; i++) {
          const x = it.next()
          if (x.done) break
          p.got.push(x.value)
        }
        o.pending.push(p)
        ops++
      } else {
        // read everything inside the transaction
        expectView(t, txn, work, o.rev, `${what} in-txn`, r() < 0.3)
        ops++
      }
    }
    // end: commit or abort each
    for (const o of open) {
      const what = `seed ${seed} txn ${txnNo} db ${o.d}`
      const abort = r() < 0.25
      if (abort) o.txn.abort()
      else {
        o.txn.commit()
        models[o.d] = o.work
        revs[o.d] = o.rev
        nextId[o.d] = o.next
      }
      for (const p of o.pending) {
        for (let x = p.it.next(); !x.done; x = p.it.next()) p.got.push(x.value)
        eqArr(p.got, p.want, p.what)
      }
      const now = dbs[o.d]!.readTxn()
      expectView(t, now, models[o.d]!, revs[o.d]!, `${what} after ${abort ? 'abort' : 'commit'}`, r() < 0.2)
      // tree invariants even with validation off
      validateState(table.schema, now.view(table))
      if (r() < 0.3) held.push({ txn: now, model: models[o.d]!, rev: revs[o.d]!, what: `${what} held` })
      if (r() < 0.4) {
        const [cs] = changeIters[o.d]!.next(now)
        for (const c of cs) {
          if (c.deleted) seen[o.d]!.delete(c.object.id)
          else seen[o.d]!.set(c.object.id, c.object)
        }
        const want = [...models[o.d]!.values()].map((x) => x.obj).sort((a, b) => a.id - b.id)
        eqArr(
          [...seen[o.d]!.values()].sort((a, b) => a.id - b.id),
          want,
          `${what}: changes replay`,
        )
      }
    }
    txnNo++
  }
  for (const c of changeIters) c.close()
  for (const h of held) expectView(t, h.txn, h.model, h.rev, `${h.what}, read at the end`, false)
  return ops
}

const SEEDS = Number(process.env.SEEDS ?? 6)
const FIRST = Number(process.env.FIRST_SEED ?? 1)
for (const kind of ['num', 'str', 'tuple'] as const) {
  test(`long transactions against a Map model, ${kind} keys (${SEEDS} seeds)`, () => {
    keyKind = kind
    try {
      for (let s = FIRST; s < FIRST + SEEDS; s++) runSeed(s, 15_000)
    } finally {
      setValidation(true)
    }
  })
}

test.run()
