// One table schema in two databases (its writers share the schema's spare arrays: the revision
// index's gathered revisions, the buckets' removal arrays), a status-like index, a multi-key index
// and a unique index; write transactions interleave, commit in validation mode or abort, and reads
// inside them (get, list: a list publishes mid-transaction) agree with a Map model. (Written by a
// reviewer of the write-path change of issue 39.)
import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, setValidation, Table, type Txn } from '../src/index.ts'

interface Obj {
  readonly id: number
  readonly s: string
  readonly tags: readonly string[]
  readonly v: number
}
const byId = defineIndex<Obj, number>({ name: 'id', key: (o) => o.id, unique: true })
const byS = defineIndex<Obj, string>({ name: 's', key: (o) => o.s })
const byTag = defineIndex<Obj, string>({ name: 'tag', keys: (o) => o.tags })
const byName = defineIndex<Obj, string>({ name: 'name', key: (o) => 'n' + o.id, unique: true })
const S = ['a', 'b', 'c']
const TAGS = ['x', 'y', 'z', 'w']

type Op =
  | { t: 'put'; db: number; id: number; s: number; tags: number; n: number }
  | { t: 'del'; db: number; id: number; n: number }
  | { t: 'get'; db: number; s: number }
  | { t: 'list'; db: number; s: number; tag: number }
  | { t: 'end'; how: number }
const arb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      t: fc.constant('put' as const),
      db: fc.nat(1),
      id: fc.nat(400),
      s: fc.nat(2),
      tags: fc.nat(15),
      n: fc.integer({ min: 1, max: 200 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ t: fc.constant('del' as const), db: fc.nat(1), id: fc.nat(400), n: fc.integer({ min: 1, max: 200 }) }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('get' as const), db: fc.nat(1), s: fc.nat(2) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('list' as const), db: fc.nat(1), s: fc.nat(2), tag: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('end' as const), how: fc.nat(2) }) },
)
type Model = Map<number, Obj>

function check(table: Table<Obj>, txn: Txn, m: Model, what: string) {
  const ids = [...m.keys()].sort((a, b) => a - b)
  for (const s of S) {
    const want = ids.filter((i) => m.get(i)!.s === s)
    assert.equal(
      [...table.list(txn, byS.query(s))].map((o) => o.id),
      want,
      `${what} list s=${s}`,
    )
    assert.is(table.get(txn, byS.query(s))?.id, want[0], `${what} get s=${s}`)
  }
  for (const tg of TAGS) {
    const want = ids.filter((i) => m.get(i)!.tags.includes(tg))
    assert.equal(
      [...table.list(txn, byTag.query(tg))].map((o) => o.id),
      want,
      `${what} list tag=${tg}`,
    )
  }
  assert.is(table.count(txn), m.size)
}

test('buckets and spare arrays across two databases, with snapshots mid-transaction, agree with a model', () => {
  setValidation(false)
  fc.assert(
    fc.property(fc.array(arb, { minLength: 1, maxLength: 120, size: 'max' }), (ops) => {
      const table = new Table<Obj>({ name: 'shared', primary: byId, indexes: [byS, byTag, byName] })
      const dbs = [new DB({ tables: [table] }), new DB({ tables: [table] })]
      const models: Model[] = [new Map(), new Map()]
      let txns = dbs.map((db) => db.tryWriteTxn(table)!)
      let work = models.map((m) => new Map(m))
      let v = 0
      for (const o of ops) {
        if (o.t === 'put') {
          for (let i = 0; i < o.n; i++) {
            const id = (o.id + i * 7) % 401
            const obj = { id, s: S[(o.s + (i % 2) * v) % 3]!, tags: TAGS.filter((_, b) => ((o.tags + i) >> b) & 1), v: ++v }
            table.insert(txns[o.db]!, obj)
            work[o.db]!.set(id, obj)
          }
        } else if (o.t === 'del') {
          for (let i = 0; i < o.n; i++) {
            const id = (o.id + i) % 401
            const cur = work[o.db]!.get(id)
            if (cur) {
              table.delete(txns[o.db]!, cur)
              work[o.db]!.delete(id)
            }
          }
        } else if (o.t === 'get') {
          const ids = [...work[o.db]!.keys()].sort((a, b) => a - b).filter((i) => work[o.db]!.get(i)!.s === S[o.s])
          assert.is(table.get(txns[o.db]!, byS.query(S[o.s]!))?.id, ids[0])
        } else if (o.t === 'list') {
          check(table, txns[o.db]!, work[o.db]!, `in txn ${o.db}`)
        } else {
          for (const i of [0, 1]) {
            if (o.how === i + 1) {
              txns[i]!.abort()
              work[i] = new Map(models[i])
            } else {
              setValidation(true)
              try {
                txns[i]!.commit()
              } finally {
                setValidation(false)
              }
              models[i] = work[i]!
              work[i] = new Map(models[i])
            }
            check(table, dbs[i]!.readTxn(), models[i]!, `db ${i}`)
          }
          txns = dbs.map((db) => db.tryWriteTxn(table)!)
        }
      }
      for (const i of [0, 1]) {
        setValidation(true)
        try {
          txns[i]!.commit()
        } finally {
          setValidation(false)
        }
        check(table, dbs[i]!.readTxn(), work[i]!, `db ${i} end`)
      }
    }),
    { numRuns: Number(process.env.RUNS ?? 100) },
  )
})
test.run()
