// cilium/statedb's db_test.go, scenario by scenario, in our API. Each test names the Go test it
// follows; what we do differently is in docs/statedb.md, "Differences from cilium".

import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { byRevision, DB, defineIndex, DefinitionError, dump, Table, TxnError, type Entry, type ReadTxn, type Watch } from '../src/index.ts'

interface TestObject {
  id: number
  key?: string
  tags: readonly string[]
}
const idIndex = defineIndex<TestObject, number>({ name: 'id', key: (o) => o.id, unique: true })
const keyIndex = defineIndex<TestObject, string>({ name: 'key', key: (o) => o.key ?? '', unique: true })
const tagsIndex = defineIndex<TestObject, string>({ name: 'tags', keys: (o) => o.tags })

function newTestDB(withTags = true) {
  const table = new Table<TestObject>({ name: 'test', primary: idIndex, indexes: withTags ? [tagsIndex] : [] })
  const db = new DB({ tables: [table] })
  return { db, table }
}

const obj = (id: number, ...tags: string[]): TestObject => ({ id, tags })
const ids = (xs: Iterable<TestObject>) => [...xs].map((o) => o.id)

// follows TestDB_WriteTxn_DuplicateTables
test('a write transaction declaring a table twice works as declaring it once', async () => {
  const { db, table } = newTestDB()
  const txn = await db.writeTxn([table, table])
  table.insert(txn, obj(1))
  txn.commit()
  assert.is(table.count(db.readTxn()), 1)
})

// follows TestDB_InsertWatch
test('insertWatch: the watch fires when the inserted object is next written, not at its own commit', async () => {
  const { db, table } = newTestDB()
  let txn = await db.writeTxn(table)
  const [old, watch] = table.insertWatch(txn, obj(42, 'hello'))
  assert.is(old, undefined)
  txn.commit()
  assert.not.ok(watch.closed, 'not closed by its own commit')
  await db.write(table, (t) => table.insert(t, obj(7, 'other')))
  assert.not.ok(watch.closed, 'a write of another object does not fire it')
  txn = await db.writeTxn(table)
  table.insert(txn, obj(42, 'hello', 'world'))
  txn.commit()
  assert.ok(watch.closed)

  // ours: an aborted insert fires its watch at once (nothing was inserted to watch), and so does a
  // rewrite of the object in the same transaction (the object inserted is gone at commit)
  txn = await db.writeTxn(table)
  const [, aborted] = table.insertWatch(txn, obj(43))
  txn.abort()
  assert.ok(aborted.closed)
  txn = await db.writeTxn(table)
  const [, rewritten] = table.insertWatch(txn, obj(44))
  table.insert(txn, obj(44, 'again'))
  txn.commit()
  assert.ok(rewritten.closed)
  const [, deleted] = await db.write(table, (t) => table.insertWatch(t, obj(45)))
  await db.write(table, (t) => table.delete(t, obj(45)))
  assert.ok(deleted.closed, 'a delete is a change of the object')
})

// follows TestDB_LowerBound_ByRevision
test('lowerBound by revision: objects in revision order, and the watch fires on a change', async () => {
  const { db, table } = newTestDB()
  await db.write(table, (t) => table.insert(t, obj(42, 'hello', 'world')))
  await db.write(table, (t) => table.insert(t, obj(71, 'foo')))
  const txn = db.readTxn()
  const [all, watch] = table.lowerBoundWatch(txn, byRevision(0))
  const entries = [...all.entries()]
  assert.equal(
    entries.map((e) => e.object.id),
    [42, 71],
  )
  assert.ok(entries[0]!.revision < entries[1]!.revision)
  const rev42 = entries[0]!.revision
  assert.equal(ids(table.lowerBound(txn, byRevision(rev42 + 1))), [71])
  assert.not.ok(watch.closed)
  await db.write(table, (t) => table.insert(t, obj(71, 'foo', 'modified')))
  assert.ok(watch.closed)
  assert.equal(ids(table.lowerBound(db.readTxn(), byRevision(rev42 + 1))), [71])
})

