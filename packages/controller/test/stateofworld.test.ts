// State-of-world reconciliation: effective-policy strategies, and the controller's contract on the test server: no run before sync, one run at a time, events coalesced
// while a run is busy, a failing run retried with backoff keeping its events, health naming the error.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { startTestServer } from '@statewright/testserver'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { createLogger, waitForConvergence } from '@statewright/controller'
import { StateOfWorldController } from '@statewright/controller/stateofworld'
import { Topology, defineTopology, effectivePolicy, gatewayApiTopology, type PolicySpec } from '@statewright/topology'
import { gatewayTables, gateway, route, policy } from '../../topology/test/topology-fixtures.ts'
import { sameStatus } from '../src/stateofworld/statuswrites.ts'

const spec = (mode: 'defaults' | 'overrides', strategy: 'atomic' | 'merge', ...names: string[]): PolicySpec<number> => ({
  mode,
  strategy,
  rules: Object.fromEntries(names.map((n) => [n, 1])),
})

test('effective policy: atomic/merge defaults/overrides reduced from the most specific, older policies less specific', async () => {
  const t = gatewayTables()
  const top = new Topology(
    gatewayApiTopology({
      tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes },
      services: false,
      policies: [{ kind: 'P', group: 'kuadrant.io', table: t.policies }],
    }),
    { db: t.db },
  )
  const specs = new Map<string, PolicySpec<number>>()
  const put = async (name: string, kind: string, target: string, s: PolicySpec<number>, created = '2026-01-01T00:00:00Z') => {
    specs.set(name, s)
    await t.db.write(t.policies, (w) => {
      t.policies.insert(w, policy('default', name, { kind, name: target }, {}, created))
    })
  }
  await t.db.write([t.gateways, t.routes], (w) => {
    t.gateways.insert(w, gateway('default', 'gw'))
    t.routes.insert(w, route('default', 'r', ['gw']))
  })
  const eff = async () => {
    await top.sync()
    const v = top.view()
    const [path] = v.paths('gateway.gateway.networking.k8s.io:default/gw', 'httproute.gateway.networking.k8s.io:default/r#rule-1')
    return effectivePolicy(v, path!, (p) => specs.get(p.name)).rules.map((r) => `${r.name}@${r.source.split('/').pop()}`)
  }
  await put('route', 'HTTPRoute', 'r', spec('defaults', 'atomic', 'a', 'b'))
  await put('gw', 'Gateway', 'gw', spec('defaults', 'atomic', 'a', 'c'))
  assert.equal(await eff(), ['a@route', 'b@route'], 'atomic defaults: the more specific wins whole')
  specs.set('gw', spec('defaults', 'merge', 'a', 'c'))
  await put('gw', 'Gateway', 'gw', specs.get('gw')!)
  assert.equal(await eff(), ['a@route', 'b@route', 'c@gw'], 'merge defaults: adds missing names')
  await put('gw', 'Gateway', 'gw', spec('overrides', 'merge', 'a', 'c'))
  assert.equal(await eff(), ['a@gw', 'b@route', 'c@gw'], 'merge overrides: its rules win, others stay')
  await put('gw', 'Gateway', 'gw', spec('overrides', 'atomic', 'c'))
  assert.equal(await eff(), ['c@gw'], 'atomic overrides: replaces whole')
  // same target: the older is less specific, so the newer one's atomic defaults win
  await put('gw', 'Gateway', 'gw', spec('defaults', 'atomic'))
  await put('route-new', 'HTTPRoute', 'r', spec('defaults', 'atomic', 'z'), '2026-02-01T00:00:00Z')
  assert.equal(await eff(), ['z@route-new'])
  await put('route-new', 'HTTPRoute', 'r', spec('defaults', 'atomic', 'z'), '2025-01-01T00:00:00Z')
  assert.equal(await eff(), ['a@route', 'b@route'], 'now older: less specific')
})

