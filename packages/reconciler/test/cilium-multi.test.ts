// cilium/statedb's reconciler/multi_test.go, status_test.go, retries_test.go and progress_test.go,
// in our API (each test names the Go test it follows).

import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, Table, type Watch } from '@statewright/statedb'
import {
  ConfigError,
  InMemoryMetrics,
  newStatusSetIndex,
  Reconciler,
  ReconciliationFailedError,
  showStatus,
  statusDone,
  statusError,
  statusFromJSON,
  statusPending,
  StatusSet,
  waitForReconciliation,
  waitForSettled,
  type Operations,
} from '@statewright/reconciler'
import { backoffDelay } from '@statewright/statedb'
import { RetryQueue } from '../src/retries.ts'
import { byId as byKey, deferred, setup, within } from './helpers.ts'

interface MultiStatusObject {
  id: number
  statuses: StatusSet
}
const byId = defineIndex<MultiStatusObject, number>({ name: 'id', key: (o) => o.id, unique: true })

class MultiMockOps implements Operations<MultiStatusObject> {
  numUpdates = 0
  faulty = false
  // asynchronous, as cilium's run on goroutines: both reconcilers act on the same revision
  async update(): Promise<void> {
    this.numUpdates++
    await new Promise((r) => setImmediate(r))
    if (this.faulty) throw new Error('fail')
  }
  delete(): void {}
}

function multiTable(names?: string[]) {
  const statusIndex = newStatusSetIndex<MultiStatusObject>((o) => o.statuses, names ? { names } : {})
  const table = new Table<MultiStatusObject>({ name: 'objects', primary: byId, indexes: [statusIndex] })
  const db = new DB({ tables: [table] })
  return { db, table, statusIndex }
}

function register(t: ReturnType<typeof multiTable>, name: string, ops: Operations<MultiStatusObject>, metrics?: InMemoryMetrics) {
  return new Reconciler<MultiStatusObject>({
    db: t.db,
    table: t.table,
    statusIndex: t.statusIndex,
    name,
    getObjectStatus: (o) => o.statuses.get(name),
    setObjectStatus: (o, s) => ((o.statuses = o.statuses.set(name, s)), o),
    operations: ops,
    retry: { minMs: 3_600_000, maxMs: 3_600_000, jitter: 0 },
    ...(metrics ? { metrics } : {}),
  })
}

/** Waits until cond holds for object 1, on the table's watches. */
async function untilObject(t: ReturnType<typeof multiTable>, cond: (o: MultiStatusObject) => boolean): Promise<MultiStatusObject> {
  const signal = within(10_000)
  for (;;) {
    const [o, w] = t.table.getWatch(t.db.readTxn(), byId.query(1))
    if (o !== undefined && cond(o)) return o
    await w.wait(signal)
  }
}

// follows TestMultipleReconcilers
test('two reconcilers on one object with an empty status set: each updates once; then one fails, the other does not redo', async () => {
  const t = multiTable()
  const ops1 = new MultiMockOps()
  const ops2 = new MultiMockOps()
  const r1 = register(t, 'test1', ops1)
  await r1.start()
  const r2 = register(t, 'test2', ops2)
  await r2.start()
  try {
    // cilium's NewStatusSet(): no name yet, both reconcilers read it as pending
    await t.db.write(t.table, (w) => t.table.insert(w, { id: 1, statuses: StatusSet.empty() }))
    let obj = await untilObject(t, (o) => o.statuses.get('test1').kind === 'done' && o.statuses.get('test2').kind === 'done')
    assert.is(ops1.numUpdates, 1, 'test1 updated once')
    assert.is(ops2.numUpdates, 1, 'test2 updated once (fails on a set whose absent names read with id 0)')
    assert.match(obj.statuses.toString(), /^test1: done .*, test2: done/)

    ops2.faulty = true
    obj = { ...obj, statuses: obj.statuses.pending() }
    assert.match(obj.statuses.toString(), /^test1: pending .*, test2: pending/)
    await t.db.write(t.table, (w) => t.table.insert(w, obj))
    obj = await untilObject(t, (o) => o.statuses.get('test1').kind === 'done' && o.statuses.get('test2').kind === 'error')
    assert.is(ops1.numUpdates, 2)
    assert.is(ops2.numUpdates, 2)
    assert.match(obj.statuses.toString(), /test2: error .*: fail/)
  } finally {
    await Promise.all([r1.stop(), r2.stop()])
  }
})

