// Change iterators: order, completeness, replay, independence, and the graveyard's lifetime.

import fc from 'fast-check'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, Table, type Change, type ChangeIterator } from '../src/index.ts'

interface Obj {
  id: string
  v: number
}
const byId = defineIndex<Obj, string>({ name: 'id', key: (o) => o.id, unique: true })

function setup() {
  const t = new Table<Obj>({ name: 'objs', primary: byId })
  return { db: new DB({ tables: [t] }), t }
}

const ids = ['a', 'b', 'c', 'd', 'e', 'f']
const arbWrites = fc.array(
  fc.record({
    writes: fc.array(fc.record({ del: fc.boolean(), id: fc.constantFrom(...ids), v: fc.integer({ min: 0, max: 9 }) }), {
      minLength: 1,
      maxLength: 6,
    }),
    consume: fc.constantFrom(0, 1, 2, 99), // how many changes each iterator reads after this txn
    abort: fc.boolean(),
  }),
  { minLength: 1, maxLength: 15 },
)

function take<T>(it: Iterable<T>, n: number): T[] {
  const out: T[] = []
  if (n === 0) return out
  for (const x of it) {
    out.push(x)
    if (out.length >= n) break
  }
  return out
}

test('replaying the changes rebuilds the snapshot; revisions strictly increase; iterators are independent', () => {
  fc.assert(
    fc.property(arbWrites, fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 2, maxLength: 2 }), (txns, startAt) => {
      const { db, t } = setup()
      const iters: Array<{ it: ChangeIterator<Obj> | undefined; replay: Map<string, Obj>; last: number; startAt: number }> = startAt.map(
        (s) => ({
          it: undefined,
          replay: new Map(),
          last: 0,
          startAt: s,
        }),
      )
      const apply = (st: (typeof iters)[number], changes: Change<Obj>[]) => {
        for (const c of changes) {
          assert.ok(c.revision > st.last, 'revisions strictly increase')
          st.last = c.revision
          if (c.deleted) st.replay.delete(c.object.id)
          else st.replay.set(c.object.id, c.object)
        }
      }
      txns.forEach(({ writes, consume, abort }, i) => {
        for (const st of iters) if (st.startAt === i) st.it = t.changes(db.readTxn())
        const txn = db.tryWriteTxn(t)!
        for (const w of writes) {
          if (w.del) t.delete(txn, { id: w.id, v: 0 })
          else t.insert(txn, { id: w.id, v: w.v })
        }
        if (abort) txn.abort()
        else txn.commit()
        for (const st of iters) if (st.it) apply(st, take(st.it.next(db.readTxn())[0], consume))
      })
      const r = db.readTxn()
      const want = new Map(
        t
          .all(r)
          .toArray()
          .map((o) => [o.id, o]),
      )
      for (const st of iters) {
        if (!st.it) continue
        apply(st, [...st.it.next(r)[0]])
        assert.equal(st.replay, want, 'replay equals the snapshot')
        assert.is(st.it.next(r)[0][Symbol.iterator]().next().done, true, 'nothing left')
        st.it.close()
      }
      assert.is(t.graveyardOf(db).size, 0, 'no iterator left: graveyard empty')
    }),
    { numRuns: 200 },
  )
})

test('an iterator sees each insert, update and delete once, and its watch fires on new changes', async () => {
  const { db, t } = setup()
  await db.write(t, (x) => {
    t.insert(x, { id: 'a', v: 1 })
    t.insert(x, { id: 'b', v: 1 })
  })
  const it = t.changes(db.readTxn())
  let [changes, watch] = it.next(db.readTxn())
  assert.equal(
    [...changes].map((c) => [c.object.id, c.revision, c.deleted]),
    [
      ['a', 1, false],
      ['b', 2, false],
    ],
  )
  assert.ok(watch.closed, 'the first batch comes with a fired watch (cilium: iterate or wait first)')
  ;[changes, watch] = it.next(db.readTxn())
  assert.equal([...changes], [])
  assert.not.ok(watch.closed, 'everything read: the watch waits for the next change')
  await db.write(t, (x) => {
    t.insert(x, { id: 'a', v: 2 })
    t.delete(x, { id: 'b', v: 0 })
  })
  assert.ok(watch.closed)
  ;[changes, watch] = it.next(db.readTxn())
  assert.equal(
    [...changes].map((c) => [c.object.id, c.object.v, c.revision, c.deleted]),
    [
      ['a', 2, 3, false],
      ['b', 1, 4, true],
    ],
  )
  assert.equal([...it.next(db.readTxn())[0]], [])
  assert.is(t.graveyardOf(db).size, 0, 'the only iterator has seen the delete')
  it.close()
  assert.throws(() => it.next(db.readTxn()), /change iterator of table "objs" is closed/)
})

