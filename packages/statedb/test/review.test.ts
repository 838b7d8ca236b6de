import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, setValidation, Table } from '../src/index.ts'

interface Obj {
  id: string
  tag: string
  v: number
}
const byId = defineIndex<Obj, string>({ name: 'id', key: (o) => o.id, unique: true })
const byTag = defineIndex<Obj, string>({ name: 'tag', key: (o) => o.tag })

function setup() {
  const t = new Table<Obj>({ name: 'objs', primary: byId, indexes: [byTag] })
  return { db: new DB({ tables: [t] }), t }
}

test('deleting every object while iterating all() of the same write transaction', async () => {
  const { db, t } = setup()
  await db.write(t, (w) => {
    for (let i = 0; i < 200; i++) t.insert(w, { id: `k${String(i).padStart(3, '0')}`, tag: i % 2 ? 'odd' : 'even', v: 0 })
  })
  const w = await db.writeTxn(t)
  t.insert(w, { id: 'zzz', tag: 'z', v: 1 }) // the transaction has written: reads go through its writer
  let seen = 0
  for (const o of t.all(w)) {
    t.delete(w, o)
    seen++
  }
  assert.is(seen, 201)
  assert.is(t.count(w), 0)
  w.commit()
})

test('updating every object of a bucket while iterating list() of the same write transaction', async () => {
  const { db, t } = setup()
  await db.write(t, (w) => {
    for (let i = 0; i < 200; i++) t.insert(w, { id: `k${String(i).padStart(3, '0')}`, tag: 'x', v: 0 })
  })
  const w = await db.writeTxn(t)
  t.insert(w, { id: 'zzz', tag: 'x', v: 1 })
  let seen = 0
  for (const o of t.list(w, byTag.query('x'))) {
    t.insert(w, { ...o, tag: 'y' })
    seen++
  }
  assert.is(seen, 201)
  w.commit()
})

test('a change iterator read first from a snapshot older than itself still reports later deletions', async () => {
  const { db, t } = setup()
  await db.write(t, (w) => {
    t.insert(w, { id: 'a', tag: 'x', v: 0 })
    t.insert(w, { id: 'b', tag: 'x', v: 0 })
  })
  const old = db.readTxn()
  await db.write(t, (w) => {
    t.delete(w, { id: 'a', tag: 'x', v: 0 })
  })
  const it = t.changes(old)
  const state = new Map<string, Obj>()
  const apply = (txn = db.readTxn()) => {
    const [batch] = it.next(txn)
    for (const c of batch) c.deleted ? state.delete(c.object.id) : state.set(c.object.id, c.object)
  }
  apply(old)
  apply()
  assert.equal(
    [...state.keys()].sort(),
    t
      .all(db.readTxn())
      .toArray()
      .map((o) => o.id),
  )
  it.close()
})

test("a watch listener that reads another table of the same commit sees that table's deletions", async () => {
  const a = new Table<Obj>({ name: 'a', primary: byId })
  const b = new Table<Obj>({ name: 'b', primary: byId })
  const db = new DB({ tables: [a, b] })
  await db.write([a, b], (w) => {
    a.insert(w, { id: 'x', tag: '', v: 0 })
    b.insert(w, { id: 'y', tag: '', v: 0 })
  })
  const it = b.changes(db.readTxn())
  const state = new Set<string>()
  const read = () => {
    for (const c of it.next(db.readTxn())[0]) c.deleted ? state.delete(c.object.id) : state.add(c.object.id)
  }
  read()
  const [, watch] = a.getWatch(db.readTxn(), byId.query('x'))
  watch.onClose(read) // synchronous: runs inside the commit below
  await db.write([a, b], (w) => {
    a.insert(w, { id: 'x', tag: '', v: 1 })
    b.delete(w, { id: 'y', tag: '', v: 0 })
  })
  read()
  assert.equal([...state], [])
  it.close()
})

test('a commit refused by validation releases the locks (the next writer does not hang)', async () => {
  let suffix = ''
  const unstable = defineIndex<Obj, string>({ name: 'id', key: (o) => o.id + suffix, unique: true }) // keys that change
  const t = new Table<Obj>({ name: 'objs', primary: unstable })
  const db = new DB({ tables: [t] })
  setValidation(true)
  try {
    const w = await db.writeTxn(t)
    t.insert(w, { id: 'a', tag: '', v: 0 })
    suffix = '!'
    assert.throws(() => w.commit(), /primary key changed/)
    assert.is(t.count(db.readTxn()), 0, 'nothing published')
    const next = db.tryWriteTxn(t)
    assert.ok(next, 'the table is not left locked')
    next!.abort()
  } finally {
    setValidation(false)
  }
})

