// Full reconciliation with a listing hook (`operations.list` + `inSync`) and with batch operations.
//
// The model: a device is a Map id -> value. Randomized (seeded): a desired set, drift of the device
// behind the reconciler's back (values changed, rules removed, extras added), failures of updates,
// deletes and listings. Two reconcilers run the same scenario on two devices, one with the listing
// hook and one without (Update per object and prune): both devices end equal to the table, hence
// to each other, and the listing one makes fewer calls. A failing listing changes nothing and is
// retried on its own (no trigger), so no repair is dropped.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  InMemoryMetrics,
  statusDone,
  statusPending,
  waitForReconciliation,
  type BatchOperations,
  type Operations,
} from '@statewright/reconciler'
import { FakeTarget, setup, sleep, until, within, type Obj, type Setup } from './helpers.ts'
import { rng } from '../../../bench/lib/rng.ts'

const LISTED = statusDone() // the status of listed objects: not compared

/** A device (FakeTarget) with a listing, calls counted, failures from the test. */
class Device extends FakeTarget {
  calls = 0
  listCalls = 0
  failList: () => unknown = () => undefined
  listDelay = 0

  constructor() {
    super()
    const { update, delete: del, prune } = this.ops
    ;(this as { ops: Operations<Obj> }).ops = {
      update: (o, ctx) => (this.calls++, update(o, ctx)),
      delete: (o, ctx) => (this.calls++, del(o, ctx)),
      prune: (desired, ctx) => (this.calls++, prune!(desired, ctx)),
    }
  }

  /** The same operations plus the listing hook. */
  listingOps(): Operations<Obj> {
    return {
      ...this.ops,
      list: async () => {
        this.calls++
        this.listCalls++
        if (this.listDelay > 0) await sleep(this.listDelay)
        const err = this.failList()
        if (err) throw err instanceof Error ? err : new Error(String(err))
        return [...this.state].map(([id, value]) => ({ id, value, status: LISTED }))
      },
      inSync: (desired, listed) => desired.value === listed.value,
    }
  }

  /** Batch operations: one call per batch, each entry through the single operation's effect. */
  batchOps(): BatchOperations<Obj> {
    const each =
      (op: 'update' | 'delete'): BatchOperations<Obj>['updateBatch'] =>
      async (entries, ctx) => {
        this.calls++
        for (const e of entries) {
          this.calls-- // the single operation counts itself: one call for the whole batch
          try {
            const r = await this.ops[op](e.object, { ...ctx, revision: e.revision })
            if (r === true) e.changed = true
          } catch (err) {
            e.error = err
          }
        }
      }
    return { updateBatch: each('update'), deleteBatch: each('delete') }
  }
}

const sorted = (m: Map<string, number>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
const desiredOf = (s: Setup) => new Map([...s.table.all(s.db.readTxn())].map((o) => [o.id, o.value] as const))

/** Until the device holds exactly the table, nothing is pending or failing, every delete reached it. */
async function converged(s: Setup, d: Device, what: string): Promise<void> {
  await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(5000) })
  await until(() => JSON.stringify(sorted(d.state)) === JSON.stringify(sorted(desiredOf(s))), 5000, `${what}: device equals table`)
}