test('deletes are kept only while an iterator has not seen them', async () => {
  const { db, t } = setup()
  await db.write(t, (x) => t.insert(x, { id: 'a', v: 1 }))
  await db.write(t, (x) => t.delete(x, { id: 'a', v: 0 }))
  assert.is(t.graveyardOf(db).size, 0, 'no iterator: nothing kept')
  const slow = t.changes(db.readTxn())
  const fast = t.changes(db.readTxn())
  await db.write(t, (x) => t.insert(x, { id: 'b', v: 1 }))
  await db.write(t, (x) => t.delete(x, { id: 'b', v: 0 }))
  assert.is(t.graveyardOf(db).size, 1)
  ;[...fast.next(db.readTxn())[0]]
  assert.is(t.graveyardOf(db).size, 1, 'the slow iterator still needs it')
  const seen = [...slow.next(db.readTxn())[0]]
  assert.equal(
    seen.map((c) => [c.object.id, c.deleted]),
    [['b', true]],
    'deletes before the iterator existed are not reported',
  )
  assert.is(t.graveyardOf(db).size, 0)
  await db.write(t, (x) => t.insert(x, { id: 'c', v: 1 }))
  await db.write(t, (x) => t.delete(x, { id: 'c', v: 0 }))
  assert.is(t.graveyardOf(db).size, 1)
  slow.close()
  fast.close()
  assert.is(t.graveyardOf(db).size, 0, 'closing the iterators releases the graveyard')
  assert.is(db.stats()[0]!.changeIterators, 0)
})

test('a dropped iterator is collected and stops holding deletes', async () => {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const { db, t } = setup()
  ;(() => {
    t.changes(db.readTxn()) // dropped at once
  })()
  await db.write(t, (x) => t.insert(x, { id: 'a', v: 1 }))
  await db.write(t, (x) => t.delete(x, { id: 'a', v: 0 }))
  assert.is(t.graveyardOf(db).size, 1)
  for (let i = 0; i < 20 && t.graveyardOf(db).size > 0; i++) {
    gc()
    await new Promise((r) => setImmediate(r)) // finalizers run between tasks
  }
  assert.is(t.graveyardOf(db).size, 0)
  assert.is(db.stats()[0]!.changeIterators, 0)
})

test('delete then re-insert before the iterator reads shows the net change', async () => {
  const { db, t } = setup()
  await db.write(t, (x) => t.insert(x, { id: 'a', v: 1 }))
  const it = t.changes(db.readTxn())
  ;[...it.next(db.readTxn())[0]]
  await db.write(t, (x) => t.delete(x, { id: 'a', v: 0 }))
  await db.write(t, (x) => t.insert(x, { id: 'a', v: 2 }))
  assert.equal(
    [...it.next(db.readTxn())[0]].map((c) => [c.object.id, c.object.v, c.deleted]),
    [['a', 2, false]],
  )
  it.close()
})

// follows cilium/statedb db_test.go TestDB_Changes (its last part: an iterator read with a WriteTxn)
test('next() with a write transaction reads the snapshot it began from: its own writes are not seen', async () => {
  const { db, t } = setup()
  const txn0 = await db.writeTxn(t)
  const it = t.changes(txn0)
  t.insert(txn0, { id: 'a', v: 1 })
  txn0.commit()
  const txn = await db.writeTxn(t)
  t.insert(txn, { id: 'b', v: 1 })
  const [changes] = it.next(txn)
  assert.equal(
    [...changes].map((c) => c.object.id),
    ['a'],
  )
  txn.abort()
  assert.equal(
    [...it.next(db.readTxn())[0]].map((c) => c.object.id),
    [],
    'b was aborted',
  )
  assert.throws(() => it.next({} as never), /next\(\) takes a transaction/)
  it.close()
})

