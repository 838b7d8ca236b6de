import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Registry } from 'prom-client'
import { Table } from '@statewright/statedb'
import {
  ConfigError,
  InMemoryMetrics,
  PrometheusMetrics,
  Reconciler,
  StoppedError,
  statusPending,
  waitForSettled,
} from '@statewright/reconciler'
import { type Health } from '@statewright/statedb'
import { collectingLogger } from '../../../test/lib/logger.ts'
import { byId, deferred, makeTable, setup, until, within, type Obj } from './helpers.ts'

test('health: ok with the object count, degraded with error count and first messages, ok again', async () => {
  const s = setup({ retry: { minMs: 10, maxMs: 10 } })
  const seen: Health[] = []
  s.rec.onHealth((h) => seen.push(h))
  let failing = true
  s.target.failUpdate = (o) => (failing && o.id !== 'ok' ? new Error(`cannot write ${o.id}`) : undefined)
  s.rec.start()
  try {
    let rev = await s.insert('ok', 0)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.is(s.rec.health().level, 'ok')
    assert.is(s.rec.health().message, '1 objects')
    for (const id of ['a', 'b', 'c', 'd']) rev = await s.insert(id, 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.is(s.rec.health().level, 'degraded')
    assert.is(s.rec.health().errors, 4)
    assert.match(s.rec.health().message, /^4 errors: a: cannot write a; b: cannot write b; c: cannot write c$/)
    failing = false
    await until(() => s.rec.health().level === 'ok', 2000, 'healthy again')
    assert.is(s.rec.health().message, '5 objects')
    const levels = seen.map((h) => h.level).filter((l, i, a) => i === 0 || a[i - 1] !== l)
    assert.equal(levels, ['ok', 'degraded', 'ok'])
  } finally {
    await s.rec.stop()
  }
  assert.is(s.rec.health().level, 'stopped')
})

test('readiness: not before the table is initialized; never lost to object errors (degraded, with keys); lost on stop', async () => {
  const s = setup({ retry: { minMs: 10, maxMs: 10 } })
  const wtxn = await s.db.writeTxn(s.table)
  const markInitialized = s.table.registerInitializer(wtxn, 'loader')
  wtxn.commit()
  const seen: Health[] = []
  s.rec.onHealth((h) => seen.push(h))
  s.target.failUpdate = (o) => (o.id.startsWith('bad') ? new Error(`cannot write ${o.id}`) : undefined)
  s.rec.start()
  try {
    let rev = await s.insert('good', 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.is(s.rec.health().ready, false, 'not ready while the table is not initialized')
    assert.match(s.rec.health().notReady ?? '', 'not initialized')
    const init = await s.db.writeTxn(s.table)
    markInitialized(init)
    init.commit()
    await until(() => s.rec.health().ready, 2000, 'ready after initialization')
    for (const id of ['bad1', 'bad2', 'bad3', 'bad4']) rev = await s.insert(id, 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    await until(() => s.rec.health().errors === 4, 2000, 'four failing')
    const h = () => s.rec.health()
    assert.is(h().level, 'degraded')
    assert.is(h().ready, true, 'object errors do not make it unready')
    assert.equal(
      h().failing.map((f) => [f.key, f.error]),
      [
        ['bad1', 'cannot write bad1'],
        ['bad2', 'cannot write bad2'],
        ['bad3', 'cannot write bad3'],
      ],
    )
    // retries keep failing for a while: readiness never flaps
    const before = seen.length
    await until(() => s.target.count('update', 'bad1', false) >= 3, 2000, 'retries')
    assert.ok(
      seen.slice(before).every((x) => x.ready),
      'ready through every retry',
    )
  } finally {
    await s.rec.stop()
  }
  assert.is(s.rec.health().ready, false)
  assert.is(s.rec.health().notReady, 'stopped')
  const readiness = seen.map((h) => h.ready).filter((r, i, a) => i === 0 || a[i - 1] !== r)
  assert.equal(readiness, [false, true, false], 'unready -> ready -> stopped, no flapping')
})

test('waitForSettled resolves when nothing is pending and reports objects in error', async () => {
  const s = setup({ retry: { minMs: 60_000, maxMs: 60_000 } })
  s.target.failUpdate = (o) => (o.id === 'bad' ? new Error('rejected') : undefined)
  await s.insert('good', 1)
  await s.insert('bad', 1)
  const waiting = waitForSettled(s.db, s.table, s.statusIndex, { signal: within(2000) })
  s.rec.start() // the wait began before the reconciler: it waits for it
  try {
    const errors = await waiting
    assert.equal(
      errors.map((o) => [o.id, o.status.error]),
      [['bad', 'rejected']],
    )
    const aborted = new AbortController()
    aborted.abort(new Error('gave up'))
    await s.insert('x', 1)
    await waitForSettled(s.db, s.table, s.statusIndex, { signal: aborted.signal }).then(
      () => assert.unreachable('should reject'),
      (e) => assert.is((e as Error).message, 'gave up'),
    )
  } finally {
    await s.rec.stop()
  }
})

test('waitForRevision covers deletes, resolves on failure too, and rejects when stopped', async () => {
  const s = setup({ retry: { minMs: 60_000, maxMs: 60_000 } })
  s.target.failDelete = () => new Error('EACCES')
  s.rec.start()
  await s.insert('a', 1)
  const rev = await s.remove('a')
  await s.rec.waitForRevision(rev, { signal: within(2000) })
  assert.is(s.target.count('delete', 'a', false), 1, 'the delete was tried before the wait resolved')
  assert.is(s.rec.failedDeletes().length, 1)
  const hold = deferred()
  s.target.hold = () => hold.promise
  const far = await s.insert('b', 1)
  const pending = s.rec.waitForRevision(far)
  await s.rec.stop()
  await pending.then(
    () => assert.unreachable('should reject'),
    (e) => assert.instance(e, StoppedError),
  )
  await s.rec.waitForRevision(far + 100).then(
    () => assert.unreachable('should reject'),
    (e) => assert.instance(e, StoppedError),
  )
  hold.resolve()
})

test('stop cancels in-flight operations (even ones that ignore the signal) and leaves nothing running', async () => {
  const s = setup({
    fullReconciliationIntervalMs: 50,
    refresh: { intervalMs: 10 },
    rateLimit: { rounds: { qps: 1000, burst: 1 }, operations: { qps: 1000, burst: 1 } },
  })
  const inFlight = deferred<AbortSignal>()
  s.target.hold = (_op, o) => {
    if (o.id !== 'stuck') return undefined
    return new Promise<void>(() => {}) // never settles, ignores the signal
  }
  const orig = s.target.ops.update
  s.target.ops.update = (o, ctx) => {
    if (o.id === 'stuck') inFlight.resolve(ctx.signal)
    return orig(o, ctx)
  }
  s.rec.start()
  await s.insert('stuck', 1)
  const signal = await inFlight.promise
  const t0 = Date.now()
  await s.rec.stop()
  assert.ok(Date.now() - t0 < 1000, 'stop did not wait for the operation')
  assert.is(signal.aborted, true, 'the operation was told to stop')
  assert.is(s.rec.isRunning, false)
  assert.is(s.db.stats()[0]!.changeIterators, 0, 'change iterator closed')
  assert.is(s.table.get(s.db.readTxn(), byId.query('stuck'))!.status.kind, 'pending', 'an aborted operation writes nothing back')
  // Restart: the pending object is picked up again.
  s.target.hold = () => undefined
  s.rec.start()
  try {
    await waitForSettled(s.db, s.table, s.statusIndex, { signal: within(2000) })
    assert.is(s.target.state.get('stuck'), 1)
  } finally {
    await s.rec.stop()
  }
  // The test runner fails this folder if any timer or limiter survived.
})

test('a delete interrupted by stop is not lost: it is retried after a restart', async () => {
  const s = setup({ retry: { minMs: 5, maxMs: 5 } })
  const inDelete = deferred()
  s.target.hold = (op) => {
    if (op !== 'delete') return undefined
    inDelete.resolve()
    return new Promise<void>(() => {}) // hangs until the reconciler gives up on it
  }
  s.rec.start()
  const rev = await s.insert('a', 1)
  await s.rec.waitForRevision(rev, { signal: within(2000) })
  await s.remove('a')
  await inDelete.promise
  await s.rec.stop()
  assert.equal(
    s.rec.failedDeletes().map((f) => f.object.id),
    ['a'],
  )
  s.target.hold = () => undefined
  s.rec.start()
  try {
    await until(() => s.rec.failedDeletes().length === 0, 2000, 'delete retried after restart')
    assert.is(s.target.state.has('a'), false)
  } finally {
    await s.rec.stop()
  }
})

test('objects in error before a restart are retried after it', async () => {
  const s = setup({ retry: { minMs: 60_000, maxMs: 60_000 } })
  let fail = true
  s.target.failUpdate = () => (fail ? new Error('down') : undefined)
  s.rec.start()
  const rev = await s.insert('a', 1)
  await s.rec.waitForRevision(rev, { signal: within(2000) })
  await s.rec.stop()
  fail = false
  const again = new Reconciler<Obj>({ ...s.rec.config, retry: { minMs: 60_000, maxMs: 60_000 } })
  again.start()
  try {
    await until(() => s.table.get(s.db.readTxn(), byId.query('a'))!.status.kind === 'done', 2000, 'retried after restart')
  } finally {
    await again.stop()
  }
})

test('bad configuration is rejected at construction with a clear message', () => {
  const s = setup()
  const base = s.rec.config
  const make = (over: Record<string, unknown>) => () => new Reconciler<Obj>({ ...base, ...over } as never)
  assert.throws(make({ operations: { update: () => {} } }), /operations\.delete missing/)
  assert.throws(make({ operations: undefined }), /operations missing/)
  assert.throws(make({ retry: { minMs: 500, maxMs: 100 } }), /retry\.minMs \(500\) is above retry\.maxMs \(100\)/)
  assert.throws(make({ retry: { minMs: -1 } }), /retry\.minMs must be a positive number/)
  assert.throws(make({ roundSize: 0 }), /roundSize must be a positive integer/)
  assert.throws(make({ batchOperations: { updateBatch: () => {} } }), /needs both updateBatch and deleteBatch/)
  const bare = new Table<Obj>({ name: 'bare', primary: byId })
  assert.throws(make({ table: bare }), /table "bare" has no index "status"/)
  const other = makeTable('other')
  assert.throws(make({ table: other.table }), /not registered/)
  try {
    make({ retry: { minMs: 2, maxMs: 1 } })()
  } catch (e) {
    assert.instance(e, ConfigError)
  }
})

test('metrics: in-memory counters and prometheus names', async () => {
  const mem = new InMemoryMetrics()
  const registry = new Registry()
  const prom = new PrometheusMetrics({ registry })
  const both = {
    operation: (...a: Parameters<InMemoryMetrics['operation']>) => (mem.operation(...a), prom.operation(...a)),
    prune: (...a: Parameters<InMemoryMetrics['prune']>) => (mem.prune(...a), prom.prune(...a)),
    fullReconciliation: (...a: Parameters<InMemoryMetrics['fullReconciliation']>) => (
      mem.fullReconciliation(...a),
      prom.fullReconciliation(...a)
    ),
    state: (...a: Parameters<InMemoryMetrics['state']>) => (mem.state(...a), prom.state(...a)),
    round: (...a: Parameters<PrometheusMetrics['round']>) => (mem.round(a[0]), prom.round(...a)),
  }
  const s = setup({ metrics: both, retry: { minMs: 60_000, maxMs: 60_000 } })
  s.target.failUpdate = (o) => (o.id === 'bad' ? new Error('x') : undefined)
  s.rec.start()
  try {
    await s.insert('a', 1)
    await s.insert('bad', 1)
    const rev = await s.remove('a')
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    await s.rec.triggerFullReconciliation()
    const c = mem.get(s.rec.name)
    assert.is(c.operations['update/success'] >= 1, true)
    assert.is(c.operations['update/error'] >= 1, true)
    assert.is(c.operations['delete/success'], 1)
    assert.is(c.pruneRuns, 2, 'one as the table was initialized, one in the full reconciliation')
    assert.is(c.pruneCurrentError, false)
    assert.ok(c.rounds >= 1, 'rounds are counted')
    assert.is(c.currentErrors, 1)
    assert.is(c.retryQueueDepth, 1)
    const text = await registry.metrics()
    for (const name of [
      'statewright_reconcile_total{reconciler="objs",operation="update",result="success"}',
      'statewright_reconcile_total{reconciler="objs",operation="delete",result="success"} 1',
      'statewright_reconcile_errors_total{reconciler="objs",operation="update"}',
      'statewright_reconcile_time_seconds_bucket',
      'statewright_reconcile_current_errors{reconciler="objs"} 1',
      'statewright_reconcile_retry_queue_depth{reconciler="objs"} 1',
      'statewright_reconcile_prune_total{reconciler="objs"} 2',
      'statewright_reconcile_prune_current_error{reconciler="objs"} 0',
      'statewright_reconcile_prune_time_seconds_count{reconciler="objs"} 2',
      'statewright_reconcile_rounds_total{reconciler="objs"}',
      'statewright_reconcile_full_time_seconds_count{reconciler="objs"} 1',
    ]) {
      assert.ok(text.includes(name), `missing ${name}`)
    }
  } finally {
    await s.rec.stop()
  }
})

test('logger: a health listener that throws is logged at error with the reconciler name, and the rest go on', async () => {
  const log = collectingLogger()
  const s = setup({ name: 'logged' })
  const { retry, ...rest } = s.rec.config
  const rec = new Reconciler<Obj>({ ...rest, retry, logger: log })
  const seen: string[] = []
  rec.onHealth(() => {
    throw new Error('a buggy listener')
  })
  rec.onHealth((h) => seen.push(h.message))
  rec.start()
  try {
    const rev = await s.insert('a', 1)
    await rec.waitForRevision(rev, { signal: within(2000) })
    await until(() => log.entries.length > 0 && seen.length > 0, 2000, 'a logged listener failure')
    const e = log.entries[0]!
    assert.is(e.level, 'error')
    assert.is(e.fields.reconciler, 'logged')
    assert.is((e.fields.err as Error).message, 'a buggy listener')
    assert.is(e.msg, 'a reconciler health listener failed')
  } finally {
    await rec.stop()
  }
})

test('rateLimit: { qps, burst } token buckets pace operations (a burst at once, then qps a second); bad ones are refused', async () => {
  const s = setup({ rateLimit: { operations: { qps: 20, burst: 2 } } })
  const times: number[] = []
  const orig = s.target.ops.update
  s.target.ops.update = (o, ctx) => {
    times.push(performance.now())
    return orig(o, ctx)
  }
  s.rec.start()
  try {
    const txn = await s.db.writeTxn(s.table)
    for (let i = 0; i < 6; i++) s.table.insert(txn, { id: `o${i}`, value: 1, status: statusPending() })
    const rev = s.table.revision(txn.commit())
    await s.rec.waitForRevision(rev, { signal: within(5000) })
    assert.is(times.length, 6)
    assert.ok(times[1]! - times[0]! < 40, 'the burst goes at once')
    // four more at 20 a second: at least ~150 ms after the burst
    assert.ok(times[5]! - times[0]! >= 150, `six operations took ${(times[5]! - times[0]!).toFixed(0)} ms`)
  } finally {
    await s.rec.stop()
  }
  assert.throws(
    () => setup({ rateLimit: { rounds: { qps: 0, burst: 1 } } }),
    (e: unknown) => e instanceof ConfigError && /rateLimit\.rounds\.qps/.test((e as Error).message),
  )
  assert.throws(
    () => setup({ rateLimit: { operations: { qps: 5, burst: 0.5 } } }),
    (e: unknown) => e instanceof ConfigError && /rateLimit\.operations\.burst/.test((e as Error).message),
  )
})

test.run()
