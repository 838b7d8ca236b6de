// Issue 36, the reconciler's part: waits that cover deletes (retried ones too), waits that leave no
// listener on the caller's signal, and the revision in an operation's context.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { getEventListeners } from 'node:events'
import { setImmediate as turn } from 'node:timers/promises'
import fc from 'fast-check'
import { ReconciliationFailedError, waitForReconciliation, waitForSettled, type ObjectOpContext } from '@statewright/reconciler'
import { byId, deferred, FakeTarget, setup, within, type Obj } from './helpers.ts'
import { rng } from '../../../bench/lib/rng.ts'

/** A few event-loop turns: enough for a wait that would resolve at once to have resolved. */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await turn()
}

// follows cilium's TestWaitUntilReconciled (reconciler/progress_test.go): a wait returns only once
// the change is acted on, a failure included, and cilium's retry low watermark (a failed delete
// keeps the wait short of "reconciled"). Ours is model-based: random inserts and deletes, deletes
// and updates that fail at random and are always asynchronous; each time waitForReconciliation
// returns, the target equals the model (the table), and no delete is failing.
test('waitForReconciliation returns only when the target equals the table: deletes and retried deletes included (model)', async () => {
  const step = fc.record({ del: fc.boolean(), key: fc.nat(7), wait: fc.boolean() })
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 40 }), fc.integer(), async (steps, seed) => {
      const rand = rng(seed).next
      const t = new FakeTarget()
      let faulty = true
      t.failUpdate = () => (faulty && rand() < 0.2 ? new Error('update failed') : undefined)
      t.failDelete = () => (faulty && rand() < 0.4 ? new Error('delete failed') : undefined)
      t.hold = () => turn() // every operation is asynchronous
      const s = setup({ retry: { minMs: 1, maxMs: 4, jitter: 0 } }, t)
      s.rec.start()
      try {
        const model = new Map<string, number>()
        let value = 0
        let waits = 0
        for (const st of steps) {
          const id = `k${st.key}`
          if (st.del) {
            await s.remove(id)
            model.delete(id)
          } else {
            await s.insert(id, ++value)
            model.set(id, value)
          }
          if (!st.wait) continue
          if (++waits % 3 === 0) faulty = false // some waits need every retry to succeed
          await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(20_000) })
          assert.equal(new Map([...t.state].sort()), new Map([...model].sort()), 'the target equals the table when the wait returns')
          assert.equal(s.rec.failedDeletes(), [], 'no delete is failing when the wait returns')
          faulty = true
        }
        faulty = false
        await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(20_000) })
        assert.equal(new Map([...t.state].sort()), new Map([...model].sort()))
      } finally {
        await s.rec.stop()
      }
    }),
    { numRuns: 25 },
  )
})

// the scenario: 50 of 200 rows deleted, the device still has them while the wait runs
test('waitForReconciliation after deletes waits for the deletes to reach the target (not at once)', async () => {
  const s = setup()
  const release = deferred()
  const deleting = deferred()
  s.rec.start()
  try {
    for (let i = 0; i < 200; i++) await s.insert(`r${i}`, i)
    await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(10_000) })
    assert.is(s.target.state.size, 200)
    s.target.hold = (op) => {
      if (op !== 'delete') return undefined
      deleting.resolve()
      return release.promise
    }
    const txn = await s.db.writeTxn(s.table)
    for (let i = 0; i < 50; i++) s.table.delete(txn, { id: `r${i}` } as Obj)
    txn.commit()
    let returned = false
    const waiting = waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(10_000) }).then(() => (returned = true))
    await deleting.promise
    await turns()
    assert.not.ok(returned, 'returned while the deletes were in flight')
    release.resolve()
    await waiting
    assert.is(s.target.state.size, 150)
  } finally {
    await s.rec.stop()
  }
})

// follows cilium's retries_test.go TestRetries (Pop leaves the item queued until Clear): a delete
// being retried is still a failed delete, and the waits see it
test('failedDeletes lists a delete while its retry is in flight; waitForReconciliation rejects naming it, or waits', async () => {
  const s = setup({ retry: { minMs: 5, maxMs: 5, jitter: 0 } })
  let fail = true
  const retrying = deferred()
  const release = deferred()
  s.target.failDelete = () => (fail ? new Error('device busy') : undefined)
  s.rec.start()
  try {
    await s.insert('a', 1)
    await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(5000) })
    const rev = await s.remove('a')
    await s.rec.waitForRevision(rev, { signal: within(5000) })
    assert.equal(
      s.rec.failedDeletes().map((f) => [f.key, f.error]),
      [['a', 'device busy']],
    )
    const err = await waitForReconciliation(s.db, s.table, s.statusIndex, { onError: 'reject', signal: within(5000) }).then(
      () => undefined,
      (e) => e,
    )
    assert.instance(err, ReconciliationFailedError)
    assert.match(err.message, /1 delete failed: delete a: device busy/)
    assert.equal(
      err.failed.map((o: Obj) => o.id),
      ['a'],
    )
    let returned = false
    const waiting = waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(5000) }).then(() => (returned = true))
    s.target.hold = (op) => {
      if (op !== 'delete') return undefined
      fail = false
      retrying.resolve()
      return release.promise
    }
    await retrying.promise
    assert.equal(
      s.rec.failedDeletes().map((f) => f.key),
      ['a'],
      'the retry in flight is still a failed delete',
    )
    await turns()
    assert.not.ok(returned, 'waitForReconciliation returned while the retried delete was in flight')
    release.resolve()
    await waiting
    assert.equal(s.rec.failedDeletes(), [])
    assert.not.ok(s.target.state.has('a'))
  } finally {
    await s.rec.stop()
  }
})