// follows TestMultipleReconcilersRetryAfterStatusConflict
test('two reconcilers racing on one revision: the one that commits second keeps its failure, counts it once and does not rerun', async () => {
  const t = multiTable()
  const metrics = new InMemoryMetrics()
  const bothStarted = deferred()
  let arrived = 0
  const barrier = async () => {
    if (++arrived >= 2) bothStarted.resolve()
    await bothStarted.promise
  }
  let goodUpdates = 0
  let badUpdates = 0
  const good: Operations<MultiStatusObject> = {
    update: async () => {
      goodUpdates++
      await barrier()
    },
    delete: () => {},
  }
  const bad: Operations<MultiStatusObject> = {
    update: async () => {
      badUpdates++
      await barrier()
      // commit second: after good's done status is written
      await untilObject(t, (o) => o.statuses.get('good').kind === 'done')
      throw new Error('fail')
    },
    delete: () => {},
  }
  const rGood = register(t, 'good', good, metrics)
  await rGood.start()
  const rBad = register(t, 'bad', bad, metrics)
  await rBad.start()
  try {
    await t.db.write(t.table, (w) => t.table.insert(w, { id: 1, statuses: StatusSet.empty() }))
    await untilObject(t, (o) => o.statuses.get('good').kind === 'done' && o.statuses.get('bad').kind === 'error')
    await rBad.waitForRevision(t.table.revision(t.db.readTxn()), { signal: within(5000) })
    assert.is(metrics.get('bad').operations['update/error'], 1, 'the error is counted once')
    assert.is(badUpdates, 1, 'the failed operation is not run again (its retry is an hour away)')
    assert.is(goodUpdates, 1)
    assert.is(metrics.get('bad').currentErrors, 1)
    assert.is(rBad.health().level, 'degraded')
  } finally {
    await Promise.all([rGood.stop(), rBad.stop()])
  }
})

// follows TestMultipleReconcilersPerModuleMetrics
test('two reconcilers on one table report metrics and health under their own names', async () => {
  const t = multiTable(['left', 'right'])
  const metrics = new InMemoryMetrics()
  const left = register(t, 'left', new MultiMockOps(), metrics)
  await left.start()
  const right = register(t, 'right', new MultiMockOps(), metrics)
  await right.start()
  try {
    await t.db.write(t.table, (w) => t.table.insert(w, { id: 1, statuses: StatusSet.empty() }))
    await untilObject(t, (o) => o.statuses.get('left').kind === 'done' && o.statuses.get('right').kind === 'done')
    assert.equal(metrics.names().sort(), ['left', 'right'])
    assert.ok(metrics.get('left').rounds > 0)
    assert.ok(metrics.get('right').rounds > 0)
    assert.is(metrics.get('left').currentErrors, 0)
    assert.is(metrics.get('right').currentErrors, 0)
    assert.is(left.health().level, 'ok')
    assert.is(right.health().level, 'ok')
    assert.throws(
      () => register(t, 'other', new MultiMockOps()),
      (e: unknown) => e instanceof ConfigError && /not "other"/.test(String(e)),
    )
  } finally {
    await Promise.all([left.stop(), right.stop()])
  }
})

// ours (issue 25): waiting for one reconciler of a status set sees objects whose set lacks its name
for (const declared of [true, false]) {
  test(`waitForReconciliation({ name }) waits for objects whose status set lacks the name (names ${declared ? 'declared' : 'not declared'})`, async () => {
    const t = multiTable(declared ? ['a', 'b'] : undefined)
    const a = register(t, 'a', new MultiMockOps())
    await a.start()
    await t.db.write(t.table, (w) => t.table.insert(w, { id: 1, statuses: StatusSet.empty() }))
    await waitForReconciliation(t.db, t.table, t.statusIndex, { name: 'a', signal: within(5000) })
    let settled = false
    const waitB = waitForReconciliation(t.db, t.table, t.statusIndex, { name: 'b', signal: within(10_000) }).then(() => (settled = true))
    const pendingB = await waitForSettled(t.db, t.table, t.statusIndex, { name: 'a', signal: within(5000) })
    assert.equal(pendingB, [])
    await new Promise((r) => setImmediate(r))
    assert.not.ok(settled, 'b has not run: its wait must not resolve')
    const b = register(t, 'b', new MultiMockOps())
    await b.start()
    await waitB
    assert.ok(settled)
    await Promise.all([a.stop(), b.stop()])
  })
}