async function scenario(seed: number, batch: boolean): Promise<void> {
  const rand = rng(seed).next
  const keys = 40
  // One random script, played on both sides: [desired writes], then rounds of (drift, writes, full).
  const initial = new Map<string, number>()
  for (let i = 0; i < keys; i++) if (rand() < 0.6) initial.set(`k${i}`, Math.floor(rand() * 5))
  const rounds: Array<{ drift: Array<[string, number | undefined]>; writes: Array<[string, number | undefined]> }> = []
  for (let r = 0; r < 4; r++) {
    const drift: Array<[string, number | undefined]> = []
    const writes: Array<[string, number | undefined]> = []
    for (let i = 0; i < keys; i++) {
      const x = rand()
      if (x < 0.15)
        drift.push([`k${i}`, Math.floor(rand() * 5)]) // changed or an extra
      else if (x < 0.25) drift.push([`k${i}`, undefined]) // removed behind our back
      const y = rand()
      if (y < 0.08) writes.push([`k${i}`, Math.floor(rand() * 5)])
      else if (y < 0.12) writes.push([`k${i}`, undefined])
    }
    rounds.push({ drift, writes })
  }
  const onDevice = [...initial].filter(() => rand() < 0.5)
  const faultSeed = Math.floor(rand() * 2 ** 31)

  const finals: Array<Map<string, number>> = []
  const calls: number[] = []
  for (const listing of [false, true]) {
    const d = new Device()
    const fr = rng(faultSeed).next
    let faulty = true
    d.failUpdate = () => (faulty && fr() < 0.2 ? new Error('random update failure') : undefined)
    d.failDelete = () => (faulty && fr() < 0.2 ? new Error('random delete failure') : undefined)
    d.failList = () => (faulty && fr() < 0.3 ? new Error('random list failure') : undefined)
    d.failPrune = () => (faulty && fr() < 0.2 ? new Error('random prune failure') : undefined)
    const s = setup(
      {
        operations: listing ? d.listingOps() : d.ops,
        ...(batch ? { batchOperations: d.batchOps() } : {}),
        roundSize: 7,
        retry: { minMs: 1, maxMs: 8, jitter: 0.3 },
      },
      d,
    )
    // The device starts with some of the desired rules, wrong values and extras.
    for (const [id, v] of onDevice) d.state.set(id, v === 0 ? 4 : v) // some with a wrong value
    d.state.set('extra-0', 1)
    const write = async (ws: Iterable<readonly [string, number | undefined]>) => {
      const txn = await s.db.writeTxn(s.table)
      for (const [id, v] of ws) {
        if (v === undefined) s.table.delete(txn, { id } as Obj)
        else s.table.insert(txn, { id, value: v, status: statusPending() })
      }
      return s.table.revision(txn.commit())
    }
    await write(initial)
    await s.rec.start()
    try {
      // The first full reconciliation removes the extras the device started with.
      await s.rec.triggerFullReconciliation()
      for (const r of rounds) {
        for (const [id, v] of r.drift) {
          if (v === undefined) d.state.delete(id)
          else d.state.set(id, v)
        }
        await write(r.writes)
        // Retried on its own when its listing (or a prune, an update) fails: no second trigger.
        await s.rec.triggerFullReconciliation()
        await sleep(2)
      }
      faulty = false
      // Without a listing, a last full reconciliation without faults repairs what the last drift
      // left (a prune that failed is not retried before the next one). With a listing nothing more
      // is asked for: a failed listing is retried on its own, failed updates and deletes of extras
      // are in the retry queue.
      if (!listing) await s.rec.triggerFullReconciliation()
      await converged(s, d, `seed ${seed} listing=${listing} batch=${batch}`)
      assert.equal(s.rec.failedDeletes(), [])
      for (const o of s.table.all(s.db.readTxn())) assert.is(o.status.kind, 'done', `${o.id} done`)
      finals.push(new Map(d.state))
      calls.push(d.calls)
    } finally {
      await s.rec.stop()
    }
  }
  assert.equal(sorted(finals[1]!), sorted(finals[0]!), `seed ${seed}: the listing converges to the same device state`)
  // (single operations: about half the calls; with batches the counts are close and depend on timing)
  if (!batch) assert.ok(calls[1]! < calls[0]!, `seed ${seed}: fewer device calls with the listing (${calls[1]} against ${calls[0]})`)
}

test('randomized: with a listing hook the device converges to the same state as without (single operations)', async () => {
  for (let seed = 1; seed <= 12; seed++) await scenario(seed, false)
})

test('randomized: the same with batch operations', async () => {
  for (let seed = 101; seed <= 112; seed++) await scenario(seed, true)
})

test('a failing listing changes nothing, degrades health and is retried on its own until it succeeds', async () => {
  const d = new Device()
  const metrics = new InMemoryMetrics()
  const s = setup({ operations: d.listingOps(), metrics, retry: { minMs: 10, maxMs: 40, jitter: 0 } }, d)
  const messages: string[] = []
  s.rec.onHealth((h) => messages.push(`${h.level}: ${h.message}`))
  await s.rec.start()
  try {
    let rev = 0
    for (let i = 0; i < 5; i++) rev = await s.insert(`k${i}`, i)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    d.state.set('k1', -1)
    d.state.delete('k2')
    d.state.set('stray', 7)
    let failures = 2
    d.failList = () => (failures-- > 0 ? new Error('device busy') : undefined)
    const revBefore = s.table.revision(s.db.readTxn())
    const callsBefore = d.calls
    const report = await s.rec.triggerFullReconciliation()
    assert.is(report.listError, 'device busy')
    assert.is(report.pruneError, 'list failed: device busy')
    assert.is(report.updated, 0)
    assert.is(d.calls - callsBefore, 1, 'only the listing was called')
    assert.is(s.table.revision(s.db.readTxn()), revBefore, 'no status written')
    // No further trigger: the full reconciliation is tried again after the backoff, and repairs.
    await until(() => d.state.get('k1') === 1 && d.state.get('k2') === 2 && !d.state.has('stray'), 3000, 'repaired by a retried listing')
    await until(() => s.rec.health().level === 'ok', 2000, 'health ok again')
    assert.ok(messages.includes('degraded: prune failed: list failed: device busy'), messages.join('\n'))
    const last = s.rec.lastFullReconciliation!
    assert.is(last.listError, undefined)
    assert.is(last.listed, 5)
    assert.is(last.extras, 1)
    assert.is(last.inSync, 3)
    assert.is(last.updated, 2)
    assert.is(last.outOfSync, 2)
    assert.is(d.listCalls, 3)
    assert.is(metrics.get(s.rec.name).fullRuns, 3)
  } finally {
    await s.rec.stop()
  }
})