// follows TestDB_Prefix
test('prefix on a non-unique index, and its watch fires only for keys under the prefix', async () => {
  const { db, table } = newTestDB()
  await db.write(table, (t) => {
    table.insert(t, obj(42, 'a', 'b'))
    table.insert(t, obj(82, 'abc'))
    table.insert(t, obj(71, 'ab'))
  })
  const [res, watch] = table.prefixWatch(db.readTxn(), tagsIndex.query('ab'))
  assert.equal(ids(res), [71, 82])
  assert.not.ok(watch.closed)
  await db.write(table, (t) => table.insert(t, obj(12, 'bc')))
  assert.not.ok(watch.closed, 'not closed by an unrelated key')
  await db.write(table, (t) => table.insert(t, obj(99, 'abcd')))
  assert.ok(watch.closed)
  assert.equal(ids(table.prefix(db.readTxn(), tagsIndex.query('ab'))), [71, 82, 99])
})

// follows TestDB_Changes
test('change iterators: two iterators, deletions kept until both saw them, partial reads, dropped iterators', async () => {
  const { db, table } = newTestDB()
  await db.write(table, (t) => {
    table.insert(t, obj(42, 'hello', 'world'))
    table.insert(t, obj(71, 'foo'))
    table.insert(t, obj(83, 'bar'))
  })
  const wtxn = await db.writeTxn(table)
  let iter = table.changes(wtxn)
  const iter2 = table.changes(wtxn)
  const txn0 = wtxn.commit()
  assert.is(db.stats().find((s) => s.name === 'test')!.changeIterators, 2)

  // the first watch is closed: iterate first or wait first
  let [, watch] = iter.next(db.readTxn())
  assert.ok(watch.closed)

  await db.write(table, (t) => {
    assert.equal(table.delete(t, obj(42))?.id, 42)
    assert.equal(table.delete(t, obj(71))?.id, 71)
  })
  await db.write(table, (t) => table.insert(t, obj(71, 'foo'))) // reinsert and delete again
  await db.write(table, (t) => assert.ok(table.delete(t, obj(71))))
  let txn = db.readTxn()
  assert.is(table.all(txn).count(), 1)
  assert.is(table.graveyardOf(db).size, 2)

  let nExist = 0
  let nDeleted = 0
  let [changes] = iter.next(txn0)
  for (const c of changes) c.deleted ? nDeleted++ : nExist++
  assert.is(nDeleted, 0)
  assert.is(nExist, 3, 'the objects that existed when the iterator was made')
  ;[changes] = iter.next(txn)
  for (const c of changes) {
    c.deleted ? (nDeleted++, nExist--) : nExist++
    break // a partially consumed batch
  }
  ;[changes, watch] = iter.next(db.readTxn())
  assert.ok(watch.closed, 'changes left: the watch is closed')
  for (const c of changes) c.deleted ? (nDeleted++, nExist--) : nExist++
  assert.is(nDeleted, 2)
  assert.is(nExist, 1)
  assert.is(table.graveyardOf(db).size, 2, 'the second iterator has not seen the deletions')

  nExist = 0
  nDeleted = 0
  let watch2: Watch
  ;[changes, watch2] = iter2.next(txn)
  for (const c of changes) c.deleted ? nDeleted++ : nExist++
  assert.is(nExist, 1)
  assert.is(nDeleted, 2)
  ;[changes, watch2] = iter2.next(txn)
  assert.equal([...changes], [], 'the same snapshot again: nothing new')
  assert.is(table.graveyardOf(db).size, 0, 'both saw the deletions: collected')

  ;[, watch] = iter.next(db.readTxn())
  await db.write(table, (t) => table.insert(t, obj(88, 'foo')))
  assert.ok(watch.closed)
  assert.ok(watch2.closed)
  txn = db.readTxn()
  const changes1 = [...iter.next(txn)[0]]
  const changes2 = [...iter2.next(txn)[0]]
  assert.equal(
    changes1.map((c) => [c.object.id, c.deleted]),
    [[88, false]],
  )
  assert.equal(
    changes2.map((c) => [c.object.id, c.deleted]),
    [[88, false]],
  )

  // after closing the first iterator, deletions are still kept for the second
  iter.close()
  iter = undefined as never
  await db.write(table, (t) => table.deleteAll(t))
  assert.is(table.graveyardOf(db).size, 2)
  ;[changes] = iter2.next(db.readTxn())
  const gone = [...changes]
  assert.is(gone.length, 2)
  assert.ok(gone.every((c) => c.deleted))
  assert.is(table.graveyardOf(db).size, 0)

  // with no iterator left, deletions are not kept at all
  iter2.close()
  await db.write(table, (t) => table.insert(t, obj(78, 'world')))
  await db.write(table, (t) => table.deleteAll(t))
  assert.is(table.graveyardOf(db).size, 0)

  // an iterator read with a write transaction sees the changes before it, not its own
  const w1 = await db.writeTxn(table)
  const iter3 = table.changes(w1)
  table.insert(w1, obj(1))
  w1.commit()
  const w2 = await db.writeTxn(table)
  table.insert(w2, obj(2))
  assert.equal(
    [...iter3.next(w2)[0]].map((c) => c.object.id),
    [1],
  )
  w2.abort()
  iter3.close()
})

