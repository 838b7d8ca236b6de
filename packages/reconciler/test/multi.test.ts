import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { newStatusSetIndex, Reconciler, StatusSet, waitForSettled, type Status } from '@statewright/reconciler'
import { deferred, FakeTarget, within } from './helpers.ts'

interface Route {
  readonly dest: string
  readonly via: number
  readonly statuses: StatusSet
}

test('several reconcilers serve one table, each with its own status in a status set', async () => {
  const byDest = defineIndex<Route, string>({ name: 'dest', key: (r) => r.dest, unique: true })
  const statusIndex = newStatusSetIndex<Route>((r) => r.statuses)
  const routes = new Table<Route>({ name: 'routes', primary: byDest, indexes: [statusIndex] })
  const db = new DB({ tables: [routes] })
  const names = ['kernel', 'bgp'] as const
  const targets = { kernel: new FakeTarget(), bgp: new FakeTarget() }
  // The bgp target is held until the kernel reconciler is done: every bgp write-back then meets
  // kernel's status writes (its compare-and-swap fails, the status-id check must save the result).
  const kernelDone = deferred()
  targets.bgp.hold = () => kernelDone.promise
  const recs = names.map(
    (name) =>
      new Reconciler<Route>({
        name,
        db,
        table: routes,
        statusIndex,
        primaryKey: (r) => r.dest,
        getObjectStatus: (r) => r.statuses.get(name),
        setObjectStatus: (r, s: Status) => ({ ...r, statuses: r.statuses.set(name, s) }),
        operations: {
          update: (r, ctx) => targets[name].ops.update({ id: r.dest, value: r.via, status: r.statuses.get(name) }, ctx),
          delete: (r, ctx) => targets[name].ops.delete({ id: r.dest, value: r.via, status: r.statuses.get(name) }, ctx),
        },
        retry: { minMs: 5, maxMs: 20 },
      }),
  )
  for (let round = 0; round < 5; round++) {
    const txn = await db.writeTxn(routes)
    for (let i = 0; i < 20; i++)
      routes.insert(txn, { dest: `10.0.${i}.0/24`, via: round * 100 + i, statuses: StatusSet.pending([...names]) })
    txn.commit()
  }
  for (const r of recs) r.start()
  try {
    const del = await db.writeTxn(routes)
    routes.delete(del, { dest: '10.0.0.0/24' } as Route)
    const rev = routes.revision(del.commit())
    await recs[0]!.waitForRevision(rev, { signal: within(3000) })
    await waitForSettled(db, routes, statusIndex, { name: 'kernel', signal: within(3000) })
    kernelDone.resolve()
    for (const r of recs) await r.waitForRevision(rev, { signal: within(3000) })
    for (const name of names) {
      const errors = await waitForSettled(db, routes, statusIndex, { name, signal: within(3000) })
      assert.equal(errors, [])
      const want = new Map<string, number>()
      for (const r of routes.all(db.readTxn())) want.set(r.dest, r.via)
      assert.equal(new Map([...targets[name].state].sort()), new Map([...want].sort()), `${name} target equals the table`)
      assert.is(routes.list(db.readTxn(), statusIndex.kind('done', name)).count(), 19)
      // The other reconciler's status writes must not make this one redo its work: the final
      // version of each route reached this target exactly once.
      for (const [dest, via] of want) {
        const n = targets[name].log.filter((e) => e.op === 'update' && e.id === dest && e.value === via).length
        assert.is(n, 1, `${name}: final version of ${dest} updated ${n} times`)
      }
    }
    // Each reconciler's final write-back must not have been lost to the other's.
    for (const r of routes.all(db.readTxn())) {
      assert.is(r.statuses.get('kernel').kind, 'done')
      assert.is(r.statuses.get('bgp').kind, 'done')
    }
    assert.throws(() => statusIndex.kind('pending'), /give the reconciler name/)
  } finally {
    for (const r of recs) await r.stop()
  }
})

test('StatusSet: absent names read as pending; set and pending copy', () => {
  const s = StatusSet.pending(['a'])
  assert.is(s.get('a').kind, 'pending')
  assert.is(s.get('zzz').kind, 'pending')
  assert.is(s.get('zzz').id, s.get('a').id, 'an absent name reads with the set id')
  const d = s.set('a', { kind: 'done', updatedAt: 1, id: 7 })
  assert.is(s.get('a').kind, 'pending', 'immutable')
  assert.is(d.get('a').kind, 'done')
  assert.is(d.get('zzz').id, s.get('zzz').id, 'set() keeps the set id')
  const p = d.pending()
  assert.is(p.get('a').kind, 'pending')
  assert.ok(p.get('a').id > s.get('a').id, 'a new pending mark has a new id')
  assert.is(p.get('zzz').id, p.get('a').id, 'and the absent names follow it')
})

test.run()
