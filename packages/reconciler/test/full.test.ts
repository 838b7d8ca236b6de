import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { InMemoryMetrics } from '@statewright/reconciler'
import { byId, setup, until, within } from './helpers.ts'

test('prune runs only after the table is initialized, with the whole desired set', async () => {
  const s = setup()
  const init = await s.db.writeTxn(s.table)
  const done = s.table.registerInitializer(init, 'loader')
  init.commit()
  s.target.state.set('stray', 9)
  s.target.state.set('a', 0)
  s.rec.start()
  try {
    const rev = await s.insert('a', 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    const full = s.rec.triggerFullReconciliation()
    let ran = false
    void full.then(() => (ran = true))
    // Incremental work goes on while the full reconciliation waits for initialization.
    const rev2 = await s.insert('b', 2)
    await s.rec.waitForRevision(rev2, { signal: within(2000) })
    assert.is(ran, false)
    assert.is(s.target.count('prune'), 0, 'no prune before initialization')
    assert.is(s.target.state.get('stray'), 9)
    const t = await s.db.writeTxn(s.table)
    done(t)
    t.commit()
    const report = await full
    assert.is(s.target.count('prune'), 1)
    assert.equal(s.target.pruned, ['stray'])
    assert.equal([...s.target.state].sort(), [
      ['a', 1],
      ['b', 2],
    ])
    assert.is(report.updated, 2)
    assert.is(report.outOfSync, 0)
    assert.is(report.pruneError, undefined)
  } finally {
    await s.rec.stop()
  }
})

test('full reconciliation counts objects out of sync and repairs them', async () => {
  const metrics = new InMemoryMetrics()
  const s = setup({ metrics })
  s.rec.start()
  try {
    let rev = 0
    for (let i = 0; i < 10; i++) rev = await s.insert(`k${i}`, i)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    // Someone changes the target behind the reconciler's back.
    s.target.state.set('k1', -1)
    s.target.state.set('k2', -1)
    s.target.state.delete('k3')
    const writesBefore = s.table.revision(s.db.readTxn())
    const report = await s.rec.triggerFullReconciliation()
    assert.is(report.updated, 10)
    assert.is(report.outOfSync, 3)
    assert.is(s.target.state.get('k1'), 1)
    assert.is(s.target.state.get('k3'), 3)
    assert.is(metrics.get(s.rec.name).outOfSync, 3)
    assert.is(metrics.get(s.rec.name).fullRuns, 1)
    assert.is(s.table.revision(s.db.readTxn()), writesBefore, 'a full reconciliation of done objects writes nothing')
    const again = await s.rec.triggerFullReconciliation()
    assert.is(again.outOfSync, 0)
  } finally {
    await s.rec.stop()
  }
})

test('a failed prune degrades health and is retried at the next full reconciliation', async () => {
  const s = setup({ fullReconciliationIntervalMs: 30 })
  let pruneFails = true
  s.target.failPrune = () => (pruneFails ? new Error('cannot list') : undefined)
  const levels: string[] = []
  s.rec.onHealth((h) => levels.push(h.level))
  s.rec.start()
  try {
    const report = await s.rec.triggerFullReconciliation()
    assert.is(report.pruneError, 'cannot list')
    await until(() => s.rec.health().level === 'degraded', 2000, 'degraded')
    assert.match(s.rec.health().message, /prune failed: cannot list/)
    pruneFails = false
    await until(() => s.target.count('prune', '', true) >= 1, 2000, 'prune retried by the interval')
    await until(() => s.rec.health().level === 'ok', 2000, 'ok again')
    assert.ok(levels.includes('degraded'))
    assert.is(levels[levels.length - 1], 'ok')
  } finally {
    await s.rec.stop()
  }
})

test('full reconciliation marks failures error, retries them, and clears errors it fixes', async () => {
  const s = setup({ retry: { minMs: 100_000, maxMs: 100_000 } })
  let fail = false
  s.target.failUpdate = (o) => (fail && o.id === 'a' ? new Error('nope') : undefined)
  s.rec.start()
  try {
    await s.insert('a', 1)
    const rev = await s.insert('b', 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    fail = true
    const r1 = await s.rec.triggerFullReconciliation()
    assert.is(r1.errors, 1)
    assert.is(s.table.get(s.db.readTxn(), byId.query('a'))!.status.kind, 'error')
    assert.is(s.rec.failures().length, 1)
    fail = false
    const r2 = await s.rec.triggerFullReconciliation()
    assert.is(r2.errors, 0)
    assert.is(s.table.get(s.db.readTxn(), byId.query('a'))!.status.kind, 'done')
    assert.is(s.rec.failures().length, 0)
  } finally {
    await s.rec.stop()
  }
})

test('refresh re-runs Update for done objects older than the interval', async () => {
  const s = setup({ refresh: { intervalMs: 20, maxPerSecond: 1000 } })
  s.rec.start()
  try {
    await s.insert('a', 1)
    const rev = await s.insert('b', 2)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    await until(() => s.target.count('update', 'a') >= 3 && s.target.count('update', 'b') >= 3, 3000, 'refreshed twice')
    const a = s.table.get(s.db.readTxn(), byId.query('a'))!
    assert.ok(a.status.kind === 'done' || a.status.kind === 'refreshing')
  } finally {
    await s.rec.stop()
  }
})

test('refresh is rate-limited', async () => {
  const s = setup({ refresh: { intervalMs: 1, maxPerSecond: 20 } })
  const txn = await s.db.writeTxn(s.table)
  for (let i = 0; i < 100; i++) s.table.insert(txn, { id: `k${i}`, value: i, status: { kind: 'done', updatedAt: 0, id: 10_000 + i } })
  txn.commit()
  s.rec.start()
  try {
    const t0 = Date.now()
    await until(() => s.target.count('update') >= 25, 4000, '25 refreshes')
    const elapsed = Date.now() - t0
    // A burst of 20, then 20/s: the 25th needs about 250 ms.
    assert.ok(elapsed >= 150, `25 refreshes took only ${elapsed} ms`)
  } finally {
    await s.rec.stop()
  }
})

test.run()