// follows TestDB_NumObjects
test('count: a write transaction counts its own writes, snapshots do not change', async () => {
  const { db, table } = newTestDB(false)
  let rtxn = db.readTxn()
  assert.is(table.count(rtxn), 0)
  const txn = await db.writeTxn(table)
  assert.is(table.count(txn), 0)
  table.insert(txn, obj(1))
  assert.is(table.count(txn), 1)
  table.insert(txn, obj(1))
  table.insert(txn, obj(2))
  assert.is(table.count(txn), 2)
  assert.is(table.count(rtxn), 0)
  txn.commit()
  assert.is(table.count(rtxn), 0)
  rtxn = db.readTxn()
  assert.is(table.count(rtxn), 2)
})

// follows TestDB_All
test('all: in primary key order, in a write transaction too; the watch fires on a delete; old snapshots keep their objects', async () => {
  const { db, table } = newTestDB()
  await db.write(table, (t) => {
    for (const id of [1, 2, 3]) table.insert(t, obj(id))
    assert.equal(ids(table.all(t)), [1, 2, 3])
  })
  const txn = db.readTxn()
  const [all, watch] = table.allWatch(txn)
  assert.equal(ids(all), [1, 2, 3])
  assert.not.ok(watch.closed)
  await db.write(table, (t) => assert.ok(table.delete(t, obj(1))))
  assert.equal(ids(table.all(txn)), [1, 2, 3], 'the earlier snapshot is not affected')
  assert.ok(watch.closed)
})

// follows TestDB_Modify
test('modify: an insert when absent (merge not called), a merge when present', async () => {
  const { db, table } = newTestDB()
  const txn = await db.writeTxn(table)
  const old = table.modify(txn, obj(1, 'foo'), () => {
    throw new Error('merge unexpectedly called')
  })
  assert.is(old, undefined)
  let called = false
  const replaced = table.modify(txn, obj(1), (o, n) => {
    called = true
    return { ...n, tags: [...o.tags, 'bar'] }
  })
  assert.ok(called)
  assert.equal(replaced?.tags, ['foo'])
  const got = table.get(txn, idIndex.query(1))!
  assert.equal([...got.tags].sort(), ['bar', 'foo'])
  txn.commit()
  assert.equal(ids(table.all(db.readTxn())), [1])
})

// follows TestDB_ModifyUpdatesSecondaryIndex
test('modify: the merged object is what the secondary indexes hold', async () => {
  const { db, table } = newTestDB()
  const txn = await db.writeTxn(table)
  table.insert(txn, obj(1, 'foo'))
  table.modify(txn, obj(1), (o) => ({ id: 1, tags: [...o.tags, 'bar'] }))
  const rtxn = txn.commit()
  assert.is(table.get(rtxn, tagsIndex.query('bar'))?.id, 1, 'the merged tag is indexed')
  assert.is(table.get(rtxn, tagsIndex.query('foo'))?.id, 1, 'the kept tag is still indexed')
})

// follows TestDB_Revision
test('revisions: an aborted write leaves the revision, a committed one bumps it, a delete of nothing does not', async () => {
  const { db, table } = newTestDB()
  const start = table.revision(db.readTxn())
  let txn = await db.writeTxn(table)
  table.insert(txn, obj(1))
  assert.is(table.revision(txn), start + 1, 'the new, uncommitted revision')
  txn.abort()
  assert.is(table.revision(db.readTxn()), start, 'aborted: unchanged')

  txn = await db.writeTxn(table)
  table.insert(txn, obj(1))
  const written = table.revision(txn)
  txn.commit()
  assert.is(written, start + 1)
  assert.is(table.revision(db.readTxn()), written)

  txn = await db.writeTxn(table)
  assert.is(table.delete(txn, obj(2)), undefined)
  assert.is(table.revision(txn), written, 'a delete of a missing object takes no revision')
  txn.commit()
  assert.is(table.revision(db.readTxn()), written)

  txn = await db.writeTxn(table)
  assert.ok(table.delete(txn, obj(1)))
  assert.is(table.revision(txn), written + 1)
  txn.commit()
  assert.is(table.revision(db.readTxn()), written + 1)
})

