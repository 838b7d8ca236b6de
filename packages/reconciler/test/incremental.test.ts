import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { InMemoryMetrics, Reconciler, type BatchOperations } from '@statewright/reconciler'
import { RetryQueue } from '../src/retries.ts'
import { byId, deferred, setup, sleep, until, within, type Obj } from './helpers.ts'

test('a result for an object that changed meanwhile is dropped; the newer version is reconciled', async () => {
  const s = setup()
  const started = deferred()
  const release = deferred()
  s.target.hold = (op, o) => {
    if (op !== 'update' || o.value !== 1) return undefined
    started.resolve()
    return release.promise
  }
  s.rec.start()
  try {
    await s.insert('a', 1)
    await started.promise
    const rev2 = await s.insert('a', 2) // written while Update(a=1) is in flight
    release.resolve()
    await s.rec.waitForRevision(rev2, { signal: within(2000) })
    const a = s.table.getEntry(s.db.readTxn(), byId.query('a'))!
    assert.is(a.object.value, 2, 'the newer write is never overwritten')
    assert.is(a.object.status.kind, 'done')
    assert.is(s.target.state.get('a'), 2)
    assert.equal(
      s.target.log.filter((e) => e.op !== 'prune').map((e) => `${e.op}:${e.value}`),
      ['update:1', 'update:2'],
    )
    assert.is(s.rec.stats().dropped, 1)
  } finally {
    await s.rec.stop()
  }
})

test('own status write-backs do not retrigger the reconciler', async () => {
  const s = setup()
  s.rec.start()
  try {
    let rev = 0
    for (let i = 0; i < 50; i++) rev = await s.insert(`k${i}`, i)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    // The write-backs bumped the revision; wait until they too were seen, then count.
    const after = s.table.revision(s.db.readTxn())
    await s.rec.waitForRevision(after, { signal: within(2000) })
    assert.is(s.target.count('update'), 50)
    assert.is(s.rec.stats().objects, 50)
  } finally {
    await s.rec.stop()
  }
})

test('synchronous and asynchronous operations mixed in a round: one at a time, in order, every outcome recorded', async () => {
  // Synchronous operations run without an await; the first promise (or thenable) holds the rest
  // of the round back until it settles.
  const calls: string[] = []
  let inFlight = 0
  let maxInFlight = 0
  const enter = (id: string) => {
    calls.push(id)
    maxInFlight = Math.max(maxInFlight, ++inFlight)
  }
  const behaviour: Record<string, (id: string) => unknown> = {
    a: () => undefined,
    b: async () => {
      await sleep(2)
      inFlight--
    },
    c: () => {
      throw new Error('c failed')
    },
    d: async () => {
      await sleep(1)
      inFlight--
      throw new Error('d failed')
    },
    e: () => true,
    f: () => ({ then: (ok: (v: unknown) => void) => setTimeout(() => (inFlight--, ok(true)), 1) }),
    g: () => undefined,
  }
  const metrics = new InMemoryMetrics()
  const s = setup({
    metrics,
    retry: { minMs: 60_000, maxMs: 60_000 },
    operations: {
      update: (o) => {
        enter(o.id)
        let r: unknown
        try {
          r = behaviour[o.id]!(o.id)
        } catch (err) {
          inFlight--
          throw err
        }
        if (r === null || typeof r !== 'object') inFlight-- // promises and thenables count down when they settle
        return r as boolean | void | Promise<boolean | void>
      },
      delete: () => {},
    },
  })
  s.rec.start()
  try {
    const txn = await s.db.writeTxn(s.table)
    for (const id of Object.keys(behaviour)) s.table.insert(txn, { id, value: 1, status: { kind: 'pending', updatedAt: 0, id: 0 } })
    const rev = s.table.revision(txn.commit())
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.equal(calls, Object.keys(behaviour))
    assert.is(maxInFlight, 1)
    const kinds = Object.fromEntries(Object.keys(behaviour).map((id) => [id, s.table.get(s.db.readTxn(), byId.query(id))?.status]))
    for (const id of ['a', 'b', 'e', 'f', 'g']) assert.is(kinds[id]?.kind, 'done', id)
    assert.is(kinds.c?.kind, 'error')
    assert.is(kinds.c?.error, 'c failed')
    assert.is(kinds.d?.kind, 'error')
    assert.is(kinds.d?.error, 'd failed')
    const c = metrics.get(s.rec.name)
    assert.is(c.operations['update/success'], 5)
    assert.is(c.operations['update/error'], 2)
    assert.is(s.rec.failures().length, 2)
  } finally {
    await s.rec.stop()
  }
})

