// The revision index against a Map model, with validation on: every snapshot taken along the way
// must keep reading what it read when it was taken, whatever later transactions wrote or aborted,
// by revision queries (lowerBound and get on byRevision); a change iterator must see the net changes.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { byRevision, DB, defineIndex, setValidation, Table, type ReadTxn } from '../src/index.ts'

setValidation(true)

interface Obj {
  readonly id: number
  readonly v: number
}
const byId = defineIndex<Obj, number>({ name: 'id', key: (o) => o.id, unique: true })

type Op = { t: 'put'; id: number; v: number } | { t: 'del'; id: number } | { t: 'clear' }
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ t: fc.constant('put' as const), id: fc.nat(150), v: fc.nat(9) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('del' as const), id: fc.nat(150) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'clear' as const }) },
)
const arbTxn = fc.record({ ops: fc.array(arbOp, { minLength: 1, maxLength: 60 }), abort: fc.boolean(), peek: fc.boolean() })

type Model = Map<number, { obj: Obj; rev: number }>

function expectSnapshot(table: Table<Obj>, txn: ReadTxn, model: Model, rev: number, what: string): void {
  const rows = [...model.values()].sort((a, b) => a.rev - b.rev)
  for (const from of [0, 1, Math.floor(rev / 3), Math.floor(rev / 2), rev, rev + 1]) {
    const want = rows.filter((r) => r.rev >= from).map((r) => r.obj)
    assert.equal(table.lowerBound(txn, byRevision(from)).toArray(), want, `${what}: lowerBound ${from}`)
  }
  for (const r of rows) assert.is(table.get(txn, byRevision(r.rev)), r.obj, `${what}: get revision ${r.rev}`)
  const live = new Set(rows.map((r) => r.rev))
  for (let r = 1; r <= rev; r++) if (!live.has(r)) assert.is(table.get(txn, byRevision(r)), undefined, `${what}: revision ${r} superseded`)
}

test('every snapshot keeps its revision index through later writes, deleteAll and aborts', () => {
  fc.assert(
    fc.property(fc.array(arbTxn, { minLength: 1, maxLength: 30 }), (txns) => {
      const table = new Table<Obj>({ name: 'r', primary: byId })
      const db = new DB({ tables: [table] })
      let model: Model = new Map()
      let rev = 0
      const snapshots: Array<{ txn: ReadTxn; model: Model; rev: number }> = []
      const changes = table.changes(db.readTxn())
      const seen = new Map<number, Obj>()
      for (const [n, { ops, abort, peek }] of txns.entries()) {
        const txn = db.tryWriteTxn(table)!
        const work: Model = new Map(model)
        let r = rev
        for (const op of ops) {
          if (op.t === 'put') {
            table.insert(txn, { id: op.id, v: op.v })
            work.set(op.id, { obj: table.get(txn, byId.query(op.id))!, rev: ++r })
          } else if (op.t === 'del') {
            if (table.delete(txn, { id: op.id, v: 0 }) !== undefined) {
              work.delete(op.id)
              r++
            }
          } else {
            table.deleteAll(txn)
            r += work.size
            work.clear()
          }
        }
        // Read inside the transaction: it sees its own writes.
        if (peek)
          assert.equal(
            table.lowerBound(txn, byRevision(0)).toArray(),
            [...work.values()].sort((a, b) => a.rev - b.rev).map((x) => x.obj),
          )
        if (abort) txn.abort()
        else {
          txn.commit()
          model = work
          rev = r
        }
        const now = db.readTxn()
        expectSnapshot(table, now, model, rev, `after transaction ${n}`)
        snapshots.push({ txn: now, model, rev })
        if (n % 3 === 0) {
          const [cs] = changes.next(now)
          for (const c of cs) {
            if (c.deleted) seen.delete(c.object.id)
            else seen.set(c.object.id, c.object)
          }
          assert.equal(
            [...seen.entries()].sort((a, b) => a[0] - b[0]),
            [...model.entries()].map(([id, x]) => [id, x.obj] as const).sort((a, b) => a[0] - b[0]),
            'changes replay to the model',
          )
        }
      }
      changes.close()
      for (const [i, s] of snapshots.entries()) expectSnapshot(table, s.txn, s.model, s.rev, `snapshot ${i}, read at the end`)
    }),
    { numRuns: 120 },
  )
})

