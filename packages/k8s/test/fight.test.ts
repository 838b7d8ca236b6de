// Fighting controllers: a second writer reverts a managed ConfigMap every time it changes, for 10 s.
// Drift repair backs off per object, so statewright's writes to it stay under a stated bound (without
// backoff it rewrites at full speed, hundreds of times), and the fight is reported in health, to
// onFight and as a Warning Event that names the other field manager.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB } from '@statewright/statedb'
import { waitForSettled } from '@statewright/reconciler'
import {
  DriftWatcher,
  EventRecorder,
  Reflector,
  Target,
  desired,
  holds,
  newDesiredTable,
  targetReconciler,
  type Fight,
  type KubeObject,
} from '@statewright/k8s'
import { RepairPacer, otherManager } from '../src/repairs.ts'
import { clusterFor, objectTable, startServer } from './helpers.ts'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const PATH = '/api/v1/namespaces/default/configmaps/contested'
const FIGHT_MS = 10_000
// repairs at +0, 0.1, 0.2, 0.4, 0.8, 1.6 s, then every 2 s: about 10 in 10 s; 15 leaves room for load
const MAX_OUR_WRITES = 15

test('a reverting writer for 10 s: repairs back off, the fight is reported with the other manager', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const d = newDesiredTable()
  const observed = objectTable('observed')
  const db = new DB({ tables: [d.table, observed] })
  const target = new Target({ clusters: cluster, fieldManager: 'test-controller', kinds: [CM] })
  const rec = targetReconciler(db, d, target, { retry: { minMs: 20, maxMs: 200 } })
  const events = new EventRecorder({ cluster, component: 'test-controller' })
  const reflector = new Reflector({
    cluster,
    db,
    table: observed,
    kind: CM,
    labelSelector: 'statewright.io/owner=test-controller',
    keepManagedFields: true,
  })
  const fights: Fight[] = []
  const drift = new DriftWatcher({
    db,
    observed,
    desired: d,
    fieldManager: 'test-controller',
    events,
    pacing: { retry: { minMs: 100, maxMs: 2000 }, windowMs: 30_000, fightRepairs: 5 },
    onFight: (f) => fights.push(f),
  })
  let stopRival = () => {}
  try {
    rec.start()
    await reflector.start()
    drift.start()
    const want: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'contested', namespace: 'default' },
      data: { x: 'ours' },
    }
    await db.write(d.table, (w) => {
      d.table.insert(w, desired(want))
    })
    await waitForSettled(db, d.table, d.statusIndex, { signal: AbortSignal.timeout(10_000) })
    assert.is(drift.health().level, 'ok')

    // the rival: on every change that is not its value, it writes its value back at once
    let reverts = 0
    let busy = false
    let again = false
    const revert = async (): Promise<void> => {
      if (busy) {
        again = true
        return
      }
      busy = true
      try {
        do {
          again = false
          const cur = server.control.get(CM, 'contested', 'default')
          if (cur && cur.data?.x !== 'theirs') {
            await cluster.request({
              method: 'PATCH',
              path: PATH,
              query: { fieldManager: 'rival-controller' },
              body: { data: { x: 'theirs' } },
              contentType: 'application/merge-patch+json',
            })
            reverts++
          }
        } while (again)
      } finally {
        busy = false
      }
    }
    const unsubscribe = server.server.store.subscribe('/configmaps', (ev) => {
      if (ev.object?.metadata?.name === 'contested') void revert()
    })
    stopRival = unsubscribe
    server.control.clearRequestLog()
    await revert()
    await new Promise((r) => setTimeout(r, FIGHT_MS)) // the fight lasts 10 s by design; nothing is awaited on it
    unsubscribe()

    const ours = server.control
      .requestLog()
      .filter((e) => e.method === 'PATCH' && e.path === PATH && e.query.fieldManager === 'test-controller')
    assert.ok(reverts >= 6, `the rival reverted ${reverts} times: the fight happened`)
    assert.ok(ours.length <= MAX_OUR_WRITES, `statewright wrote the object ${ours.length} times in 10 s (bound ${MAX_OUR_WRITES})`)
    assert.ok(ours.length >= 5, `statewright kept repairing (${ours.length} writes)`)

    assert.is(fights.length, 1, 'one fight reported')
    assert.is(fights[0]!.otherManager, 'rival-controller')
    const h = drift.health()
    assert.is(h.level, 'degraded')
    assert.match(h.message, 'rival-controller')
    assert.equal(
      drift.fights().map((f) => f.otherManager),
      ['rival-controller'],
    )
    await events.flush()
    const list = await cluster.request({ path: '/api/v1/namespaces/default/events' })
    const warn = list.items.find((e: any) => e.reason === 'FightingWriter')
    assert.ok(warn, 'a Warning Event')
    assert.is(warn.type, 'Warning')
    assert.is(warn.involvedObject.name, 'contested')
    assert.match(warn.message, 'field manager "rival-controller"')
  } finally {
    stopRival()
    await drift.stop()
    await rec.stop()
    await reflector.stop()
    await events.close()
    await cluster.close()
    await server.stop()
  }
})