test('waitForSettled waits until every delete has been attempted (failed ones are not in its result)', async () => {
  const s = setup({ retry: { minMs: 60_000, maxMs: 60_000, jitter: 0 } })
  const release = deferred()
  const deleting = deferred()
  s.target.failDelete = () => new Error('no')
  s.rec.start()
  try {
    await s.insert('a', 1)
    await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(5000) })
    s.target.hold = (op) => (op === 'delete' ? (deleting.resolve(), release.promise) : undefined)
    await s.remove('a')
    let returned = false
    const settled = waitForSettled(s.db, s.table, s.statusIndex, { signal: within(5000) }).then((r) => ((returned = true), r))
    await deleting.promise
    await turns()
    assert.not.ok(returned, 'returned before the delete was attempted')
    release.resolve()
    assert.equal(await settled, [])
    assert.equal(
      s.rec.failedDeletes().map((f) => f.key),
      ['a'],
    )
  } finally {
    await s.rec.stop()
  }
})

// issue 36 bug 6: ~60 waits on one shutdown signal gave MaxListenersExceededWarning
test('1000 waits on one signal leave no abort listener on it (waitForReconciliation, waitForSettled, waitForRevision)', async () => {
  // every third object fails its first update: those waits wait on the error list beside the
  // pending and refreshing lists, and only the error list changes when the retry succeeds
  const s = setup({ retry: { minMs: 1, maxMs: 1, jitter: 0 } })
  const failed = new Set<number>()
  s.target.failUpdate = (o) => (o.value % 3 === 0 && !failed.has(o.value) && failed.add(o.value) ? new Error('first try') : undefined)
  const ac = new AbortController()
  const warnings: string[] = []
  const onWarning = (w: Error) => warnings.push(w.name)
  process.on('warning', onWarning)
  s.rec.start()
  try {
    for (let i = 0; i < 1000; i++) {
      const rev = await s.insert(`k${i % 10}`, i)
      if (i % 3 === 0 || i % 5 === 0) await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: ac.signal })
      else if (i % 3 === 1) await waitForSettled(s.db, s.table, s.statusIndex, { signal: ac.signal })
      else await s.rec.waitForRevision(rev, { signal: ac.signal })
    }
    // and after deletes (the delete progress watch)
    for (let i = 0; i < 10; i++) {
      await s.remove(`k${i}`)
      await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: ac.signal })
    }
    assert.is(getEventListeners(ac.signal, 'abort').length, 0)
    await turn()
    assert.equal(warnings, [])
  } finally {
    process.off('warning', onWarning)
    await s.rec.stop()
  }
})

// follows cilium f0ef1b9 ("reconciler: Add revision to Update and Delete ops"; its mock operations
// fail on a revision of 0): Update gets the revision of the object it was given, Delete the
// revision of the deletion, for new changes, retries and full reconciliation alike
test('Update and Delete get the revision in ctx: the object read (update) or the deletion (delete), never 0', async () => {
  const t = new FakeTarget()
  const seen: Array<{ op: 'update' | 'delete'; id: string; value?: number; ctx: ObjectOpContext }> = []
  const ops = t.ops
  let failNext = 0
  const s = setup(
    {
      retry: { minMs: 1, maxMs: 2, jitter: 0 },
      operations: {
        update: (o, ctx) => {
          seen.push({ op: 'update', id: o.id, value: o.value, ctx })
          if (failNext > 0 && failNext--) throw new Error('once')
          return ops.update(o, ctx)
        },
        delete: (o, ctx) => {
          seen.push({ op: 'delete', id: o.id, ctx })
          if (failNext > 0 && failNext--) throw new Error('once')
          return ops.delete(o, ctx)
        },
      },
    },
    t,
  )
  const deletions = new Map<string, number[]>()
  s.rec.start()
  try {
    for (let i = 0; i < 30; i++) {
      const id = `k${i % 5}`
      failNext = i % 4 === 0 ? 1 : 0
      if (i % 3 === 2) {
        const rev = await s.remove(id)
        deletions.set(id, [...(deletions.get(id) ?? []), rev])
      } else await s.insert(id, i)
      await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(10_000) })
    }
    await s.rec.triggerFullReconciliation()
    assert.ok(seen.some((x) => x.ctx.full))
    for (const x of seen) {
      assert.type(x.ctx.revision, 'number')
      assert.ok(x.ctx.revision > 0, 'never 0')
      const entry = s.table.getEntry(x.ctx.txn, byId.query(x.id))
      if (x.op === 'update') {
        assert.is(entry?.revision, x.ctx.revision, `update of ${x.id}: the revision of the object in the operation's snapshot`)
        assert.is(entry?.object.value, x.value)
      } else {
        assert.is(entry, undefined)
        assert.ok(deletions.get(x.id)?.includes(x.ctx.revision), `delete of ${x.id} at ${x.ctx.revision}: a deletion's revision`)
      }
    }
    assert.ok(seen.filter((x) => x.op === 'delete').length > deletions.size, 'some deletes were retried')
  } finally {
    await s.rec.stop()
  }
})

test.run()