// follows TestDB_GetList
test('get, list and their watches on the primary and a non-unique index', async () => {
  const { db, table } = newTestDB()
  await db.write(table, (t) => {
    for (let i = 1; i <= 10; i++) table.insert(t, obj(i, i % 2 ? 'odd' : 'even'))
    const e = table.getEntry(t, idIndex.query(1))!
    assert.is(e.object.id, 1, 'the uncommitted write is readable')
    assert.ok(e.revision > 0)
  })
  const txn = db.readTxn()
  assert.equal(ids(table.list(txn, idIndex.query(0))), [])
  assert.equal(ids(table.list(txn, idIndex.query(1))), [1])
  const [two, listWatch] = table.listWatch(txn, idIndex.query(2))
  assert.equal(ids(two), [2])
  assert.is(table.get(txn, idIndex.query(0)), undefined)
  assert.ok(table.getEntry(txn, idIndex.query(1))!.revision > 0)
  const [got, getWatch] = table.getWatch(txn, idIndex.query(2))
  assert.is(got?.id, 2)
  assert.not.ok(getWatch.closed)
  assert.not.ok(listWatch.closed)
  await db.write(table, (t) => assert.ok(table.insert(t, obj(2, 'even', 'modified'))))
  assert.ok(getWatch.closed)
  assert.ok(listWatch.closed)

  const fresh = db.readTxn()
  const even = table.getEntry(fresh, tagsIndex.query('even'))!
  assert.is(even.object.id, 2)
  assert.equal([...even.object.tags].sort(), ['even', 'modified'])
  assert.equal(ids(table.list(fresh, tagsIndex.query('odd'))), [1, 3, 5, 7, 9])
})

// follows TestDB_CommitAbort
test('a finished transaction refuses writes; commit and abort after the end change nothing', async () => {
  const { db, table } = newTestDB()
  const txn = await db.writeTxn(table)
  table.insert(txn, obj(123))
  txn.commit()
  const entry = table.getEntry(db.readTxn(), idIndex.query(123))!
  assert.throws(
    () => table.insert(txn, obj(123, 'insert-after-commit')),
    (e: unknown) => e instanceof TxnError,
  )
  assert.throws(() => txn.commit(), /already committed/) // ours: a second commit throws (cilium: a no-op)
  const txn2 = await db.writeTxn(table)
  txn2.abort()
  assert.throws(() => table.insert(txn2, obj(123, 'insert-after-abort')), /already aborted/)
  txn2.abort() // abort after the end: nothing
  const after = table.getEntry(db.readTxn(), idIndex.query(123))!
  assert.is(after.revision, entry.revision)
  assert.equal(after.object.tags, [])
  const stats = db.stats().find((s) => s.name === 'test')!
  assert.is(stats.objects, 1)
  assert.not.ok(stats.locked)
})

