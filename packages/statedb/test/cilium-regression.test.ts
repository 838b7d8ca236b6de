// cilium/statedb's regression_test.go, in our API (each test names the Go test it follows).

import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, Table } from '../src/index.ts'

interface Tagged {
  id: string
  tag: string
}
const idIndex = defineIndex<Tagged, string>({ name: 'id', key: (o) => o.id, unique: true })
const tagIndex = defineIndex<Tagged, string>({ name: 'tag', key: (o) => o.tag })

function setup(rows: Array<[string, string]>) {
  const table = new Table<Tagged>({ name: 'objects', primary: idIndex, indexes: [tagIndex] })
  const db = new DB({ tables: [table] })
  const w = db.tryWriteTxn(table)!
  for (const [id, tag] of rows) table.insert(w, { id, tag })
  w.commit()
  return { db, table }
}
const idsOf = (xs: Iterable<Tagged>) => [...xs].map((o) => o.id)

// follows Test_Regression_29324
test('a key query returns exact matches only, on unique and non-unique string indexes', () => {
  const { db, table } = setup([
    ['foo', 'aa'],
    ['foobar', 'aaa'],
    ['baz', 'aaaa'],
  ])
  const txn = db.readTxn()
  assert.equal(idsOf(table.list(txn, idIndex.query('foo'))), ['foo'])
  assert.equal(idsOf(table.list(txn, idIndex.query('foob'))), [], 'a prefix of a key is not a match')
  assert.equal(idsOf(table.list(txn, tagIndex.query('aa'))), ['foo'])
  assert.equal(idsOf(table.list(txn, idIndex.query('a'))), [])
})

// follows Test_Regression_Changes_Watch
test('a change iterator hands out a fired watch while it has unread changes: the first call, and after a partial read', async () => {
  const table = new Table<Tagged>({ name: 'objects', primary: idIndex })
  const db = new DB({ tables: [table] })
  const it = table.changes(db.readTxn())
  let [changes, watch] = it.next(db.readTxn())
  assert.equal([...changes], [])
  assert.ok(watch.closed, 'the first next() returns a fired watch')
  ;[changes, watch] = it.next(db.readTxn())
  assert.equal([...changes], [])
  assert.not.ok(watch.closed, 'nothing unread: a watch on what comes next')

  await db.write(table, (t) => {
    for (const id of ['1', '2', '3']) table.insert(t, { id, tag: '' })
  })
  assert.ok(watch.closed)
  ;[changes, watch] = it.next(db.readTxn())
  assert.is([...changes].length, 3)

  await db.write(table, (t) => table.deleteAll(t))
  await watch.wait(AbortSignal.timeout(5000))
  ;[changes] = it.next(db.readTxn())
  for (const c of changes) {
    assert.ok(c.deleted)
    break // read one of three
  }
  ;[changes, watch] = it.next(db.readTxn())
  assert.ok(watch.closed, 'unread changes left after a partial read: the watch is fired')
  let n = 1
  for (const c of changes) {
    assert.ok(c.deleted)
    n++
  }
  assert.is(n, 3)
  // this fails without the fix: waiting first (before reading) on a batch that holds changes
  ;[, watch] = it.next(db.readTxn())
  assert.not.ok(watch.closed, 'all read')
  await db.write(table, (t) => table.insert(t, { id: '4', tag: '' }))
  const [batch, w2] = it.next(db.readTxn())
  await w2.wait(AbortSignal.timeout(5000)) // wait first, then read: must not sleep on "4"
  assert.equal(
    [...batch].map((c) => c.object.id),
    ['4'],
  )
  it.close()
})

// follows Test_Regression_Prefix_NonUnique
test('prefix and lowerBound on a non-unique index match on the secondary key only, in secondary key order', () => {
  const { db, table } = setup([
    ['aa', 'a'],
    ['b', 'bb'],
    ['z', 'b'],
  ])
  const txn = db.readTxn()
  assert.equal(idsOf(table.prefix(txn, tagIndex.query('aa'))), [], 'the primary key part is not matched')
  assert.equal(idsOf(table.prefix(txn, tagIndex.query('a'))), ['aa'])
  assert.equal(idsOf(table.prefix(txn, tagIndex.query('b'))), ['z', 'b'], 'ordered by the secondary key')
  assert.equal(idsOf(table.lowerBound(txn, tagIndex.query('aa'))), ['z', 'b'])
})

test.run()
