// The write path's shortcuts against a plain Map model, with validation on: non-unique indexes hold
// primary keys and are not written when an update keeps the object's keys (./src/buckets.ts), single
// keys go without arrays, forEach walks the tree. Reads through every index must still return the
// very object stored (identity, not just the id), in the latest state and in every older snapshot.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, setValidation, Table, type ReadTxn } from '../src/index.ts'

setValidation(true)

interface Obj {
  readonly id: number
  readonly kind: string
  readonly tags: readonly string[]
  readonly alias: string
  readonly v: number
}

const byId = defineIndex<Obj, number>({ name: 'id', key: (o) => o.id, unique: true })
const byKind = defineIndex<Obj, string>({ name: 'kind', key: (o) => o.kind }) // one key, non-unique
const byTag = defineIndex<Obj, string>({ name: 'tag', keys: (o) => o.tags }) // several keys, non-unique
const byAlias = defineIndex<Obj, string>({ name: 'alias', key: (o) => o.alias, unique: true })
// The same keys as byTag, given as a Set (not an array): keys go through the iterator path.
const byTagSet = defineIndex<Obj, string>({ name: 'tagset', keys: (o) => new Set(o.tags) })

const KINDS = ['a', 'b', 'c']
const TAGS = ['x', 'y', 'z']

const arbObj = fc.record({
  id: fc.integer({ min: 0, max: 30 }),
  kind: fc.constantFrom(...KINDS),
  tags: fc.array(fc.constantFrom(...TAGS), { maxLength: 3 }),
  alias: fc.integer({ min: 0, max: 30 }).map((n) => `al${n}`), // unique: conflicts are expected
  v: fc.integer({ min: 0, max: 3 }),
})
type Op = { t: 'put'; obj: Obj; keep: boolean } | { t: 'del'; id: number } | { t: 'cas'; obj: Obj; stale: boolean } | { t: 'clear' }
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  // keep: the update keeps the stored object's keys (kind, tags, alias) and changes only v
  { weight: 6, arbitrary: fc.record({ t: fc.constant('put' as const), obj: arbObj, keep: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('del' as const), id: fc.integer({ min: 0, max: 30 }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('cas' as const), obj: arbObj, stale: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('clear' as const) }) },
)

function expectState(table: Table<Obj>, txn: ReadTxn, model: ReadonlyMap<number, Obj>): void {
  const rows = [...model.values()].sort((a, b) => a.id - b.id)
  assert.equal(table.all(txn).toArray(), rows)
  const walked: Obj[] = []
  table.all(txn).forEach((o) => walked.push(o))
  assert.equal(walked, rows, 'forEach walks what the iterator yields')
  for (const o of rows) assert.is(table.get(txn, byId.query(o.id)), o)
  for (const k of KINDS) {
    const got = table.list(txn, byKind.query(k)).toArray()
    const want = rows.filter((o) => o.kind === k)
    assert.is(got.length, want.length, `kind ${k}`)
    want.forEach((o, i) => assert.is(got[i], o, `kind ${k}: the stored object itself`))
    assert.is(table.get(txn, byKind.query(k)), want[0])
  }
  for (const t of TAGS) {
    const got = table.list(txn, byTag.query(t)).toArray()
    const want = rows.filter((o) => o.tags.includes(t))
    assert.is(got.length, want.length, `tag ${t}`)
    want.forEach((o, i) => assert.is(got[i], o, `tag ${t}: the stored object itself`))
    const pre = table.prefix(txn, byTag.query(t)).toArray()
    want.forEach((o, i) => assert.is(pre[i], o))
    if (table.indexes.includes('tagset')) {
      const viaSet = table.list(txn, byTagSet.query(t)).toArray()
      assert.is(viaSet.length, want.length, `tagset ${t}`)
      want.forEach((o, i) => assert.is(viaSet[i], o, `tagset ${t}: the stored object itself`))
    }
  }
  for (const o of rows) assert.is(table.get(txn, byAlias.query(o.alias)), o)
}

