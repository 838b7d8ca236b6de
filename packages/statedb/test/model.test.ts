// Model-based tests: random transactions on two tables, compared after every step with a model
// kept in plain Maps. Covers queries on every index, result order, revisions, aborts, unique
// conflicts, snapshot isolation and multi-table atomicity.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { byRevision, DB, defineIndex, Table, UniqueConflictError, type ReadTxn, setValidation } from '../src/index.ts'

setValidation(true)

interface Obj {
  id: string
  tags: string[]
  alias?: string
  v: number
}

const byId = defineIndex<Obj, string>({ name: 'id', key: (o) => o.id, unique: true })
const byTag = defineIndex<Obj, string>({ name: 'tag', keys: (o) => o.tags })
const byAlias = defineIndex<Obj, string>({ name: 'alias', keys: (o) => (o.alias === undefined ? [] : [o.alias]), unique: true })

type Row = { obj: Obj; rev: number }
interface TableModel {
  rows: Map<string, Row>
  rev: number
}
const cloneModel = (m: TableModel): TableModel => ({ rows: new Map(m.rows), rev: m.rev })

// Keys chosen to collide, nest as prefixes, and hold the separator characters of the encoding.
const ids = ['', 'a', 'ab', 'abc', 'a\0', 'a\0b', 'a\x01', 'b', 'ba', '\0', 'z']
const tags = ['', 'x', 'xy', 'x\0', 'y']
const arbObj = fc.record({
  id: fc.constantFrom(...ids),
  tags: fc.array(fc.constantFrom(...tags), { maxLength: 3 }), // duplicates allowed: an object may repeat a key
  alias: fc.option(fc.constantFrom('p', 'q', 'pq', ''), { nil: undefined }),
  v: fc.integer({ min: 0, max: 5 }),
})

type Op =
  | { t: 'insert'; table: 0 | 1; obj: Obj }
  | { t: 'delete'; table: 0 | 1; id: string }
  | { t: 'cas'; table: 0 | 1; obj: Obj; stale: boolean }
  | { t: 'cad'; table: 0 | 1; id: string; stale: boolean }
  | { t: 'modify'; table: 0 | 1; obj: Obj }
  | { t: 'deleteAll'; table: 0 | 1 }

const table01 = fc.constantFrom<0 | 1>(0, 1)
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('insert' as const), table: table01, obj: arbObj }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('delete' as const), table: table01, id: fc.constantFrom(...ids) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('cas' as const), table: table01, obj: arbObj, stale: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('cad' as const), table: table01, id: fc.constantFrom(...ids), stale: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('modify' as const), table: table01, obj: arbObj }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('deleteAll' as const), table: table01 }) },
)
const arbTxn = fc.record({ ops: fc.array(arbOp, { minLength: 1, maxLength: 8 }), abort: fc.boolean() })

function setup() {
  const a = new Table<Obj>({ name: 'a', primary: byId, indexes: [byTag, byAlias] })
  const b = new Table<Obj>({ name: 'b', primary: byId, indexes: [byTag] })
  return { db: new DB({ tables: [a, b] }), tables: [a, b] as const }
}

const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0)