test('an aborted transaction leaves no trace in the revision index; the next one takes its revisions', () => {
  const table = new Table<Obj>({ name: 'r', primary: byId })
  const db = new DB({ tables: [table] })
  let txn = db.tryWriteTxn(table)!
  for (let i = 0; i < 10; i++) table.insert(txn, { id: i, v: 0 })
  const first = txn.commit()
  txn = db.tryWriteTxn(table)!
  for (let i = 0; i < 10; i++) table.insert(txn, { id: i, v: 1 })
  table.delete(txn, { id: 3, v: 0 })
  txn.abort()
  assert.is(db.readTxn(), first)
  assert.equal(
    table.lowerBound(first, byRevision(0)).toArray(),
    Array.from({ length: 10 }, (_, i) => ({ id: i, v: 0 })),
  )
  txn = db.tryWriteTxn(table)!
  table.insert(txn, { id: 3, v: 2 })
  const second = txn.commit()
  assert.is(table.revision(second), 11)
  assert.equal(table.get(second, byRevision(11)), { id: 3, v: 2 })
  assert.is(table.get(second, byRevision(4)), undefined, 'the entry of revision 4 was superseded at 11')
  assert.equal(table.get(first, byRevision(4)), { id: 3, v: 0 }, 'but not in the snapshot before')
})

test('one table in two databases, with write transactions open in both at once: each revision index stays its own', () => {
  // A table's writers hand their arrays of stale revisions on (TableSchema.gatherPool): two writers of
  // the same table, in two databases, must never share one. Validation off: it reads the revision
  // index after every write, which removes the stale revisions at once and would hide a shared array.
  setValidation(false)
  try {
    fc.assert(
      fc.property(
        fc.array(fc.record({ db: fc.nat(1), id: fc.nat(12), v: fc.nat(9) }), { minLength: 20, maxLength: 200, size: 'medium' }),
        fc.array(fc.nat(2), { minLength: 1, maxLength: 20 }),
        (ops, ends) => {
          const table = new Table<Obj>({ name: 'shared', primary: byId })
          const dbs = [new DB({ tables: [table] }), new DB({ tables: [table] })]
          const models: Model[] = [new Map(), new Map()]
          const revs = [0, 0]
          let txns = dbs.map((db) => db.tryWriteTxn(table)!)
          let work = models.map((m) => new Map(m))
          let wrev = [...revs]
          let e = 0
          for (const [n, op] of ops.entries()) {
            const d = op.db
            const obj = { id: op.id, v: op.v }
            table.insert(txns[d]!, obj)
            work[d]!.set(op.id, { obj, rev: ++wrev[d]! })
            if (n % 7 !== 6) continue
            // End both transactions: 0 commits both, 1 aborts the first database's, 2 the second's.
            const end = ends[e++ % ends.length]!
            for (const i of [0, 1]) {
              if (end === i + 1) {
                txns[i]!.abort()
                work[i] = new Map(models[i])
                wrev[i] = revs[i]!
              } else {
                txns[i]!.commit()
                models[i] = work[i]!
                revs[i] = wrev[i]!
                work[i] = new Map(models[i])
              }
              expectSnapshot(table, dbs[i]!.readTxn(), models[i]!, revs[i]!, `database ${i} after op ${n}`)
            }
            txns = dbs.map((db) => db.tryWriteTxn(table)!)
          }
          for (const i of [0, 1]) {
            txns[i]!.commit()
            expectSnapshot(table, dbs[i]!.readTxn(), work[i]!, wrev[i]!, `database ${i} at the end`)
          }
        },
      ),
      { numRuns: 150 },
    )
  } finally {
    setValidation(true)
  }
})

test.run()