test('RepairPacer: immediate first repair, doubling delays up to the cap, a fight once past the limit, reset after a quiet window', () => {
  let now = 0
  const p = new RepairPacer({ retry: { minMs: 100, maxMs: 400 }, windowMs: 10_000, fightRepairs: 3 }, () => now)
  const delays: number[] = []
  const started: Array<string | undefined> = []
  for (let i = 0; i < 6; i++) {
    const due = Math.max(now, p.dueAt('k'))
    delays.push(due - now)
    now = due
    started.push(p.repaired('k', 'rival')?.otherManager)
  }
  assert.equal(delays, [0, 100, 200, 400, 400, 400])
  // a fight longer than the window keeps the delay at the cap (repairs aging out of the window do not lower it)
  let t = 0
  const slow = new RepairPacer({ retry: { minMs: 1000, maxMs: 8000 }, windowMs: 10_000, fightRepairs: 3 }, () => t)
  const gaps: number[] = []
  for (let i = 0; i < 10; i++) {
    const due = Math.max(t, slow.dueAt('s'))
    gaps.push(due - t)
    t = due
    slow.repaired('s', 'rival')
  }
  assert.equal(gaps, [0, 1000, 2000, 4000, 8000, 8000, 8000, 8000, 8000, 8000])
  // a cap longer than the window: the backoff does not reset itself
  let u = 0
  const long = new RepairPacer({ retry: { minMs: 20_000, maxMs: 300_000 }, windowMs: 60_000 }, () => u)
  const longGaps: number[] = []
  for (let i = 0; i < 7; i++) {
    const due = Math.max(u, long.dueAt('l'))
    longGaps.push(due - u)
    u = due
    long.repaired('l', undefined)
  }
  assert.equal(longGaps, [0, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000])
  assert.equal(started, [undefined, undefined, undefined, 'rival', undefined, undefined], 'the fight starts once, on the 4th repair')
  assert.equal(
    p.fights().map((f) => [f.key, f.repairs]),
    [['k', 6]],
  )
  now += 10_001 // quiet for a whole window
  assert.is(p.dueAt('k'), 0, 'starts over: immediate again')
  assert.equal(p.fights(), [])
})

test('holds: lists of objects match by item in any order, with room for items others added; scalar lists exactly', () => {
  const want: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    spec: { containers: [{ name: 'app', image: 'a:1' }], args: ['x', 'y'] },
  }
  const obs = (containers: unknown[], args = ['x', 'y']): KubeObject => ({ ...want, spec: { containers, args } })
  assert.ok(holds(obs([{ name: 'app', image: 'a:1', ports: [] }]), want), 'extra fields in our item')
  assert.ok(
    holds(
      obs([
        { name: 'sidecar', image: 's' },
        { name: 'app', image: 'a:1' },
      ]),
      want,
    ),
    'a sidecar another manager injected, ours second',
  )
  assert.not.ok(holds(obs([{ name: 'app', image: 'a:2' }]), want), 'our item changed')
  assert.not.ok(holds(obs([{ name: 'sidecar', image: 's' }]), want), 'our item gone')
  assert.not.ok(holds(obs([{ name: 'app', image: 'a:1' }], ['y', 'x']), want), 'scalar lists keep their order')
})

test('otherManager: the latest manager that is not ours', () => {
  const obj = {
    metadata: {
      managedFields: [
        { manager: 'rival', time: '2026-01-01T00:00:02Z' },
        { manager: 'ours', time: '2026-01-01T00:00:03Z' },
        { manager: 'old', time: '2026-01-01T00:00:01Z' },
      ],
    },
  }
  assert.is(otherManager(obj, 'ours'), 'rival')
  assert.is(otherManager({ metadata: {} }, 'ours'), undefined)
})

test.run()