test('a watch read through a write transaction from a table it did not lock is not stale', async () => {
  const a = new Table<Obj>({ name: 'a', primary: byId })
  const b = new Table<Obj>({ name: 'b', primary: byId })
  const db = new DB({ tables: [a, b] })
  const w = await db.writeTxn(a)
  await db.write(b, (wb) => {
    b.insert(wb, { id: 'y', tag: '', v: 1 })
  }) // b changes after w began
  const [y, keyWatch] = b.getWatch(w, byId.query('y'))
  const [, anyWatch] = b.allWatch(w)
  w.abort()
  assert.is(y, undefined, 'w reads b as it was when w began')
  assert.ok(keyWatch.closed, 'the key watch has fired: y changed after that')
  assert.ok(anyWatch.closed, 'the table watch has fired')
})

test('an iteration started after a refused compare-and-swap yields what the transaction held then', async () => {
  // A refused swap copies the path it searched into the writer without making it dirty; an iterator
  // over the live writer saw the inserts that followed (it yielded 36 of 40 here).
  const { db, t } = setup()
  await db.write(t, (w) => {
    for (let i = 0; i < 40; i++) t.insert(w, { id: `k${String(i).padStart(3, '0')}`, tag: 'a', v: 0 })
  })
  const w = await db.writeTxn(t)
  assert.not.ok(t.compareAndSwap(w, 999, { id: 'k000', tag: 'a', v: 1 }).ok, 'refused: wrong revision')
  const it = t.all(w)[Symbol.iterator]()
  const first = it.next()
  for (let i = 40; i < 400; i++) t.insert(w, { id: `k${String(i).padStart(3, '0')}`, tag: 'a', v: 0 })
  let n = first.done ? 0 : 1
  while (!it.next().done) n++
  assert.is(n, 40)
  assert.is(t.count(w), 400)
  w.abort()
})

test('a stored object mutated in place is not taken for its own entry by a unique index (validation off)', async () => {
  interface Named {
    id: number
    name: string
  }
  const id = defineIndex<Named, number>({ name: 'id', key: (o) => o.id, unique: true })
  const name = defineIndex<Named, string>({ name: 'name', key: (o) => o.name, unique: true })
  const t = new Table<Named>({ name: 'named', primary: id, indexes: [name] })
  const db = new DB({ tables: [t] })
  setValidation(false)
  try {
    const o: Named = { id: 1, name: 'a' }
    await db.write(t, (w) => t.insert(w, o))
    o.id = 2 // the misuse validation mode forbids (it freezes stored objects)
    const w = await db.writeTxn(t)
    assert.throws(() => t.insert(w, o), /unique/i, 'object 2 takes the name of the object stored under 1')
    w.abort()
    assert.is(t.count(db.readTxn()), 1)
  } finally {
    setValidation(true)
  }
})

test('deleteAll runs no key function: a stored object whose key function now throws does not stop it halfway', async () => {
  interface Maybe {
    id: number | undefined
  }
  const id = defineIndex<Maybe, number>({
    name: 'id',
    key: (o) => {
      if (o.id === undefined) throw new Error('no id')
      return o.id
    },
    unique: true,
  })
  const t = new Table<Maybe>({ name: 'maybe', primary: id })
  const db = new DB({ tables: [t] })
  setValidation(false)
  try {
    const objs = [1, 2, 3, 4, 5].map((i) => ({ id: i as number | undefined }))
    await db.write(t, (w) => objs.forEach((o) => t.insert(w, o)))
    const changes = t.changes(db.readTxn())
    changes.next(db.readTxn())
    objs[3]!.id = undefined
    const w = await db.writeTxn(t)
    t.deleteAll(w)
    const after = w.commit()
    assert.is(t.count(after), 0)
    assert.is(t.revision(after), 10, 'five deletions after five inserts')
    const [cs] = changes.next(after)
    assert.equal(
      [...cs].map((c) => [c.deleted, c.revision]),
      [6, 7, 8, 9, 10].map((r) => [true, r]),
    )
    changes.close()
  } finally {
    setValidation(true)
  }
})

test.run()
