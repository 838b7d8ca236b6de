// Regression tests from a review of the reconciler's write-back and retries.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { newStatusSetIndex, Reconciler, StatusSet, type Status } from '@statewright/reconciler'
import { deferred, setup, within } from './helpers.ts'

interface Route {
  readonly dest: string
  readonly via: number
  readonly statuses: StatusSet
}

test('a name absent from a status set (id 0) does not let a stale result onto a newer version', async () => {
  const byDest = defineIndex<Route, string>({ name: 'dest', key: (r) => r.dest, unique: true })
  const statusIndex = newStatusSetIndex<Route>((r) => r.statuses)
  const routes = new Table<Route>({ name: 'routes', primary: byDest, indexes: [statusIndex] })
  const db = new DB({ tables: [routes] })
  const target = new Map<string, number>()
  const first = deferred()
  let calls = 0
  // 'bgp' was added after the routes were written: their status sets name only 'kernel'.
  const rec = new Reconciler<Route>({
    name: 'bgp',
    db,
    table: routes,
    statusIndex,
    getObjectStatus: (r) => r.statuses.get('bgp'),
    setObjectStatus: (r, s: Status) => ({ ...r, statuses: r.statuses.set('bgp', s) }),
    operations: {
      update: async (r) => {
        if (calls++ === 0) await first.promise
        target.set(r.dest, r.via)
      },
      delete: (r) => void target.delete(r.dest),
    },
  })
  const w0 = await db.writeTxn(routes)
  routes.insert(w0, { dest: 'r', via: 1, statuses: StatusSet.pending(['kernel']) })
  w0.commit()
  rec.start()
  try {
    while (calls === 0) await new Promise((r) => setTimeout(r, 1))
    // A writer changes the route while bgp's update of via=1 is in flight (marking pending again
    // every name the set holds: 'bgp' stays absent).
    const w1 = await db.writeTxn(routes)
    const cur = routes.get(w1, byDest.query('r'))!
    routes.insert(w1, { ...cur, via: 2, statuses: cur.statuses.pending() })
    const rev = routes.revision(w1.commit())
    first.resolve()
    await rec.waitForRevision(rev, { signal: within(3000) })
    await rec.waitForRevision(routes.revision(db.readTxn()), { signal: within(3000) })
    assert.is(target.get('r'), 2, 'the newer version reached the target')
  } finally {
    await rec.stop()
  }
})

test('start() while a stop() is under way is refused; stop resolves and a later start works', async () => {
  const s = setup()
  s.rec.start()
  await s.rec.waitForRevision(await s.insert('a', 1), { signal: within(3000) })
  const stopping = s.rec.stop()
  assert.is(s.rec.stop(), stopping, 'a second stop waits for the same')
  await s.rec.start().then(
    () => assert.unreachable('start() during a stop resolved'),
    (e: Error) => assert.match(e.message, /is stopping: await stop\(\) before start\(\)/),
  )
  const outcome = await Promise.race([stopping.then(() => 'stopped'), new Promise((r) => setTimeout(r, 1000, 'hung'))])
  assert.is(outcome, 'stopped')
  assert.is(s.db.stats()[0]!.changeIterators, 0, 'the loop closed its change iterator')
  s.rec.start()
  try {
    await s.rec.waitForRevision(await s.insert('b', 2), { signal: within(3000) })
    assert.is(s.target.state.get('b'), 2)
  } finally {
    await s.rec.stop()
  }
})

test.run()