test('a table registered with two databases: the change iterators of each see its own deletions only', () => {
  // Each database numbers the table's revisions from 0; one deletion log shared by the two handed
  // one's deletions to the other's iterators (here: "b" deleted in the first database, reported by
  // the second, which still holds it).
  fc.assert(
    fc.property(
      fc.array(fc.record({ db: fc.nat(1), del: fc.boolean(), id: fc.constantFrom(...ids), v: fc.nat(9) }), { minLength: 1, maxLength: 40 }),
      (writes) => {
        const t = new Table<Obj>({ name: 'shared', primary: byId })
        const dbs = [new DB({ tables: [t] }), new DB({ tables: [t] })]
        const iters = dbs.map((db) => t.changes(db.readTxn()))
        const models = dbs.map(() => new Map<string, Obj>())
        const seen = dbs.map(() => new Map<string, Obj>())
        for (const w of writes) {
          const db = dbs[w.db]!
          const txn = db.tryWriteTxn(t)!
          if (w.del) {
            t.delete(txn, { id: w.id, v: 0 })
            models[w.db]!.delete(w.id)
          } else {
            const o = { id: w.id, v: w.v }
            t.insert(txn, o)
            models[w.db]!.set(w.id, o)
          }
          txn.commit()
          for (const d of [0, 1]) {
            const [cs] = iters[d]!.next(dbs[d]!.readTxn())
            for (const c of cs) {
              if (c.deleted) {
                assert.ok(seen[d]!.has(c.object.id), `database ${d}: deletion of ${c.object.id}, which it never reported`)
                seen[d]!.delete(c.object.id)
              } else seen[d]!.set(c.object.id, c.object)
            }
            assert.equal([...seen[d]!.entries()].sort(), [...models[d]!.entries()].sort(), `database ${d} replays to its model`)
          }
        }
        assert.throws(() => iters[0]!.next(dbs[1]!.readTxn()), /another database/)
        for (const it of iters) it.close()
        for (const db of dbs) assert.is(t.graveyardOf(db).size, 0)
      },
    ),
    { numRuns: 300 },
  )
})

test('a table registered with a second database does not keep the first one alive', async () => {
  // The deletion logs live in each database, not in the table: a module-level table used with a
  // database per test must not pin the databases it was used with.
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const t = new Table<Obj>({ name: 'reused', primary: byId })
  const first = (() => {
    const db = new DB({ tables: [t] })
    const it = t.changes(db.readTxn())
    const txn = db.tryWriteTxn(t)!
    t.insert(txn, { id: 'a', v: 1 })
    txn.commit()
    const del = db.tryWriteTxn(t)!
    t.delete(del, { id: 'a', v: 1 })
    del.commit()
    assert.is(t.graveyardOf(db).size, 1, 'the deletion is kept for the open iterator')
    void it
    return new WeakRef(db)
  })()
  const second = new DB({ tables: [t] })
  assert.is(t.graveyardOf(second).size, 0, 'the second database has its own log')
  // A WeakRef's target stays alive until the end of the job that read it: collect first, then read.
  let collected = false
  for (let i = 0; i < 50 && !collected; i++) {
    await new Promise((r) => setImmediate(r))
    gc()
    collected = first.deref() === undefined
  }
  assert.ok(collected, 'the first database was collected')
})

test('reuse: the same changes as fresh records, with one record object for every write (randomized, against the fresh iterator)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd'), del: fc.boolean(), read: fc.boolean() }), { maxLength: 40 }),
      (ops) => {
        const t = new Table<Obj>({ name: 'reuse', primary: byId })
        const db = new DB({ tables: [t] })
        const fresh = t.changes(db.readTxn())
        const reusing = t.changes(db.readTxn())
        const read = (it: ChangeIterator<Obj>, reuse: boolean) => {
          const out: Array<[string, number, boolean]> = []
          const records = new Set<unknown>()
          for (const c of it.next(db.readTxn(), { reuse })[0]) {
            out.push([c.object.id, c.revision, c.deleted])
            if (!c.deleted) records.add(c)
          }
          return { out, records: records.size }
        }
        let v = 0
        for (const op of ops) {
          const txn = db.tryWriteTxn(t)!
          if (op.del) t.delete(txn, { id: op.id, v: 0 })
          else t.insert(txn, { id: op.id, v: ++v })
          txn.commit()
          if (op.read) {
            const a = read(fresh, false)
            const b = read(reusing, true)
            assert.equal(b.out, a.out)
            assert.ok(b.records <= 1, 'one record object for the writes')
          }
        }
        assert.equal(read(reusing, true).out, read(fresh, false).out)
      },
    ),
    { numRuns: 200, seed: 7 },
  )
})

test.run()