test('rounds hold at most roundSize objects', async () => {
  const s = setup({ roundSize: 7 })
  const txn = await s.db.writeTxn(s.table)
  for (let i = 0; i < 30; i++) s.table.insert(txn, { id: `k${i}`, value: i, status: { kind: 'pending', updatedAt: 0, id: 1000 + i } })
  const rev = s.table.revision(txn.commit())
  s.rec.start()
  try {
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.is(s.target.state.size, 30)
    assert.ok(s.rec.stats().rounds >= 5, `30 objects in rounds of 7 need 5 rounds, took ${s.rec.stats().rounds}`)
  } finally {
    await s.rec.stop()
  }
})

test('a failed update is marked error, retried, and becomes done', async () => {
  const s = setup()
  let failures = 2
  s.target.failUpdate = (o) => (o.id === 'a' && failures-- > 0 ? new Error('disk full') : undefined)
  s.rec.start()
  try {
    const rev = await s.insert('a', 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    const a = s.table.get(s.db.readTxn(), byId.query('a'))!
    assert.is(a.status.kind, 'error')
    assert.is(a.status.error, 'disk full')
    // what inspection shows of it: the retry's attempts and time, by the object
    const f = s.rec.failureOf(a)
    assert.ok(f, 'failureOf finds the retry')
    assert.equal([f!.key, f!.error, f!.deleted, f!.attempts >= 1], ['a', 'disk full', false, true])
    assert.ok(f!.retryAt > Date.now() - 1000 && f!.retryAt < Date.now() + 5000, `retryAt ${f!.retryAt - Date.now()} ms away`)
    assert.is(f!.object, a)
    assert.equal(
      s.rec.failures().map((x) => x.key),
      ['a'],
    )
    await until(() => s.table.get(s.db.readTxn(), byId.query('a'))!.status.kind === 'done', 2000, 'a done')
    assert.is(s.target.count('update', 'a', false), 2)
    assert.is(s.target.count('update', 'a', true), 1)
    assert.is(s.rec.failures().length, 0)
    assert.is(s.rec.failureOf(a), undefined, 'no retry once done')
  } finally {
    await s.rec.stop()
  }
})

test('a newer change replaces a pending retry (update)', async () => {
  const s = setup({ retry: { minMs: 100_000, maxMs: 100_000 } })
  s.target.failUpdate = (o) => (o.value === 1 ? 'bad value' : undefined)
  s.rec.start()
  try {
    const r1 = await s.insert('a', 1)
    await s.rec.waitForRevision(r1, { signal: within(2000) })
    assert.is(s.rec.failures().length, 1)
    const r2 = await s.insert('a', 2)
    await s.rec.waitForRevision(r2, { signal: within(2000) })
    assert.is(s.rec.failures().length, 0, 'the retry of a=1 is gone')
    assert.is(s.target.state.get('a'), 2)
  } finally {
    await s.rec.stop()
  }
})

test('a stale retried delete never undoes a later insert (cilium #55)', async () => {
  const s = setup({ retry: { minMs: 20, maxMs: 20 } })
  let deleteFails = true
  s.target.failDelete = () => (deleteFails ? new Error('busy') : undefined)
  s.rec.start()
  try {
    const r1 = await s.insert('a', 1)
    await s.rec.waitForRevision(r1, { signal: within(2000) })
    const r2 = await s.remove('a')
    await s.rec.waitForRevision(r2, { signal: within(2000) })
    assert.equal(
      s.rec.failedDeletes().map((f) => [f.object.id, f.error]),
      [['a', 'busy']],
    )
    assert.match(s.rec.health().message, /delete a: busy/)
    const r3 = await s.insert('a', 3)
    deleteFails = false
    await s.rec.waitForRevision(r3, { signal: within(2000) })
    assert.equal(s.rec.failedDeletes(), [], 'the insert replaced the failed delete')
    await sleep(60) // past the retry's due time: a stale retry would have run by now
    assert.is(s.target.state.get('a'), 3)
    assert.is(s.target.count('delete', 'a'), 1)
  } finally {
    await s.rec.stop()
  }
})

test('a failed delete is retried until it reaches the target', async () => {
  const s = setup()
  let failures = 3
  s.target.failDelete = () => (failures-- > 0 ? new Error('EBUSY') : undefined)
  s.rec.start()
  try {
    await s.insert('a', 1)
    const r = await s.remove('a')
    await s.rec.waitForRevision(r, { signal: within(2000) })
    await until(() => s.rec.failedDeletes().length === 0, 2000, 'delete retried')
    assert.is(s.target.state.has('a'), false)
    assert.is(s.target.count('delete', 'a', false), 3)
    assert.is(s.target.count('delete', 'a', true), 1)
  } finally {
    await s.rec.stop()
  }
})

test('backoff doubles per failure and stops at the cap', () => {
  const q = new RetryQueue<Obj>(10, 75)
  assert.equal(
    [1, 2, 3, 4, 5, 6].map((n) => q.backoff(n)),
    [10, 20, 40, 75, 75, 75],
  )
  const big = new RetryQueue<Obj>(100, 60_000)
  assert.is(big.backoff(5000), 60_000, 'no overflow for many attempts')
  let r = 0
  const jittered = new RetryQueue<Obj>(100, 1000, 0.5, () => [0, 0.999, 0.5][r++ % 3]!)
  assert.is(jittered.backoff(1), 50)
  assert.ok(Math.abs(jittered.backoff(1) - 149.9) < 0.01)
  assert.is(jittered.backoff(1), 100)
  assert.is(new RetryQueue<Obj>(600, 1000, 1, () => 0.999).backoff(1), 1000, 'jitter never passes the cap')
})

test('retries of a failing object back off exponentially, per object, without blocking others', async () => {
  const s = setup({ retry: { minMs: 15, maxMs: 60, jitter: 0 } })
  const times: number[] = []
  s.target.failUpdate = (o) => {
    if (o.id !== 'bad') return undefined
    times.push(performance.now())
    return new Error('always')
  }
  s.rec.start()
  try {
    await s.insert('bad', 1)
    const rev = await s.insert('good', 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.is(s.target.state.get('good'), 1, 'the failing object blocks nobody')
    await until(() => times.length >= 6, 3000, '6 attempts')
    const gaps = times.slice(1).map((t, i) => t - times[i]!)
    const want = [15, 30, 60, 60, 60]
    gaps.slice(0, 5).forEach((g, i) => assert.ok(g >= want[i]! - 2, `gap ${i} is ${g.toFixed(1)} ms, want >= ${want[i]}`))
    assert.ok(gaps[3]! < 60 + 200, `capped gap ${gaps[3]!.toFixed(1)} ms`)
    assert.is(s.rec.failures()[0]!.attempts >= 6, true)
  } finally {
    await s.rec.stop()
  }
})

test('without a retry option the shared default applies: first retry after 100 ms ±20%', async () => {
  const s = setup()
  const { retry: _, ...noRetry } = s.rec.config
  const rec = new Reconciler<Obj>(noRetry)
  s.target.failUpdate = () => new Error('always')
  rec.start()
  try {
    const before = Date.now()
    await s.insert('bad', 1)
    await until(() => rec.failures().length === 1, 2000, 'one failure')
    const after = Date.now()
    const f = rec.failures()[0]!
    assert.is(f.attempts, 1)
    assert.ok(f.retryAt >= before + 80 && f.retryAt <= after + 120, `first retry in ${f.retryAt - before} ms`)
  } finally {
    await rec.stop()
  }
})

test('batch operations: new changes in batches (deletes first), retries fall back to single operations', async () => {
  const calls: string[] = []
  const s = setup({ retry: { minMs: 5, maxMs: 5 } })
  let failOnce = true
  const batch: BatchOperations<Obj> = {
    updateBatch: (entries) => {
      calls.push(`updateBatch:${entries.map((e) => e.object.id).join(',')}`)
      for (const e of entries) {
        if (e.object.id === 'b' && failOnce) {
          failOnce = false
          e.error = new Error('b failed in batch')
          continue
        }
        s.target.state.set(e.object.id, e.object.value)
      }
    },
    deleteBatch: (entries) => {
      calls.push(`deleteBatch:${entries.map((e) => e.object.id).join(',')}`)
      for (const e of entries) s.target.state.delete(e.object.id)
    },
  }
  const s2 = setup({ batchOperations: batch, retry: { minMs: 5, maxMs: 5 } }, s.target)
  const origUpdate = s.target.ops.update
  s.target.ops.update = (o, ctx) => {
    calls.push(`update:${o.id}`)
    return origUpdate(o, ctx)
  }
  // One transaction: z exists and is deleted, a, b, c inserted; all in one round.
  const t0 = await s2.db.writeTxn(s2.table)
  s2.table.insert(t0, { id: 'z', value: 0, status: { kind: 'done', updatedAt: 0, id: 1 } })
  t0.commit()
  s2.target.state.set('z', 0)
  s2.rec.start()
  try {
    const txn = await s2.db.writeTxn(s2.table)
    s2.table.delete(txn, { id: 'z' } as Obj)
    for (const id of ['a', 'b', 'c'])
      s2.table.insert(txn, { id, value: 1, status: { kind: 'pending', updatedAt: 0, id: 100 + id.charCodeAt(0) } })
    const rev = s2.table.revision(txn.commit())
    await s2.rec.waitForRevision(rev, { signal: within(2000) })
    await until(() => s2.rec.failures().length === 0, 2000, 'b retried')
    assert.equal(calls, ['deleteBatch:z', 'updateBatch:a,b,c', 'update:b'])
    assert.equal([...s2.target.state].sort(), [
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ])
    const b = s2.table.get(s2.db.readTxn(), byId.query('b'))!
    assert.is(b.status.kind, 'done')
  } finally {
    await s2.rec.stop()
  }
})

test('a batch operation that throws fails every entry of the batch', async () => {
  let throwOnce = true
  const s = setup({
    batchOperations: {
      updateBatch: () => {
        if (throwOnce) {
          throwOnce = false
          throw new Error('batch down')
        }
      },
      deleteBatch: () => {},
    },
  })
  s.rec.start()
  try {
    const txn = await s.db.writeTxn(s.table)
    for (const id of ['a', 'b'])
      s.table.insert(txn, { id, value: 1, status: { kind: 'pending', updatedAt: 0, id: 500 + id.charCodeAt(0) } })
    const rev = s.table.revision(txn.commit())
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.equal(
      s.rec.failures().map((f) => f.error),
      ['batch down', 'batch down'],
    )
    await until(() => s.rec.failures().length === 0, 2000, 'retried singly')
    assert.is(s.target.count('update', undefined, true), 2)
  } finally {
    await s.rec.stop()
  }
})

test.run()
