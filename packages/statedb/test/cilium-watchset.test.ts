// cilium/statedb's watchset_test.go, in our API (each test names the Go test it follows). A Watch
// stands for a Go watch channel; an AbortSignal for a context.

import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, Table, Watch, WatchSet } from '../src/index.ts'

/** A signal that aborts after ms (a timer that keeps the process alive, unlike AbortSignal.timeout). */
function timeout(ms: number): AbortSignal {
  const c = new AbortController()
  setTimeout(() => c.abort(new DOMException('timed out', 'TimeoutError')), ms)
  return c.signal
}

function fire(w: Watch): Watch {
  ;(w as unknown as { close(): void }).close()
  return w
}

// follows TestWatchSet
test('WatchSet.wait: an aborted signal rejects; a settle time collects the watches that fire close together', async () => {
  const ws = new WatchSet()
  const aborted = AbortSignal.abort(new Error('cancelled'))
  await ws.wait(aborted, 1000).then(
    () => assert.unreachable('an aborted signal rejects'),
    (err) => assert.match(String(err), /cancelled/),
  )

  // one fired watch, with a settle time: waits at least that long
  const w1 = fire(new Watch())
  ws.add(w1)
  let t0 = performance.now()
  assert.equal(await ws.wait(undefined, 50), [w1])
  assert.ok(performance.now() - t0 >= 45, 'waited to settle')
  assert.is(ws.size, 0, 'fired watches leave the set')

  // a few open watches and a signal that times out: rejects, nothing removed
  const [a, b, c] = [new Watch(), new Watch(), new Watch()]
  ws.add(a, b, c)
  t0 = performance.now()
  await ws.wait(timeout(10), 1).then(
    () => assert.unreachable('no watch fired'),
    (err) => assert.is((err as Error).name, 'TimeoutError'),
  )
  assert.ok(performance.now() - t0 >= 9)
  assert.is(ws.size, 3)

  fire(a)
  assert.equal(await ws.wait(undefined, 10), [a])
  const fresh = new WatchSet().add(fire(b))
  assert.equal(await fresh.wait(undefined, 0), [b], 'no settle time')

  // many watches: two fire, the settle time collects both
  for (const n of [2, 16, 31, 1024]) {
    const watches = Array.from({ length: n }, () => new Watch())
    const set = new WatchSet().add(...watches)
    const i = Math.floor(Math.random() * n)
    let j = Math.floor(Math.random() * n)
    while (j === i) j = Math.floor(Math.random() * n)
    setTimeout(() => fire(watches[i]!), 0)
    setTimeout(() => fire(watches[j]!), 5)
    const got = await set.wait(undefined, 200)
    assert.equal(new Set(got), new Set([watches[i], watches[j]]), `n=${n}`)
  }
})

// follows TestWatchSetInQueries
test('WatchSet with query watches; merge keeps the subsets; has and hasAny tell which subset fired', async () => {
  interface O {
    id: number
    tag?: string
  }
  const byId = defineIndex<O, number>({ name: 'id', key: (o) => o.id, unique: true })
  const table = new Table<O>({ name: 'test', primary: byId })
  const db = new DB({ tables: [table] })
  const ws = new WatchSet()
  const [, watchAll] = table.allWatch(db.readTxn())
  ws.add(watchAll)
  await ws.wait(timeout(5), 1000).then(
    () => assert.unreachable('nothing written yet'),
    (err) => assert.is((err as Error).name, 'TimeoutError'),
  )
  const txn = await db.write(table, (t) => {
    for (const id of [1, 2, 3]) table.insert(t, { id })
    return t
  })
  void txn
  assert.equal(await ws.wait(undefined, 20), [watchAll])
  ws.clear()

  const snap = db.readTxn()
  const [, w1] = table.getWatch(snap, byId.query(1))
  const [, w2] = table.getWatch(snap, byId.query(2))
  const [, w3] = table.getWatch(snap, byId.query(3))
  await db.write(table, (t) => table.insert(t, { id: 1, tag: 'foo' }))
  const subset = new WatchSet().add(w3, w2, w1)
  ws.merge(subset)
  assert.is(subset.size, 3, 'merge leaves the other set as it was')
  const closed = await ws.wait(undefined, 20)
  assert.equal(closed, [w1])
  assert.ok(subset.has(closed[0]!))
  assert.ok(subset.hasAny(closed))
  subset.clear()
  assert.not.ok(subset.has(closed[0]!))
})

// follows TestWatchSetCancellationDuringSettle
test('WatchSet.wait: an abort during the settle time returns the fired watches and removes only them', async () => {
  const ws = new WatchSet()
  const w1 = fire(new Watch())
  ws.add(w1)
  assert.equal(await ws.wait(timeout(20), 1000), [w1])
  assert.not.ok(ws.has(w1))
  const w2 = new Watch()
  ws.add(w1, w2)
  assert.equal(await ws.wait(timeout(20), 1000), [w1])
  assert.not.ok(ws.has(w1), 'the fired watch is removed')
  assert.ok(ws.has(w2), 'the open one stays')
})

test.run()