function expectState(table: Table<Obj>, txn: ReadTxn, m: TableModel, unique: boolean): void {
  const rows = [...m.rows.values()]
  const name = table.name
  assert.is(table.count(txn), rows.length, `${name}: count`)
  assert.is(table.revision(txn), m.rev, `${name}: revision`)
  // all(): primary key order, objects identical
  assert.equal(
    table.all(txn).toArray(),
    rows.map((r) => r.obj).sort((x, y) => cmp(x.id, y.id)),
    `${name}: all`,
  )
  for (const id of ids) {
    const e = table.getEntry(txn, byId.query(id))
    const row = m.rows.get(id)
    assert.is(e?.object, row?.obj, `${name}: get ${JSON.stringify(id)}`)
    assert.is(e?.revision, row?.rev, `${name}: revision of ${JSON.stringify(id)}`)
    const pre = table
      .prefix(txn, byId.query(id))
      .toArray()
      .map((o) => o.id)
    assert.equal(
      pre,
      rows
        .map((r) => r.obj.id)
        .filter((x) => x.startsWith(id))
        .sort(cmp),
      `${name}: prefix ${JSON.stringify(id)}`,
    )
  }
  for (const tag of tags) {
    const listed = table
      .list(txn, byTag.query(tag))
      .toArray()
      .map((o) => o.id)
    assert.equal(
      listed,
      rows
        .filter((r) => r.obj.tags.includes(tag))
        .map((r) => r.obj.id)
        .sort(cmp),
      `${name}: list tag ${JSON.stringify(tag)}`,
    )
    assert.is(table.get(txn, byTag.query(tag))?.id, listed[0], `${name}: get by tag`)
    const pre = table
      .prefix(txn, byTag.query(tag))
      .toArray()
      .map((o) => o.id)
    const want = rows.filter((r) => r.obj.tags.some((t) => t.startsWith(tag)))
    // prefix on a non-unique index: key order, each object once (at its first matching key)
    const firstKey = (o: Obj) => o.tags.filter((t) => t.startsWith(tag)).sort(cmp)[0]!
    want.sort((x, y) => cmp(firstKey(x.obj), firstKey(y.obj)) || cmp(x.obj.id, y.obj.id))
    assert.equal(
      pre,
      want.map((r) => r.obj.id),
      `${name}: prefix tag ${JSON.stringify(tag)}`,
    )
  }
  if (unique) {
    for (const alias of ['p', 'q', 'pq', '']) {
      const holder = rows.find((r) => r.obj.alias === alias)
      assert.is(table.get(txn, byAlias.query(alias))?.id, holder?.obj.id, `${name}: alias ${alias}`)
    }
  }
  for (const from of [0, 1, Math.floor(m.rev / 2), m.rev, m.rev + 1]) {
    const got = table.lowerBound(txn, byRevision(from)).toArray()
    const want = rows
      .filter((r) => r.rev >= from)
      .sort((x, y) => x.rev - y.rev)
      .map((r) => r.obj)
    assert.equal(got, want, `${name}: lowerBound revision ${from}`)
  }
}