test('random writes, many keeping their keys, agree with a Map through every index; old snapshots keep their objects', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ ops: fc.array(arbOp, { minLength: 1, maxLength: 10 }), abort: fc.boolean() }), { minLength: 1, maxLength: 10 }),
      (txns) => {
        const table = new Table<Obj>({ name: 't', primary: byId, indexes: [byKind, byTag, byAlias, byTagSet] })
        const db = new DB({ tables: [table] })
        let model = new Map<number, Obj>()
        const snapshots: Array<[ReadTxn, Map<number, Obj>]> = []
        for (const { ops, abort } of txns) {
          const w = db.tryWriteTxn(table)!
          const next = new Map(model)
          for (const op of ops) {
            if (op.t === 'clear') {
              table.deleteAll(w)
              next.clear()
              continue
            }
            if (op.t === 'del') {
              assert.is(table.delete(w, { id: op.id } as Obj), next.get(op.id))
              next.delete(op.id)
              continue
            }
            const cur = next.get(op.obj.id)
            const obj = op.t === 'put' && op.keep && cur ? { ...cur, v: cur.v + 1 } : op.obj
            const holder = [...next.values()].find((o) => o.alias === obj.alias && o.id !== obj.id)
            if (op.t === 'cas') {
              const e = table.getEntry(w, byId.query(obj.id))
              if (e === undefined) continue
              const rev = op.stale ? e.revision - 1 : e.revision
              if (holder && !op.stale) {
                assert.throws(() => table.compareAndSwap(w, rev, obj))
                continue
              }
              const ok = table.compareAndSwap(w, rev, obj).ok
              assert.is(ok, !op.stale)
              if (ok) next.set(obj.id, obj)
              continue
            }
            if (holder) {
              assert.throws(() => table.insert(w, obj), /alias/)
              continue
            }
            table.insert(w, obj)
            next.set(obj.id, obj)
          }
          if (abort) {
            w.abort()
          } else {
            w.commit()
            model = next
          }
          const rtxn = db.readTxn()
          expectState(table, rtxn, model)
          snapshots.push([rtxn, model])
        }
        for (const [txn, m] of snapshots) expectState(table, txn, m)
      },
    ),
    { numRuns: 150 },
  )
})

test('an update that keeps its non-unique key is found through the index, fires key watches, and leaves the old snapshot as it was', async () => {
  const table = new Table<Obj>({ name: 't', primary: byId, indexes: [byKind, byTag, byAlias] })
  const db = new DB({ tables: [table] })
  const first: Obj = { id: 1, kind: 'a', tags: ['x'], alias: 'one', v: 0 }
  let w = db.tryWriteTxn(table)!
  table.insert(w, first)
  const before = w.commit()
  const [, kindWatch] = table.listWatch(before, byKind.query('a'))
  const [, tagWatch] = table.listWatch(before, byTag.query('x'))
  const second: Obj = { ...first, v: 1 }
  w = db.tryWriteTxn(table)!
  table.insert(w, second)
  assert.is(table.list(w, byKind.query('a')).first(), second, 'the transaction reads its own write through the index')
  const after = w.commit()
  assert.ok(kindWatch.closed, 'the watch on the unchanged key fired')
  assert.ok(tagWatch.closed)
  assert.is(table.list(after, byKind.query('a')).first(), second)
  assert.is(table.list(after, byTag.query('x')).first(), second)
  assert.is(table.list(before, byKind.query('a')).first(), first)
  // Now the keys change: the object leaves the old buckets.
  const third: Obj = { ...second, kind: 'b', tags: ['y'] }
  w = db.tryWriteTxn(table)!
  table.insert(w, third)
  const last = w.commit()
  assert.equal(table.list(last, byKind.query('a')).toArray(), [])
  assert.equal(table.list(last, byTag.query('x')).toArray(), [])
  assert.is(table.list(last, byKind.query('b')).first(), third)
  assert.is(table.list(after, byKind.query('a')).first(), second, 'older snapshots still resolve through their own primary index')
})

test('a table batch writes what the same table calls write, and refuses use after commit', () => {
  const mk = () => {
    const table = new Table<Obj>({ name: 't', primary: byId, indexes: [byKind, byTag, byAlias] })
    return { table, db: new DB({ tables: [table] }) }
  }
  const objs = Array.from({ length: 200 }, (_, i): Obj => ({ id: i, kind: KINDS[i % 3]!, tags: [TAGS[i % 3]!], alias: `al${i}`, v: 0 }))
  const a = mk()
  const b = mk()
  for (const side of [a, b]) {
    const w = side.db.tryWriteTxn(side.table)!
    for (const o of objs) side.table.insert(w, o)
    w.commit()
  }
  const wa = a.db.tryWriteTxn(a.table)!
  const wb = b.db.tryWriteTxn(b.table)!
  const batch = b.table.batch(wb)
  for (const o of objs) {
    const e = a.table.getEntry(wa, byId.query(o.id))!
    const next = { ...o, kind: o.id % 2 ? 'b' : o.kind, v: 1 }
    const rev = o.id % 5 === 0 ? e.revision - 1 : e.revision // every fifth is stale
    assert.is(batch.compareAndSwap(rev, next), a.table.compareAndSwap(wa, rev, next).ok)
  }
  assert.is(batch.insert(objs[0]!)?.v, a.table.insert(wa, objs[0]!)?.v)
  const ra = wa.commit()
  const rb = wb.commit()
  assert.equal(b.table.all(rb).toArray(), a.table.all(ra).toArray())
  for (const k of KINDS) assert.equal(b.table.list(rb, byKind.query(k)).toArray(), a.table.list(ra, byKind.query(k)).toArray())
  assert.is(b.table.revision(rb), a.table.revision(ra))
  assert.throws(() => batch.insert(objs[1]!), /already finished/)
})