test('with a listing: in-sync objects get no call and nothing is written; pending objects are neither extras nor updated by the full round', async () => {
  const d = new Device()
  const s = setup({ operations: d.listingOps() }, d)
  await s.rec.start()
  try {
    let rev = 0
    for (let i = 0; i < 20; i++) rev = await s.insert(`k${i}`, i)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    const callsBefore = d.calls
    const revBefore = s.table.revision(s.db.readTxn())
    const report = await s.rec.triggerFullReconciliation()
    assert.equal({ ...report, durationMs: 0 }, { updated: 0, outOfSync: 0, errors: 0, durationMs: 0, listed: 20, inSync: 20, extras: 0 })
    assert.is(d.calls - callsBefore, 1, 'one call: the listing')
    assert.is(s.table.revision(s.db.readTxn()), revBefore)

    // A pending object the device holds with another value, inserted while the listing is under
    // way (the diff reads the table after the listing): the full round leaves it to the incremental
    // round (held until the checks below).
    d.listDelay = 30
    await sleep(20) // the loop is idle (the round after the first full reconciliation is over)
    let held: (() => void) | undefined
    d.hold = (op, o) => (op === 'update' && o.id === 'p' ? new Promise<void>((r) => (held = r)) : undefined)
    d.state.set('p', 99)
    const full = s.rec.triggerFullReconciliation()
    await s.insert('p', 1)
    const r2 = await full
    assert.is(d.state.get('p'), 99, 'not deleted as an extra, not updated by the full round')
    assert.is(r2.extras, 0)
    await until(() => held !== undefined, 2000, 'the incremental update of p')
    held!()
    await until(() => d.state.get('p') === 1, 2000, 'p updated')
  } finally {
    await s.rec.stop()
  }
})

test('a failed delete of an extra is queued as a delete retry and retried until it succeeds', async () => {
  const d = new Device()
  const s = setup({ operations: d.listingOps(), retry: { minMs: 5, maxMs: 10, jitter: 0 } }, d)
  await s.rec.start()
  try {
    const rev = await s.insert('a', 1)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    d.state.set('x', 5)
    let fails = 2
    d.failDelete = (o) => (o.id === 'x' && fails-- > 0 ? new Error('locked') : undefined)
    const report = await s.rec.triggerFullReconciliation()
    assert.is(report.extras, 1)
    assert.is(report.errors, 1)
    assert.equal(
      s.rec.failedDeletes().map((f) => [f.key, f.error]),
      [['x', 'locked']],
    )
    await waitForReconciliation(s.db, s.table, s.statusIndex, { signal: within(2000) })
    assert.is(d.state.has('x'), false)
    assert.equal(s.rec.failedDeletes(), [])
  } finally {
    await s.rec.stop()
  }
})

test('full reconciliation uses batch operations when given: one updateBatch per chunk, changed entries out of sync', async () => {
  const d = new Device()
  const batchOperations = d.batchOps()
  let batches = 0
  const counted: BatchOperations<Obj> = {
    updateBatch: (entries, ctx) => {
      batches++
      assert.is(ctx.full, batches > 2, 'the incremental batches, then the full ones')
      return batchOperations.updateBatch(entries, ctx)
    },
    deleteBatch: batchOperations.deleteBatch,
  }
  const s = setup({ batchOperations: counted, roundSize: 10 }, d)
  const txn = await s.db.writeTxn(s.table)
  for (let i = 0; i < 20; i++) s.table.insert(txn, { id: `k${i}`, value: i, status: statusPending() })
  const rev = s.table.revision(txn.commit())
  await s.rec.start()
  try {
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.is(batches, 2)
    d.state.set('k3', -1)
    d.state.delete('k15')
    const callsBefore = d.calls
    const report = await s.rec.triggerFullReconciliation()
    assert.is(batches, 4, 'two chunks of 10')
    assert.is(d.calls - callsBefore, 3, 'prune and two batch calls, no Update per object')
    assert.is(report.updated, 20)
    assert.is(report.outOfSync, 2)
    assert.is(d.state.get('k3'), 3)
    assert.is(d.state.get('k15'), 15)
  } finally {
    await s.rec.stop()
  }
})

test('an inSync that throws counts as out of sync: Update runs, the loop goes on', async () => {
  const d = new Device()
  const ops = d.listingOps()
  const s = setup(
    {
      operations: {
        ...ops,
        inSync: (a, b) => {
          if (a.id === 'k1') throw new Error('boom')
          return ops.inSync!(a, b)
        },
      },
    },
    d,
  )
  await s.rec.start()
  try {
    const rev = (await s.insert('k0', 0), await s.insert('k1', 1))
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    const report = await s.rec.triggerFullReconciliation()
    assert.is(report.updated, 1)
    assert.is(report.inSync, 1)
    assert.is(s.rec.health().level, 'ok')
    assert.ok(s.rec.isRunning)
  } finally {
    await s.rec.stop()
  }
})

test('list and inSync go together', () => {
  const d = new Device()
  const { list } = d.listingOps()
  assert.throws(() => setup({ operations: { ...d.ops, list } }, d), /operations.list and operations.inSync go together/)
})

test.run()