test('random transactions agree with a Map model; snapshots never change', () => {
  fc.assert(
    fc.property(fc.array(arbTxn, { minLength: 1, maxLength: 25 }), (txns) => {
      const { db, tables } = setup()
      const models: TableModel[] = [
        { rows: new Map(), rev: 0 },
        { rows: new Map(), rev: 0 },
      ]
      const snapshots: Array<{ txn: ReadTxn; models: TableModel[] }> = []
      for (const { ops, abort } of txns) {
        const txn = db.tryWriteTxn(tables)!
        const work = models.map(cloneModel)
        for (const op of ops) {
          const table = tables[op.table]
          const m = work[op.table]!
          const put = (obj: Obj) => m.rows.set(obj.id, { obj, rev: ++m.rev })
          const del = (id: string) => {
            if (m.rows.delete(id)) m.rev++
          }
          switch (op.t) {
            case 'insert':
            case 'modify': {
              const obj = op.t === 'modify' && m.rows.has(op.obj.id) ? { ...op.obj, v: m.rows.get(op.obj.id)!.obj.v + op.obj.v } : op.obj
              const clash =
                op.table === 0 &&
                obj.alias !== undefined &&
                [...m.rows.values()].some((r) => r.obj.alias === obj.alias && r.obj.id !== obj.id)
              const before = m.rows.get(obj.id)?.obj
              try {
                const old = op.t === 'insert' ? table.insert(txn, obj) : table.modify(txn, op.obj, (o, n) => ({ ...n, v: o.v + n.v }))
                assert.ok(!clash, 'expected a unique conflict')
                assert.is(old, before)
                put(op.t === 'insert' ? obj : table.get(txn, byId.query(obj.id))!)
              } catch (err) {
                if (!(err instanceof UniqueConflictError)) throw err
                assert.ok(clash, `unexpected conflict: ${err.message}`)
                assert.match(err.message, /table "a": unique index "alias" already has key/)
              }
              break
            }
            case 'delete': {
              const before = m.rows.get(op.id)?.obj
              assert.is(table.delete(txn, { id: op.id, tags: [], v: 0 }), before)
              del(op.id)
              break
            }
            case 'cas': {
              const row = m.rows.get(op.obj.id)
              const rev = row ? (op.stale ? row.rev - 1 : row.rev) : 1
              const clash =
                op.table === 0 &&
                op.obj.alias !== undefined &&
                [...m.rows.values()].some((r) => r.obj.alias === op.obj.alias && r.obj.id !== op.obj.id)
              const should = !!row && !op.stale
              if (should && clash) {
                assert.throws(
                  () => table.compareAndSwap(txn, rev, op.obj),
                  (e: unknown) => e instanceof UniqueConflictError,
                )
              } else {
                assert.is(table.compareAndSwap(txn, rev, op.obj).ok, should)
                if (should) put(op.obj)
              }
              break
            }
            case 'cad': {
              const row = m.rows.get(op.id)
              const rev = row ? (op.stale ? row.rev + 1 : row.rev) : 1
              assert.is(table.compareAndDelete(txn, rev, { id: op.id, tags: [], v: 0 }).ok, !!row && !op.stale)
              if (row && !op.stale) del(op.id)
              break
            }
            case 'deleteAll':
              table.deleteAll(txn)
              m.rev += m.rows.size
              m.rows.clear()
              break
          }
          // reads inside the transaction see its own writes
          assert.is(table.count(txn), m.rows.size)
          assert.is(table.revision(txn), m.rev)
          if (m.rev % 3 === 0) {
            // The revision index read mid-transaction (brings it up to date; later writes, rewrites of
            // the same objects included, go on from there).
            const want = [...m.rows.values()].sort((x, y) => x.rev - y.rev).map((r) => r.obj)
            assert.equal(table.lowerBound(txn, byRevision(0)).toArray(), want, `${table.name}: revision index inside the transaction`)
          }
        }
        const before = db.readTxn()
        if (abort) {
          txn.abort()
          assert.is(db.readTxn(), before, 'abort publishes nothing')
        } else {
          txn.commit()
          models.splice(0, 2, ...work)
        }
        const now = db.readTxn()
        expectState(tables[0], now, models[0]!, true)
        expectState(tables[1], now, models[1]!, false)
        snapshots.push({ txn: now, models: models.map(cloneModel) })
      }
      for (const s of snapshots) {
        expectState(tables[0], s.txn, s.models[0]!, true)
        expectState(tables[1], s.txn, s.models[1]!, false)
      }
    }),
    { numRuns: 150 },
  )
})

test('a large random workload keeps every index consistent (validation mode checks the trees)', () => {
  const { db, tables } = setup()
  const [a] = tables
  const model = new Map<string, Obj>()
  let seed = 42
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n
  for (let round = 0; round < 60; round++) {
    const txn = db.tryWriteTxn(a)!
    for (let i = 0; i < 200; i++) {
      const id = `k${rand(3000)}`
      if (rand(4) === 0) {
        a.delete(txn, { id, tags: [], v: 0 })
        model.delete(id)
      } else {
        const obj = { id, tags: [`t${rand(20)}`, `t${rand(20)}`].filter((t, j, all) => all.indexOf(t) === j), v: rand(100) }
        a.insert(txn, obj)
        model.set(id, obj)
      }
    }
    txn.commit()
  }
  const r = db.readTxn()
  assert.is(a.count(r), model.size)
  for (let t = 0; t < 20; t++) {
    const want = [...model.values()]
      .filter((o) => o.tags.includes(`t${t}`))
      .map((o) => o.id)
      .sort(cmp)
    assert.equal(
      a
        .list(r, byTag.query(`t${t}`))
        .toArray()
        .map((o) => o.id),
      want,
    )
  }
})

