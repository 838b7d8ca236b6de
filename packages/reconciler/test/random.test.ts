// Randomized: writers insert, change and delete objects in random transactions while the target
// fails at random (updates and deletes), is slow at random, and the reconciler retries. Once the
// faults stop: the target equals the table, every delete reached it, and no object was touched
// after its final version was done. Seeded (fast-check), so a failure names its reproduction.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { waitForSettled, type BatchOperations } from '@statewright/reconciler'
import { FakeTarget, setup, sleep, until, within, type Obj } from './helpers.ts'
import { rng } from '../../../bench/lib/rng.ts'

const mulberry32 = (seed: number): (() => number) => rng(seed).next

const step = fc.record({ del: fc.boolean(), key: fc.nat(11), newTxn: fc.boolean(), pause: fc.nat(3) })

async function scenario(
  steps: Array<{ del: boolean; key: number; newTxn: boolean; pause: number }>,
  seed: number,
  roundSize: number,
  batch: boolean,
): Promise<void> {
  const rand = mulberry32(seed)
  let faulty = true
  const t = new FakeTarget()
  t.failUpdate = () => (faulty && rand() < 0.3 ? new Error('random update failure') : undefined)
  t.failDelete = () => (faulty && rand() < 0.4 ? new Error('random delete failure') : undefined)
  t.delay = () => (faulty && rand() < 0.15 ? 1 + Math.floor(rand() * 3) : 0)
  // Batch operations over the same faulty target: each entry through the single operation.
  const each =
    (op: 'update' | 'delete'): BatchOperations<Obj>['updateBatch'] =>
    async (entries, ctx) => {
      for (const e of entries) {
        try {
          await t.ops[op](e.object, { ...ctx, revision: e.revision })
        } catch (err) {
          e.error = err
        }
      }
    }
  const batchOperations = batch ? { updateBatch: each('update'), deleteBatch: each('delete') } : undefined
  const s = setup({ roundSize, retry: { minMs: 1, maxMs: 8, jitter: 0.3 }, batchOperations }, t)
  s.rec.start()
  try {
    let value = 0
    const model = new Map<string, number>() // what the writers wrote: the table must end equal to it
    let txn = await s.db.writeTxn(s.table)
    for (const st of steps) {
      if (st.newTxn) {
        txn.commit()
        if (st.pause > 0) await sleep(st.pause)
        else await new Promise((r) => setImmediate(r))
        txn = await s.db.writeTxn(s.table)
      }
      const id = `k${st.key}`
      if (st.del) {
        s.table.delete(txn, { id } as Obj)
        model.delete(id)
      } else {
        s.table.insert(txn, { id, value: ++value, status: { kind: 'pending', updatedAt: Date.now(), id: 1_000_000 + value } })
        model.set(id, value)
      }
    }
    const last = s.table.revision(txn.commit())
    await s.rec.waitForRevision(last, { signal: within(5000) })
    faulty = false
    // Converged: nothing pending and nothing failing (retries back off 8 ms at most).
    await until(() => s.rec.failures().length === 0, 5000, 'no failures left')
    const errors = await waitForSettled(s.db, s.table, s.statusIndex, { signal: within(5000) })
    assert.equal(errors, [])

    const desired = new Map<string, number>()
    for (const o of s.table.all(s.db.readTxn())) {
      desired.set(o.id, o.value)
      assert.is(o.status.kind, 'done', `${o.id} done`)
    }
    const sorted = (m: Map<string, number>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    assert.equal(sorted(desired), sorted(model), 'no newer write was overwritten by a write-back')
    assert.equal(sorted(t.state), sorted(desired), 'the target equals the table')
    assert.equal(s.rec.failedDeletes(), [], 'every delete reached the target')

    // Nothing touched an object after its final version was done (values are unique per version).
    for (const key of new Set(steps.map((st) => `k${st.key}`))) {
      const events = t.log.map((e, i) => ({ ...e, i })).filter((e) => e.id === key)
      if (desired.has(key)) {
        const v = desired.get(key)!
        const first = events.findIndex((e) => e.op === 'update' && e.ok && e.value === v)
        assert.ok(first >= 0, `${key}: final version reached the target`)
        assert.is(
          events.length - 1,
          first,
          `${key}: ${events.length - 1 - first} operations after its final version was done: ${JSON.stringify(events.slice(first))}`,
        )
      } else if (events.length > 0) {
        const lastEvent = events[events.length - 1]!
        assert.ok(lastEvent.op === 'delete' && lastEvent.ok, `${key}: deleted last, got ${JSON.stringify(lastEvent)}`)
      }
    }
    const before = t.log.length
    await sleep(25) // past the longest backoff: a stray retry would show up
    assert.is(t.log.length, before, 'no stray operations once converged')
  } finally {
    await s.rec.stop()
  }
}

test('randomized: faulty target, single operations', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 80 }), fc.integer(), fc.constantFrom(3, 1000), (steps, seed, roundSize) =>
      scenario(steps, seed, roundSize, false),
    ),
    { seed: 20260101, numRuns: 25 },
  )
})

test('randomized: faulty target, batch operations', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 80 }), fc.integer(), fc.constantFrom(4, 1000), (steps, seed, roundSize) =>
      scenario(steps, seed, roundSize, true),
    ),
    { seed: 7, numRuns: 15 },
  )
})

test.run()