// follows TestDB_CompareAndSwap_CompareAndDelete
test('compareAndSwap and compareAndDelete say what happened: written, not found, or written since (with the current entry)', async () => {
  const { db, table } = newTestDB()
  let wtxn = await db.writeTxn(table)
  assert.equal(table.compareAndSwap(wtxn, 1, obj(1)), { ok: false, reason: 'notFound' })
  assert.is(table.count(wtxn), 0, 'nothing inserted')
  wtxn.abort()

  await db.write(table, (t) => table.insert(t, obj(1)))
  const rev1 = table.getEntry(db.readTxn(), idIndex.query(1))!.revision

  wtxn = await db.writeTxn(table)
  const swapped = table.compareAndSwap(wtxn, rev1, obj(1, 'updated'))
  assert.ok(swapped.ok)
  assert.is(swapped.ok && swapped.old.id, 1)
  wtxn.commit()
  assert.equal(table.get(db.readTxn(), idIndex.query(1))!.tags, ['updated'])

  wtxn = await db.writeTxn(table)
  const stale = table.compareAndSwap(wtxn, rev1, obj(1, 'mismatch'))
  assert.is(stale.ok, false)
  assert.is(!stale.ok && stale.reason, 'revisionChanged')
  const current = (stale as { current: Entry<TestObject> }).current
  assert.equal(current.object.tags, ['updated'], 'the refusal carries the object stored now')
  wtxn.commit()
  assert.equal(table.get(db.readTxn(), idIndex.query(1))!.tags, ['updated'])

  wtxn = await db.writeTxn(table)
  const staleDelete = table.compareAndDelete(wtxn, rev1, obj(1))
  assert.is(!staleDelete.ok && staleDelete.reason, 'revisionChanged')
  wtxn.commit()
  const rev2 = table.getEntry(db.readTxn(), idIndex.query(1))!.revision
  assert.ok(table.get(db.readTxn(), idIndex.query(1)))

  wtxn = await db.writeTxn(table)
  const deleted = table.compareAndDelete(wtxn, rev2, obj(1, 'mismatch'))
  assert.is(deleted.ok && deleted.old.id, 1)
  wtxn.commit()
  assert.is(table.get(db.readTxn(), idIndex.query(1)), undefined)

  wtxn = await db.writeTxn(table)
  assert.equal(table.compareAndDelete(wtxn, rev2, obj(1)), { ok: false, reason: 'notFound' })
  wtxn.abort()
})

// follows TestDB_ReadAfterWrite
test('a write transaction reads its own inserts and deletes', async () => {
  const { db, table } = newTestDB()
  const txn = await db.writeTxn(table)
  assert.is(table.all(txn).count(), 0)
  table.insert(txn, obj(1))
  assert.is(table.all(txn).count(), 1)
  assert.ok(table.delete(txn, obj(1)))
  assert.is(table.all(txn).count(), 0)
  table.insert(txn, obj(2))
  assert.is(table.all(txn).count(), 1)
  txn.commit()
  assert.is(table.all(db.readTxn()).count(), 1)
})

// follows TestDB_Initialization
test('initialization: initialized with none registered; pending names; old snapshots keep their state', async () => {
  const { db, table } = newTestDB()
  let [init, initWatch] = table.initialized(db.readTxn())
  assert.ok(init)
  // ours: an initialized table's watch fires only when that changes (cilium's channel is closed)
  assert.not.ok(initWatch.closed)
  let wtxn = await db.writeTxn(table)
  const done1 = table.registerInitializer(wtxn, 'test1')
  const done2 = table.registerInitializer(wtxn, 'test2')
  wtxn.commit()
  let txn = db.readTxn()
  ;[init, initWatch] = table.initialized(txn)
  assert.not.ok(init)
  assert.equal(table.pendingInitializers(txn), ['test1', 'test2'])
  wtxn = await db.writeTxn(table)
  done1(wtxn)
  assert.not.ok(table.initialized(txn)[0])
  wtxn.commit()
  assert.not.ok(table.initialized(txn)[0], 'the old snapshot is unaffected')
  assert.equal(table.pendingInitializers(txn), ['test1', 'test2'])
  txn = db.readTxn()
  assert.equal(table.pendingInitializers(txn), ['test2'])
  wtxn = await db.writeTxn(table)
  done2(wtxn)
  assert.ok(table.initialized(wtxn)[0], 'the write transaction sees its own marking')
  wtxn.commit()
  txn = db.readTxn()
  assert.ok(table.initialized(txn)[0])
  assert.equal(table.pendingInitializers(txn), [])
  assert.ok(initWatch.closed)
})

