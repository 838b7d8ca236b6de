// Fresh changes first in a full reconciliation (controller-runtime's priority queue puts an object's
// own change before a resync; cilium's full reconciliation runs whole before the next incremental
// round, which we do not follow here): between the chunks of a full round, one incremental round,
// so a change made during a long full round waits one chunk, not the whole table. The full round's
// snapshot copy of an object changed or deleted meanwhile is not applied after the newer version:
// that would undo the change on the target. Counted in operations, never timed.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { waitForSettled, type Operations } from '@statewright/reconciler'
import { FakeTarget, setup, within, type Obj } from './helpers.ts'

const N = 2000
const ROUND = 100

async function filled(ops: (target: FakeTarget, s: () => ReturnType<typeof setup>) => Operations<Obj>) {
  const target = new FakeTarget()
  let s!: ReturnType<typeof setup>
  s = setup({ operations: ops(target, () => s), roundSize: ROUND, fullReconciliationIntervalMs: 0 }, target)
  const txn = await s.db.writeTxn(s.table)
  for (let i = 0; i < N; i++)
    s.table.insert(txn, { id: `k${String(i).padStart(4, '0')}`, value: i, status: { kind: 'pending', id: 0 } as never })
  const rev = s.table.revision(txn.commit())
  s.rec.start()
  await s.rec.waitForRevision(rev, { signal: within(10_000) })
  return s
}

test('a change made during a full round is reconciled after one chunk, and the round does not undo it', async () => {
  const log: Array<{ id: string; value: number; full: boolean }> = []
  let changed = false
  const s = await filled((target, s) => ({
    ...target.ops,
    update: async (o, ctx) => {
      log.push({ id: o.id, value: o.value, full: ctx.full })
      if (ctx.full && !changed) {
        changed = true // the round's first update: change an object late in its walk, delete another
        await s().insert('k1500', -1)
        await s().remove('k1800')
      }
      return target.ops.update(o, ctx)
    },
  }))
  try {
    log.length = 0
    const report = await s.rec.triggerFullReconciliation()
    const fresh = log.findIndex((e) => e.id === 'k1500' && e.value === -1)
    assert.ok(fresh >= 0, 'the change was reconciled')
    const fullBefore = log.slice(0, fresh).filter((e) => e.full).length
    assert.ok(fullBefore <= ROUND, `after at most one chunk of the full round (${fullBefore} full updates before it)`)
    assert.is(s.target.state.get('k1500'), -1, 'the full round did not apply its older copy after the change')
    assert.is(s.target.state.has('k1800'), false, 'nor bring back what was deleted meanwhile')
    assert.is(report.updated, N - 2, 'the round skipped the two objects the incremental round took')
  } finally {
    await s.rec.stop()
  }
})

test('randomized: writes during full rounds, with a Map model; the target ends equal to the table', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ at: fc.nat(N - 1), key: fc.nat(N - 1), del: fc.boolean() }), { minLength: 1, maxLength: 30 }),
      async (writes) => {
        const model = new Map<string, number>()
        for (let i = 0; i < N; i++) model.set(`k${String(i).padStart(4, '0')}`, i)
        const byAt = new Map<number, typeof writes>()
        for (const w of writes) byAt.set(w.at, [...(byAt.get(w.at) ?? []), w])
        let fullUpdates = 0
        let value = N
        const s = await filled((target, s) => ({
          ...target.ops,
          update: async (o, ctx) => {
            if (ctx.full) {
              for (const w of byAt.get(fullUpdates++) ?? []) {
                const id = `k${String(w.key).padStart(4, '0')}`
                if (w.del) {
                  model.delete(id)
                  await s().remove(id)
                } else {
                  model.set(id, ++value)
                  await s().insert(id, value)
                }
              }
            }
            return target.ops.update(o, ctx)
          },
        }))
        try {
          await s.rec.triggerFullReconciliation()
          await waitForSettled(s.db, s.table, s.statusIndex, { signal: within(10_000) })
          assert.equal(new Map([...s.target.state].sort()), new Map([...model].sort()))
        } finally {
          await s.rec.stop()
        }
      },
    ),
    { numRuns: 15, seed: Number(process.env.FC_SEED ?? 42) },
  )
})

test.run()
