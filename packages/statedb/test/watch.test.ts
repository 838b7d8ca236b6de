// Watches fire when a query's result may have changed, and stay quiet otherwise.

import fc from 'fast-check'
import { getEventListeners } from 'node:events'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { byRevision, DB, defineIndex, Table, Watch, waitAny, WatchSet, type ReadTxn } from '../src/index.ts'

interface Obj {
  id: string
  group: string
  v: number
}
const byId = defineIndex<Obj, string>({ name: 'id', key: (o) => o.id, unique: true })
const byGroup = defineIndex<Obj, string>({ name: 'group', key: (o) => o.group })

function setup() {
  const t = new Table<Obj>({ name: 'objs', primary: byId, indexes: [byGroup] })
  const other = new Table<Obj>({ name: 'other', primary: byId })
  const db = new DB({ tables: [t, other] })
  return { db, t, other }
}

const ids = ['a', 'ab', 'b', 'ba', 'c']
const groups = ['g', 'gh', 'h']

test('watches fire exactly when their query result changed (random writes, both ways)', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.array(
          fc.record({
            del: fc.boolean(),
            id: fc.constantFrom(...ids),
            group: fc.constantFrom(...groups),
            v: fc.integer({ min: 0, max: 2 }),
          }),
          {
            minLength: 1,
            maxLength: 4,
          },
        ),
        { minLength: 1, maxLength: 10 },
      ),
      (txns) => {
        const { db, t } = setup()
        for (const writes of txns) {
          const before = db.readTxn()
          const queries: Array<[string, () => [unknown, Watch], (r: ReadTxn) => unknown]> = []
          for (const id of ids) {
            queries.push([`get ${id}`, () => t.getWatch(before, byId.query(id)), (r) => t.get(r, byId.query(id))])
            queries.push([`prefix ${id}`, () => t.prefixWatch(before, byId.query(id)), (r) => t.prefix(r, byId.query(id)).toArray()])
          }
          for (const g of groups) {
            queries.push([`list ${g}`, () => t.listWatch(before, byGroup.query(g)), (r) => t.list(r, byGroup.query(g)).toArray()])
            queries.push([
              `prefix group ${g}`,
              () => t.prefixWatch(before, byGroup.query(g)),
              (r) => t.prefix(r, byGroup.query(g)).toArray(),
            ])
          }
          const watched = queries.map(([name, q, read]) => ({ name, watch: q()[1], read }))
          const txn = db.tryWriteTxn(t)!
          for (const w of writes) {
            if (w.del) t.delete(txn, { id: w.id, group: '', v: 0 })
            else t.insert(txn, { id: w.id, group: w.group, v: w.v })
          }
          const after = txn.commit()
          for (const { name, watch, read } of watched) {
            const a = read(before)
            const b = read(after)
            const changed = JSON.stringify(a) !== JSON.stringify(b)
            // Must fire when the result changed; must stay quiet when nothing the query covers was written.
            if (changed) assert.ok(watch.closed, `${name}: changed but did not fire`)
            const touched = writes.some((w) => {
              if (name.startsWith('get ')) return w.id === name.slice(4)
              if (name.startsWith('prefix group ')) {
                const g = name.slice(13)
                const old = t.get(before, byId.query(w.id))
                return (!w.del && w.group.startsWith(g)) || (old !== undefined && old.group.startsWith(g))
              }
              if (name.startsWith('prefix ')) return w.id.startsWith(name.slice(7))
              const g = name.slice(5)
              const old = t.get(before, byId.query(w.id))
              return (!w.del && w.group === g) || old?.group === g
            })
            if (!touched) assert.not.ok(watch.closed, `${name}: fired for unrelated writes`)
          }
        }
      },
    ),
    { numRuns: 120 },
  )
})

test('a get watch ignores other keys; the table watch and lowerBound watch see everything', async () => {
  const { db, t, other } = setup()
  const r = db.readTxn()
  const [, wa] = t.getWatch(r, byId.query('a'))
  const [, wall] = t.allWatch(r)
  const [, wlb] = t.lowerBoundWatch(r, byRevision(0))
  const [, wother] = other.allWatch(r)
  await db.write(t, (txn) => t.insert(txn, { id: 'b', group: 'g', v: 1 }))
  assert.not.ok(wa.closed)
  assert.ok(wall.closed)
  assert.ok(wlb.closed)
  assert.not.ok(wother.closed, 'a write to one table does not wake watchers of another')
  await db.write(t, (txn) => t.insert(txn, { id: 'a', group: 'g', v: 1 }))
  assert.ok(wa.closed)
})

test('a watch from a stale snapshot fires at once if the result already changed, and waits if not', async () => {
  const { db, t } = setup()
  const old = db.readTxn()
  await db.write(t, (txn) => t.insert(txn, { id: 'a', group: 'g', v: 1 }))
  assert.ok(t.getWatch(old, byId.query('a'))[1].closed, 'the change happened after the snapshot')
  const [, wb] = t.getWatch(old, byId.query('b'))
  assert.not.ok(wb.closed, 'key b did not change since the snapshot')
  await db.write(t, (txn) => t.insert(txn, { id: 'b', group: 'g', v: 1 }))
  assert.ok(wb.closed)
})