test('change records are the stored entries and tombstones: collected changes stay distinct; deleted and JSON as before', () => {
  const table = new Table<Obj>({ name: 't', primary: byId, indexes: [byKind] })
  const db = new DB({ tables: [table] })
  const iter = table.changes(db.readTxn())
  let w = db.tryWriteTxn(table)!
  const a: Obj = { id: 1, kind: 'a', tags: [], alias: 'a', v: 0 }
  const b: Obj = { id: 2, kind: 'a', tags: [], alias: 'b', v: 0 }
  table.insert(w, a)
  table.insert(w, b)
  w.commit()
  w = db.tryWriteTxn(table)!
  table.delete(w, a)
  w.commit()
  const got = [...iter.next(db.readTxn())[0]]
  assert.equal(
    got.map((c) => [c.object, c.revision, c.deleted]),
    [
      [b, 2, false],
      [a, 3, true],
    ],
  )
  assert.equal(JSON.parse(JSON.stringify(got)), [
    { object: b, revision: 2, deleted: false },
    { object: a, revision: 3, deleted: true },
  ])
  iter.close()
})

test('key watches are recorded per index: a watch on an index nobody watched when the transaction began fires if its result changed, and only then', () => {
  const table = new Table<Obj>({ name: 't', primary: byId, indexes: [byKind] })
  const db = new DB({ tables: [table] })
  const o: Obj = { id: 1, kind: 'a', tags: [], alias: 'a', v: 0 }
  const [, kindWatch] = table.listWatch(db.readTxn(), byKind.query('a')) // only the kind index is watched
  const [, otherKind] = table.listWatch(db.readTxn(), byKind.query('b'))
  const w = db.tryWriteTxn(table)!
  table.insert(w, o)
  // Registered mid-transaction, on the primary index, after the write of its key.
  const [, idWatch] = table.getWatch(db.readTxn(), byId.query(1))
  const [, idOther] = table.getWatch(db.readTxn(), byId.query(2))
  w.commit()
  assert.ok(kindWatch.closed, 'recorded key fired')
  assert.not.ok(otherKind.closed, 'an untouched key of a recorded index does not fire')
  assert.ok(idWatch.closed, 'the unrecorded index fires the watch whose result changed')
  assert.not.ok(idOther.closed, 'and no other (its result is compared before and after the commit)')
})

test('list and prefix on non-unique indexes over a primary index of many leaves: dense, sparse and scattered buckets', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3000 }), fc.array(fc.integer({ min: 0, max: 2999 }), { maxLength: 300 }), (size, rewrites) => {
      const table = new Table<Obj>({ name: 't', primary: byId, indexes: [byKind, byTag] })
      const db = new DB({ tables: [table] })
      const model = new Map<number, Obj>()
      let w = db.tryWriteTxn(table)!
      for (let i = 0; i < size; i++) {
        // kind a: a dense run of ids; b: every other id; c: scattered (every 7th)
        const o: Obj = {
          id: i,
          kind: i < size / 3 ? 'a' : i % 7 === 0 ? 'c' : 'b',
          tags: i % 2 ? ['x'] : ['x', 'y'],
          alias: `al${i}`,
          v: 0,
        }
        table.insert(w, o)
        model.set(i, o)
      }
      w.commit()
      w = db.tryWriteTxn(table)!
      for (const id of rewrites) {
        const cur = model.get(id % size)!
        const o = { ...cur, v: cur.v + 1, kind: id % 5 === 0 ? 'c' : cur.kind }
        table.insert(w, o)
        model.set(o.id, o)
      }
      const txn = w.commit()
      const rows = [...model.values()].sort((a, b) => a.id - b.id)
      for (const k of KINDS) {
        const got = table.list(txn, byKind.query(k)).toArray()
        const want = rows.filter((o) => o.kind === k)
        assert.is(got.length, want.length)
        want.forEach((o, i) => assert.is(got[i], o))
        const pre = table.prefix(txn, byKind.query(k)).toArray()
        want.forEach((o, i) => assert.is(pre[i], o))
      }
      const ys = table.prefix(txn, byTag.query('y')).toArray()
      const wantY = rows.filter((o) => o.tags.includes('y'))
      assert.is(ys.length, wantY.length)
      wantY.forEach((o, i) => assert.is(ys[i], o))
    }),
    { numRuns: 40 },
  )
})

test.run()