test('number and string primary keys in one table: get, prefix, lowerBound and order', async () => {
  interface Row {
    id: number | string
    group: number
  }
  const rid = defineIndex<Row, number | string>({ name: 'id', key: (r) => r.id, unique: true })
  const rgroup = defineIndex<Row, number>({ name: 'group', key: (r) => r.group })
  const t = new Table<Row>({ name: 'rows', primary: rid, indexes: [rgroup] })
  const db = new DB({ tables: [t] })
  const ids: Array<number | string> = [3, -1, 2.5, 'b', '10', 0, 'a', 100]
  await db.write(t, (w) => ids.forEach((id, i) => t.insert(w, { id, group: i % 2 })))
  const r = db.readTxn()
  assert.equal(
    t
      .all(r)
      .toArray()
      .map((x) => x.id),
    [-1, 0, 2.5, 3, 100, '10', 'a', 'b'],
  )
  assert.is(t.get(r, rid.query(2.5))?.id, 2.5)
  assert.is(t.get(r, rid.query('3')), undefined, 'the string "3" is not the number 3')
  assert.equal(
    t
      .prefix(r, rid.query(3))
      .toArray()
      .map((x) => x.id),
    [3],
    'a number is a prefix only of itself',
  )
  assert.equal(
    t
      .lowerBound(r, rid.query(3))
      .toArray()
      .map((x) => x.id),
    [3, 100, '10', 'a', 'b'],
  )
  assert.equal(
    t
      .list(r, rgroup.query(1))
      .toArray()
      .map((x) => x.id),
    [-1, 0, 100, 'b'],
  )
  assert.equal(
    t
      .lowerBound(r, rgroup.query(1))
      .toArray()
      .map((x) => x.id),
    [-1, 0, 100, 'b'],
  )
})

test("indexes compute an object's keys; queryOf finds its stored version", async () => {
  const { db, tables } = setup()
  const [a] = tables
  const obj = { id: 'k', tags: ['x', 'y'], v: 1 }
  assert.is(a.primary.keyOf(obj), 'k')
  assert.equal(byTag.keysOf(obj), ['x', 'y'])
  assert.throws(() => byTag.keyOf(obj), /index "tag": keyOf needs exactly one key, the object has 2/)
  await db.write(a, (w) => a.insert(w, obj))
  assert.is(a.get(db.readTxn(), byId.queryOf({ id: 'k', tags: [], v: 0 })), obj)
})

test('a commit publishes all tables at once; an abort publishes none', async () => {
  const { db, tables } = setup()
  const [a, b] = tables
  const before = db.readTxn()
  const txn = await db.writeTxn([a, b])
  a.insert(txn, { id: 'x', tags: [], v: 1 })
  b.insert(txn, { id: 'x', tags: [], v: 2 })
  // not visible to readers until commit
  assert.is(a.get(db.readTxn(), byId.query('x')), undefined)
  const after = txn.commit()
  assert.is(a.get(after, byId.query('x'))?.v, 1)
  assert.is(b.get(after, byId.query('x'))?.v, 2)
  assert.is(a.count(before), 0)
  assert.is(b.count(before), 0)
  await db.write([a, b], (t) => {
    a.insert(t, { id: 'y', tags: [], v: 1 })
    b.insert(t, { id: 'y', tags: [], v: 1 })
  })
  try {
    await db.write([a, b], (t) => {
      a.insert(t, { id: 'z', tags: [], v: 1 })
      b.delete(t, { id: 'x', tags: [], v: 0 })
      throw new Error('boom')
    })
    assert.unreachable('write must rethrow')
  } catch (err) {
    assert.is((err as Error).message, 'boom')
  }
  const r = db.readTxn()
  assert.equal(
    a
      .all(r)
      .toArray()
      .map((o) => o.id),
    ['x', 'y'],
  )
  assert.equal(
    b
      .all(r)
      .toArray()
      .map((o) => o.id),
    ['x', 'y'],
  )
})

test.run()