// follows TestDB_InitializationTransitions
test('initialization transitions: the watch fires when the last pending initializer is done, also after re-registering', async () => {
  const { db, table } = newTestDB()
  const it = await db.write(table, (t) => table.changes(t)) // an unrelated write transaction first
  let done1 = await db.write(table, (t) => table.registerInitializer(t, 'test1'))
  let txn: ReadTxn = db.readTxn()
  let [init, initWatch] = table.initialized(txn)
  assert.not.ok(init)
  assert.not.ok(initWatch.closed)
  await db.write(table, (t) => done1(t))
  assert.ok(initWatch.closed)
  ;[init, initWatch] = table.initialized(txn)
  assert.not.ok(init, 'the old snapshot is not initialized')
  assert.ok(initWatch.closed, 'but its watch is fired: the table is now')
  txn = db.readTxn()
  ;[init, initWatch] = table.initialized(txn)
  assert.ok(init)
  assert.not.ok(initWatch.closed, 'ours: fires when the table stops being initialized (cilium: closed)')
  const initializedWatch = initWatch

  let done2!: (t: never) => void
  let done3!: (t: never) => void
  await db.write(table, (t) => {
    done1 = table.registerInitializer(t, 'test1')
    done2 = table.registerInitializer(t, 'test2')
  })
  assert.ok(initializedWatch.closed, 'ours: registering an initializer again fires the initialized watch')
  ;[init, initWatch] = table.initialized(txn)
  assert.ok(init, 'the old snapshot stays initialized')
  assert.ok(initWatch.closed)
  txn = db.readTxn()
  ;[init, initWatch] = table.initialized(txn)
  assert.not.ok(init)
  assert.not.ok(initWatch.closed)
  await db.write(table, (t) => done2(t as never))
  assert.not.ok(initWatch.closed)
  await db.write(table, (t) => (done3 = table.registerInitializer(t, 'test3')))
  assert.not.ok(initWatch.closed)
  await db.write(table, (t) => done3(t as never))
  assert.not.ok(initWatch.closed)
  await db.write(table, (t) => done1(t))
  assert.ok(initWatch.closed)
  ;[init, initWatch] = table.initialized(db.readTxn())
  assert.ok(init)
  assert.not.ok(initWatch.closed, 'ours: not fired while the table stays initialized')
  it.close()
})

// follows TestDB_EmptyKeys
test('empty keys are ordinary keys, primary and secondary, in an empty table and a non-empty one', async () => {
  const table = new Table<TestObject>({ name: 'test', primary: keyIndex, indexes: [tagsIndex] })
  const db = new DB({ tables: [table] })
  for (let round = 0; round < 2; round++) {
    let w = await db.writeTxn(table)
    table.insert(w, { id: 0, tags: ['test'] })
    assert.equal(table.get(w, keyIndex.query(''))?.tags, ['test'])
    assert.equal(table.get(w, tagsIndex.query('test'))?.key, undefined)
    assert.equal(table.prefix(w, keyIndex.query('')).first()?.tags, ['test'])
    w.abort()

    w = await db.writeTxn(table)
    table.insert(w, { id: 0, tags: [''] })
    assert.equal(table.get(w, keyIndex.query(''))?.tags, [''])
    assert.equal(table.get(w, tagsIndex.query(''))?.tags, [''])
    assert.equal(table.prefix(w, keyIndex.query('')).first()?.tags, [''])
    assert.equal(table.prefix(w, tagsIndex.query('')).first()?.tags, [''])
    w.abort()

    w = await db.writeTxn(table)
    table.insert(w, { id: 0, key: 'test', tags: [''] })
    assert.equal(table.get(w, keyIndex.query('test'))?.tags, [''])
    assert.is(table.get(w, tagsIndex.query(''))?.key, 'test')
    w.abort()

    await db.write(table, (t) => table.insert(t, { id: 0, key: 'non-empty', tags: ['non-empty'] }))
  }
})

// follows TestWriteJSON
test('dump: every table as JSON; an object whose serialization throws is an error string in its place', async () => {
  const { db, table } = newTestDB()
  assert.equal(JSON.parse(JSON.stringify(dump(db))).test.objects, [])
  await db.write(table, (t) => {
    for (let i = 1; i <= 3; i++) table.insert(t, obj(i))
  })
  const out = JSON.parse(JSON.stringify(dump(db)))
  assert.equal(
    out.test.objects.map((e: { object: TestObject }) => e.object.id),
    [1, 2, 3],
  )
  // the HTTP handler's answer for an object that cannot be serialized: see httpguard.test.ts
  // ("unserializable objects on every route"), which follows the rest of this test
})

// follows Test_validateTableName and Test_validateIndexName
test('table and index names are validated', () => {
  for (const name of ['a', 'abc123', 'a1_bc', 'a-b']) new Table<TestObject>({ name, primary: idIndex })
  for (const name of ['', '123', 'l' + 'o'.repeat(63) + 'ng', 'a^*%']) {
    assert.throws(
      () => new Table<TestObject>({ name, primary: idIndex }),
      (e: unknown) => e instanceof DefinitionError && /invalid table name/.test((e as Error).message),
      name,
    )
  }
  assert.throws(() => defineIndex<TestObject, number>({ name: '', key: (o) => o.id }), /invalid index name ""/)
})
test.run()
