// The Manager end to end on the test server: watch -> derive -> apply, waitForConvergence (updates
// and deletes), the HTTP server (healthz, readyz, statusz, metrics with controller-runtime names,
// statedb inspection, bearer token, read-only), and bad input (start twice, a port in use, a derived
// object without a name).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer } from 'node:net'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'

const SITE = { apiVersion: 'demo.statewright.io/v1', kind: 'Site' }
const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const SITE_KIND = { group: 'demo.statewright.io', version: 'v1', resource: 'sites', kind: 'Site' }
const quiet = createLogger({ level: 'silent' })

async function setup(opts: { token?: string; fn?: (s: KubeObject) => KubeObject } = {}) {
  const server = await startTestServer({ kinds: [SITE_KIND] })
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const m = new Manager({
    name: 'site-controller',
    cluster,
    logger: quiet,
    handleSignals: false,
    http: { port: 0, ...(opts.token ? { token: opts.token } : {}) },
    retry: { minMs: 20, maxMs: 200 },
  })
  const sites = m.watch(SITE)
  m.derive({
    from: sites,
    owns: [CM],
    fn:
      opts.fn ??
      ((site) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `site-${site.metadata.name}`, namespace: site.metadata.namespace },
        data: { title: String((site.spec as any)?.title ?? '') },
      })),
  })
  const putSite = (name: string, title: string) =>
    cluster.request({
      method: 'PATCH',
      path: `/apis/demo.statewright.io/v1/namespaces/default/sites/${name}`,
      query: { fieldManager: 'user', force: true },
      body: { ...SITE, metadata: { name, namespace: 'default' }, spec: { title } },
      contentType: 'application/apply-patch+yaml',
    })
  const delSite = (name: string) =>
    cluster.request({ method: 'DELETE', path: `/apis/demo.statewright.io/v1/namespaces/default/sites/${name}` })
  const done = async () => {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
  return { server, cluster, m, sites, putSite, delSite, done }
}
const cmOf = (server: RunningTestServer, name: string) => server.control.get(CM, name, 'default')

test('watch -> derive -> apply; waitForConvergence sees updates and deletes', async () => {
  const t = await setup()
  try {
    await t.putSite('a', 'Alpha')
    await t.m.start()
    await waitForConvergence(t.m, { timeoutMs: 10_000 })
    assert.is(cmOf(t.server, 'site-a').data.title, 'Alpha', 'the first list is derived and applied')
    assert.is(cmOf(t.server, 'site-a').metadata.labels['statewright.io/owner'], 'site-controller')
    await t.putSite('b', 'Beta')
    await t.putSite('a', 'Alpha 2')
    const r = await waitForConvergence(t.m, { timeoutMs: 10_000 })
    assert.equal(r.errors, [])
    assert.is(cmOf(t.server, 'site-a').data.title, 'Alpha 2')
    assert.is(cmOf(t.server, 'site-b').data.title, 'Beta')
    await t.delSite('b')
    await waitForConvergence(t.m, { timeoutMs: 10_000 })
    assert.is(cmOf(t.server, 'site-b'), undefined, 'a deleted Site takes its ConfigMap')
  } finally {
    await t.done()
  }
})

test('HTTP: healthz, readyz, statusz, metrics (controller-runtime names), statedb; read-only; bearer token', async () => {
  const t = await setup({ token: 's3cret' })
  try {
    await t.putSite('a', 'Alpha')
    await t.m.start()
    await waitForConvergence(t.m, { timeoutMs: 10_000 })
    const get = (path: string, token: string | null = 's3cret', method = 'GET') =>
      fetch(t.m.url + path, { method, headers: token ? { authorization: `Bearer ${token}` } : {} })
    assert.is((await get('/healthz', null)).status, 401, 'no token')
    assert.is((await get('/healthz', 'wrong')).status, 401, 'wrong token')
    assert.is((await get('/healthz')).status, 200)
    const ready = await get('/readyz')
    assert.is(ready.status, 200, await ready.clone().text())
    assert.is((await get('/readyz', 's3cret', 'POST')).status, 405, 'read-only')
    const metrics = await (await get('/metrics')).text()
    for (const name of [
      'controller_runtime_reconcile_total',
      'controller_runtime_reconcile_time_seconds',
      'workqueue_depth',
      'rest_client_requests_total',
      'leader_election_master_status',
      'statewright_k8s_reflector_objects',
    ]) {
      assert.match(metrics, name, name)
    }
    assert.match(metrics, /controller_runtime_reconcile_total\{controller="site-controller",result="success"\} [1-9]/)
    assert.match(metrics, /rest_client_requests_total\{code="200",method="GET",host="127\.0\.0\.1:\d+"\} [1-9]/)
    const status: any = await (await get('/statusz')).json()
    assert.is(status.ready, true)
    assert.equal(status.reflectors.map((r: any) => r.name).sort(), ['owned-configmaps', 'sites'])
    const tables: any = await (await get('/statedb/tables')).json()
    assert.ok(tables.some((x: any) => x.name === 'desired'))
    assert.is(new URL(t.m.url!).hostname, '127.0.0.1', 'loopback by default')
  } finally {
    await t.done()
  }
  const after = await fetch(t.m.url + '/healthz').catch(() => undefined)
  assert.is(after, undefined, 'the server is closed by stop()')
})

test('readiness is not lost to a per-object error: a derived object without a name is an error naming the input', async () => {
  const t = await setup({
    fn: (site) =>
      ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: site.metadata.name === 'bad' ? { namespace: 'default' } : { name: `site-${site.metadata.name}`, namespace: 'default' },
      }) as KubeObject,
  })
  try {
    await t.putSite('good', 'G')
    await t.putSite('bad', 'B')
    await t.m.start()
    await waitForConvergence(t.m, { timeoutMs: 10_000 })
    const d = t.m.derivations[0]!
    assert.equal(
      d.failures().map((f) => [f.input, f.error]),
      [['sites default/bad', 'output refused: the ConfigMap has no metadata.name']],
    )
    assert.ok(cmOf(t.server, 'site-good'), 'the rest goes on')
    assert.is(t.m.readiness().ready, true, t.m.readiness().reasons.join('; '))
    const status: any = await (await fetch(t.m.url + '/statusz')).json()
    assert.is(status.derivations[0].level, 'degraded')
    assert.match(status.derivations[0].message, 'sites default/bad')
  } finally {
    await t.done()
  }
})

test('bad input: start twice throws; a port in use fails start with a clear message', async () => {
  const t = await setup()
  try {
    await t.m.start()
    await t.m.start().then(
      () => assert.unreachable('second start'),
      (err) => assert.match(err.message, 'start() was already called'),
    )
    assert.throws(() => t.m.watch(CM), /must be called before start/)
  } finally {
    await t.done()
  }
  const blocker = createServer()
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
  const port = (blocker.address() as any).port
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig })
  const m = new Manager({ name: 'x', cluster, logger: quiet, handleSignals: false, http: { port } })
  try {
    await m.start().then(
      () => assert.unreachable('port in use'),
      (err) => assert.match(err.message, `port ${port} on 127.0.0.1 is in use`),
    )
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
    await new Promise((r) => blocker.close(r))
  }
})

test.run()