// follows TestStatusString, TestStatusJSON and TestStatusSet
test('statuses and status sets: text, JSON round trips, absent names pending with the set id', () => {
  assert.match(showStatus(statusPending()), /^pending \(\d+ ms ago\)$/)
  assert.match(showStatus(statusDone()), /^done \(\d+ ms ago\)$/)
  assert.match(showStatus(statusError(new Error("hey I'm an error"))), /^error \(\d+ ms ago\): hey I'm an error$/)
  assert.match(showStatus(statusError(null)), /: null$/)

  for (const s of [
    { kind: 'done', updatedAt: 1000, id: 1 },
    { kind: 'pending', updatedAt: 2000, id: 2 },
    { kind: 'error', updatedAt: 3000, error: 'some-error', id: 3 },
    { kind: 'refreshing', updatedAt: 4000, id: 4 },
  ] as const) {
    const back = statusFromJSON(JSON.parse(JSON.stringify(s)))
    assert.equal({ ...back, id: s.id }, s)
    assert.ok(back.id !== s.id, 'a status read back gets a fresh id')
  }
  assert.throws(() => statusFromJSON({ kind: 'done' }), /updatedAt must be epoch ms/)
  assert.throws(() => statusFromJSON({ kind: 'nope', updatedAt: 1 }), /kind must be one of/)

  const roundTrip = (s: StatusSet) => StatusSet.fromJSON(JSON.parse(JSON.stringify(s)))
  const strip = (x: string) => x.replace(/\(\d+ ms ago\)/g, '(? ago)')
  let set = StatusSet.empty()
  assert.is(set.toString(), 'pending')
  assert.is(roundTrip(set).toString(), 'pending')
  const foo = set.get('foo')
  assert.is(foo.kind, 'pending')
  assert.ok(foo.id > 0)
  set = set.set('foo', statusDone()).set('bar', statusError(new Error('fail')))
  assert.is(strip(roundTrip(set).toString()), strip(set.toString()))
  assert.is(set.get('foo').kind, 'done')
  assert.is(set.get('bar').kind, 'error')
  assert.match(set.toString(), /^bar: error .*: fail, foo: done/)
  set = set.pending()
  assert.ok(set.get('foo').id > foo.id)
  assert.is(set.get('foo').kind, 'pending')
  assert.is(set.get('bar').kind, 'pending')
  assert.is(set.get('baz').kind, 'pending')
  assert.is(set.get('baz').id, set.get('foo').id)
  assert.throws(() => StatusSet.fromJSON([]), /want an object of name -> status/)
  assert.throws(() => StatusSet.fromJSON({ a: { kind: 'done' } }), /"a": updatedAt/)
})

// follows TestRetries and TestExponentialBackoff
test('the retry queue: due in backoff order, attempts carry over until cleared, a cleared key leaves the queue', () => {
  const q = new RetryQueue<number>(1, 100, 0)
  const failure = (n: number) => ({ deleted: false, object: n, statusId: n, revision: n, error: 'some error' })
  q.fail(1, failure(1), 0, 0)
  q.fail(2, failure(2), 0, 1)
  q.fail(3, failure(3), 0, 2)
  assert.is(q.size, 3)
  assert.is([...q.values()][0]!.error, 'some error')
  const again = q.fail(3, failure(3), q.take(3), 3) // a second failure: more attempts, later
  assert.is(again.attempts, 2)
  assert.equal(
    q.popDue(1_000, 10).map((i) => i.object),
    [1, 2, 3],
    'in the order they fall due',
  )
  assert.is(q.size, 3, 'popped items stay queued (in flight) until cleared or failed again (Pop, then Clear)')
  assert.equal(q.popDue(1_000, 10), [], 'but they are not due again')
  for (const n of [1, 2]) q.take(n)
  assert.is(q.size, 1)
  // attempts carry over when a key fails again without being cleared
  const a3 = q.fail(3, failure(3), 2, 10)
  const a1 = q.fail(1, failure(1), 0, 10)
  assert.is(a3.attempts, 3)
  assert.ok(a1.dueAt < a3.dueAt, 'obj1 (first failure) is due before obj3 (third)')
  assert.equal(
    q.popDue(10_000, 10).map((i) => [i.object, i.attempts]),
    [
      [1, 1],
      [3, 3],
    ],
  )
  for (const n of [1, 3]) q.take(n)
  // a key cleared without popping leaves the queue in order
  for (const n of [1, 2, 3]) q.fail(n, failure(n), 0, 20 + n)
  q.take(1)
  assert.equal(
    q.popDue(1_000, 1).map((i) => i.object),
    [2],
  )
  assert.equal(
    q.popDue(1_000, 10).map((i) => i.object),
    [3],
  )
  assert.is(q.size, 2)
  for (const n of [2, 3]) q.take(n)
  assert.is(q.size, 0)

  const retry = { minMs: 1, maxMs: 1000, jitter: 0 }
  for (let i = 0; i < 1000; i++) {
    const d = backoffDelay(i, retry)
    assert.ok(d >= retry.minMs && d <= retry.maxMs)
  }
  assert.is(backoffDelay(2, retry), 2 * backoffDelay(1, retry))
})

// follows TestWaitUntilReconciled
test('waitForRevision: resolves once the write is acted on, a failure included; the failure is visible, and resolves again after the retry', async () => {
  const s = setup({ retry: { minMs: 10, maxMs: 10, jitter: 0 } })
  const unblock = deferred()
  const started = deferred()
  let fail = false
  s.target.hold = (op) => {
    if (op !== 'update') return undefined
    started.resolve()
    return fail ? undefined : unblock.promise
  }
  s.target.failUpdate = () => (fail ? new Error('fail') : undefined)
  s.rec.start()
  try {
    await s.rec.waitForRevision(0, { signal: within(2000) }) // revision 0: at once
    const rev = await s.insert('a', 1)
    let done = false
    const waiting = s.rec.waitForRevision(rev, { signal: within(10_000) }).then(() => (done = true))
    await started.promise
    await new Promise((r) => setImmediate(r))
    assert.not.ok(done, 'returned before the update finished')
    unblock.resolve()
    await waiting

    fail = true
    const rev2 = await s.insert('b', 1)
    await s.rec.waitForRevision(rev2, { signal: within(10_000) })
    assert.is(s.rec.failureOf({ id: 'b' } as never)?.error, 'fail', 'acted on: failed, and queued for a retry')
    fail = false
    // reconciled after the retry: the table-level wait resolves when nothing is pending or in error
    await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(10_000) })
    assert.is(s.rec.failureOf({ id: 'b' } as never), undefined)
  } finally {
    await s.rec.stop()
  }
})