test('controller: no run before sync, one run at a time, events coalesced, a failing run retried with its events', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const CM = '/api/v1/namespaces/default/configmaps'
  const put = (name: string, v: string) =>
    cluster.request({
      method: 'PATCH',
      path: `${CM}/${name}`,
      query: { fieldManager: 'user', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', labels: { app: 'src' } }, data: { v } },
    })
  await put('pre-1', '1')
  await put('pre-2', '1')
  const runs: string[][] = []
  let running = 0
  let maxRunning = 0
  let gate: Promise<void> | undefined
  let open: () => void = () => {}
  let failNext = 0
  const ctl = new StateOfWorldController({
    name: 'sow',
    clusters: [cluster],
    logger: createLogger({ level: 'silent' }),
    retry: { minMs: 10, maxMs: 50 },
    watch: [{ kind: { apiVersion: 'v1', kind: 'ConfigMap' }, labelSelector: 'app=src' }],
    topology: defineTopology({ targetables: [{ kind: 'ConfigMap' }], links: [] }),
    reconcile: async (ctx) => {
      running++
      maxRunning = Math.max(maxRunning, running)
      try {
        runs.push(
          ctx.events
            .map(
              (e) =>
                `${e.type} ${(e.new ?? e.old)!.metadata.name}${e.new ? `=${(e.new as KubeObject & { data: { v: string } }).data.v}` : ''}`,
            )
            .sort(),
        )
        assert.equal(ctx.topology.nodes('ConfigMap').length, ctx.table('ConfigMap').count(ctx.txn), 'the topology is of the same snapshot')
        if (gate) await gate
        if (failNext > 0) {
          failNext--
          throw new Error('downstream unavailable')
        }
      } finally {
        running--
      }
    },
  })
  const m = ctl.manager
  try {
    await ctl.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.equal(runs[0], ['create pre-1=1', 'create pre-2=1'], 'the first run sees every object of the synced kinds')
    // block a run, change things meanwhile
    gate = new Promise((resolve) => {
      open = resolve
    })
    await put('a', '1')
    await waitUntil(() => running === 1)
    await put('a', '2')
    await put('b', '1')
    await cluster.request({ method: 'DELETE', path: `${CM}/b` })
    await put('pre-1', '2')
    await waitForTable(
      m,
      'configmaps',
      (objs) =>
        objs
          .map((o) => `${o.metadata.name}=${(o as any).data.v}`)
          .sort()
          .join() === 'a=2,pre-1=2,pre-2=1',
    )
    gate = undefined
    open()
    failNext = 2
    await waitForConvergence(m, { timeoutMs: 10_000 })
    const last = runs.slice(-3)
    assert.equal(last[0], ['create a=1'], 'the blocked run (it fails)')
    assert.equal(
      last[1],
      ['create a=2', 'update pre-1=2'],
      'its events kept and coalesced with the new: a created and updated is one create with the newest; b created and deleted is nothing',
    )
    assert.equal(last[2], last[1], 'the failed run is retried with the same events')
    assert.equal(maxRunning, 1, 'one run at a time')
    assert.is(ctl.stats().failures, 2)
  } finally {
    open()
    await ctl.stop()
    await cluster.close()
    await server.stop()
  }
})

test('mode stateOfWorld: a kind listed again before every run, its differences as events', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const put = (kind: 'ConfigMap' | 'Secret', name: string, v: string) =>
    cluster.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/default/${kind === 'ConfigMap' ? 'configmaps' : 'secrets'}/${name}`,
      query: { fieldManager: 'user', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'v1',
        kind,
        metadata: { name, namespace: 'default' },
        data: { v: Buffer.from(v).toString(kind === 'Secret' ? 'base64' : 'utf8') },
      },
    })
  const runs: Array<{ events: string[]; secrets: string[] }> = []
  const ctl = new StateOfWorldController({
    name: 'listed',
    clusters: [cluster],
    logger: createLogger({ level: 'silent' }),
    watch: [{ kind: { apiVersion: 'v1', kind: 'ConfigMap' } }, { kind: { apiVersion: 'v1', kind: 'Secret' }, mode: 'stateOfWorld' }],
    topology: defineTopology({ targetables: [{ kind: 'ConfigMap' }], links: [] }),
    reconcile: (ctx) => {
      runs.push({
        // every namespace's kube-root-ca.crt ConfigMap (as on a real cluster) is not this test's
        events: ctx.events
          .map((e) => `${e.type} ${e.kind} ${(e.new ?? e.old)!.metadata.name}`)
          .filter((e) => !e.endsWith(' kube-root-ca.crt'))
          .sort(),
        secrets: ctx
          .table('Secret')
          .all(ctx.txn)
          .toArray()
          .map((x) => x.metadata.name!),
      })
    },
  })
  try {
    await put('Secret', 's1', 'a')
    await ctl.start()
    await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    assert.equal(runs[0], { events: ['create Secret s1'], secrets: ['s1'] }, 'listed before the first run')
    await put('Secret', 's2', 'b') // no watch: nothing runs
    await put('ConfigMap', 'c', 'x') // a watched change runs, and lists first
    await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    const last = runs.at(-1)!
    assert.equal(last.secrets, ['s1', 's2'])
    assert.ok(
      runs.some((r) => r.events.includes('create Secret s2')),
      'the listed difference is an event',
    )
  } finally {
    await ctl.stop()
    await cluster.close()
    await server.stop()
  }
})

async function waitUntil(f: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!f()) {
    if (Date.now() > end) throw new Error('condition not met')
    await new Promise((r) => setImmediate(r))
  }
}
async function waitForTable(
  m: { db: import('@statewright/statedb').DB; watched: ReadonlyMap<string, { table: import('@statewright/statedb').Table<KubeObject> }> },
  name: string,
  ok: (objs: KubeObject[]) => boolean,
): Promise<void> {
  const t = m.watched.get(name)!.table
  for (;;) {
    const txn = m.db.readTxn()
    if (ok(t.all(txn).toArray())) return
    await t.allWatch(txn)[1].wait(AbortSignal.timeout(5000))
  }
}

test('a status the server holds with its keys in another order is the same status; a changed value is not', () => {
  // as an API server returns it: keys in its own order, no undefined fields
  const obj = {
    apiVersion: 'example.com/v1',
    kind: 'Policy',
    metadata: { name: 'p', namespace: 'ns', generation: 3 },
    status: { observedGeneration: 3, summary: { routes: 2, gateways: 1 } },
  } as KubeObject
  assert.ok(sameStatus(obj, { observedGeneration: 3, summary: { gateways: 1, routes: 2, missing: undefined } }))
  assert.not.ok(sameStatus(obj, { observedGeneration: 3, summary: { gateways: 1, routes: 3 } }))
  assert.not.ok(sameStatus(obj, { observedGeneration: 4 }))
})

test.run()