test('aborted transactions fire nothing', async () => {
  const { db, t } = setup()
  const [, w] = t.getWatch(db.readTxn(), byId.query('a'))
  const txn = await db.writeTxn(t)
  t.insert(txn, { id: 'a', group: 'g', v: 1 })
  txn.abort()
  assert.not.ok(w.closed)
})

test('a watch registered while a write transaction is open still fires at its commit', async () => {
  const { db, t } = setup()
  const txn = await db.writeTxn(t)
  t.insert(txn, { id: 'a', group: 'g', v: 1 })
  const [, w] = t.getWatch(db.readTxn(), byId.query('a'))
  txn.commit()
  assert.ok(w.closed)
})

test('wait() honours an AbortSignal; waitAny and WatchSet wake on the first watch', async () => {
  const { db, t } = setup()
  const [, w1] = t.getWatch(db.readTxn(), byId.query('a'))
  const [, w2] = t.getWatch(db.readTxn(), byId.query('b'))
  const ac = new AbortController()
  const waiting = w1.wait(ac.signal)
  ac.abort(new Error('cancelled'))
  try {
    await waiting
    assert.unreachable()
  } catch (err) {
    assert.is((err as Error).message, 'cancelled')
  }
  const any = waitAny([w1, w2])
  await db.write(t, (txn) => t.insert(txn, { id: 'b', group: 'g', v: 1 }))
  assert.equal(await any, [w2])
  const set = new WatchSet().add(w1)
  const setWait = set.wait()
  await db.write(t, (txn) => t.insert(txn, { id: 'a', group: 'g', v: 1 }))
  assert.equal(await setWait, [w1])
  assert.is(set.size, 0)
  await w1.wait() // resolves at once once fired
})

test('initialization: not initialized until every initializer is done, with a watch', async () => {
  const { db, t } = setup()
  const txn = await db.writeTxn(t)
  const doneA = t.registerInitializer(txn, 'reflector-a')
  const doneB = t.registerInitializer(txn, 'reflector-b')
  txn.commit()
  const [ok, w] = t.initialized(db.readTxn())
  assert.not.ok(ok)
  assert.equal(t.pendingInitializers(db.readTxn()), ['reflector-a', 'reflector-b'])
  await db.write(t, (x) => doneA(x))
  assert.not.ok(w.closed)
  const snapshotBefore = db.readTxn()
  await db.write(t, (x) => doneB(x))
  assert.ok(w.closed)
  assert.ok(t.initialized(db.readTxn())[0])
  assert.not.ok(t.initialized(snapshotBefore)[0], 'initialization is part of the snapshot')
  assert.ok(t.initialized(snapshotBefore)[1].closed, 'a stale snapshot gets a fired watch')
})

// issue 36 bug 6: no wait leaves a listener on the caller's signal once it returned
test('1000 waits on one signal (Watch.wait, waitAny, WatchSet.wait) leave no abort listener on it', async () => {
  const { db, t } = setup()
  const ac = new AbortController()
  for (let i = 0; i < 1000; i++) {
    const txn = db.readTxn()
    const [, a] = t.listWatch(txn, byGroup.query('g'))
    const [, b] = t.listWatch(txn, byGroup.query('h'))
    const [, any] = t.allWatch(txn)
    const set = new WatchSet().add(a, b)
    const waits = [any.wait(ac.signal), waitAny([a, b, any], ac.signal), set.wait(ac.signal, i % 100 === 0 ? 1 : 0)]
    await db.write(t, (x) => t.insert(x, { id: `k${i % 7}`, group: 'g', v: i }))
    await Promise.all(waits)
  }
  assert.is(getEventListeners(ac.signal, 'abort').length, 0)
})

// issue 36 bug 7: a loop waiting on the initialized watch beside other watches never yielded
test('a loop that waits on initialized() beside other watches sleeps once the table is initialized', async () => {
  const { db, t } = setup()
  let rounds = 0
  let stop = false
  const loop = (async () => {
    while (!stop) {
      const txn = db.readTxn()
      const [, init] = t.initialized(txn)
      const [, any] = t.allWatch(txn)
      await waitAny([init, any], AbortSignal.timeout(10_000))
      if (++rounds > 1000) break // a spinning loop never yields: end it so the test can fail
    }
  })()
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r))
  assert.is(rounds, 0, 'the loop spun on an initialized table')
  await db.write(t, (x) => t.insert(x, { id: 'a', group: 'g', v: 1 }))
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r))
  assert.is(rounds, 1, 'one write: one round')
  // registering an initializer again changes the answer: the watch fires
  const done = await db.write(t, (x) => t.registerInitializer(x, 'again'))
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r))
  assert.is(rounds, 2)
  assert.not.ok(t.initialized(db.readTxn())[0])
  stop = true
  await db.write(t, (x) => done(x))
  await loop
  assert.is(rounds, 3)
})

test('a throwing watch listener does not keep other watches from firing; its error surfaces on its own', async () => {
  const { db, t } = setup()
  const [, wa] = t.getWatch(db.readTxn(), byId.query('a'))
  const [, wall] = t.allWatch(db.readTxn())
  wa.onClose(() => {
    throw new Error('listener bug')
  })
  const surfaced = new Promise<Error>((resolve) => process.once('uncaughtException', resolve))
  await db.write(t, (txn) => t.insert(txn, { id: 'a', group: 'g', v: 1 }))
  assert.ok(wa.closed)
  assert.ok(wall.closed, 'the commit fired every watch')
  assert.is((await surfaced).message, 'listener bug')
})

test.run()