// ours (issue 25): the blocking form waits on errors or rejects; the old form is waitForSettled
test('waitForReconciliation waits until objects in error succeed (default) or rejects naming them; waitForSettled resolves with them', async () => {
  const s = setup({ retry: { minMs: 20, maxMs: 20, jitter: 0 } })
  let failing = true
  s.target.failUpdate = (o) => (failing && o.id === 'bad' ? new Error('boom') : undefined)
  s.rec.start()
  try {
    await s.insert('good', 1)
    await s.insert('bad', 1)
    const settled = await waitForSettled(s.db, s.table, s.statusIndex, { signal: within(5000) })
    assert.equal(
      settled.map((o) => o.id),
      ['bad'],
    )
    await waitForReconciliation(s.db, s.table, s.statusIndex, { onError: 'reject', signal: within(5000) }).then(
      () => assert.unreachable('an object is in error'),
      (err) => {
        assert.instance(err, ReconciliationFailedError)
        assert.match((err as Error).message, /table "objs": 1 object in error: bad: boom/)
        assert.equal(
          (err as ReconciliationFailedError).failed.map((o) => (o as { id: string }).id),
          ['bad'],
        )
      },
    )
    let resolved = false
    const blocking = waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(10_000) }).then(() => (resolved = true))
    await new Promise((r) => setTimeout(r, 60)) // a few retries fail meanwhile
    assert.not.ok(resolved, 'does not resolve while an object is in error (the old form resolved at once with the list)')
    failing = false
    await blocking
    assert.ok(resolved)
  } finally {
    await s.rec.stop()
  }
})

// ours (issue 25): a full reconciliation keeps what Update records on the clone of a done object
test('full reconciliation writes back a done object whose clone Update changed, and leaves unchanged ones alone', async () => {
  let stamp = 0
  const s = setup()
  const ops = s.rec.config.operations
  const rec = new Reconciler({
    ...s.rec.config,
    operations: {
      update: async (o, ctx) => {
        const r = await ops.update(o, ctx)
        if (ctx.full && o.id === 'stamped') (o as { realizedAt?: number }).realizedAt = 100 + ++stamp
        return r
      },
      delete: (o, ctx) => ops.delete(o, ctx),
    },
  })
  await rec.start()
  try {
    await s.insert('stamped', 1)
    await s.insert('plain', 1)
    await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(5000) })
    const before = (id: string) => s.table.getEntry(s.db.readTxn(), byKey.query(id))!
    const plainRev = before('plain').revision
    const report = await rec.triggerFullReconciliation()
    assert.is(report.updated, 2)
    const stamped = before('stamped')
    assert.is(stamped.object.realizedAt, 100 + stamp, 'the stamp Update set on the clone is stored')
    assert.is(stamped.object.status.kind, 'done')
    assert.is(before('plain').revision, plainRev, 'an unchanged done object is not written')
    let watch: Watch
    ;[, watch] = s.table.allWatch(s.db.readTxn())
    await rec.triggerFullReconciliation()
    assert.ok(watch.closed, 'the stamped object is written again (its stamp moved)')
  } finally {
    await rec.stop()
  }
})

test.run()
