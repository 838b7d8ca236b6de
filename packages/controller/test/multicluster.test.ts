// A Manager over two clusters: Sites watched in "east" place a ConfigMap in east and one in west
// (inCluster); both are applied, repaired after drift in their own cluster, and deleted with the Site;
// waitForConvergence lists each reflector against its own cluster.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { startTestServer } from '@statewright/testserver'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { Manager, createLogger, inCluster, waitForConvergence } from '@statewright/controller'

const SITE = { apiVersion: 'demo.statewright.io/v1', kind: 'Site' }
const CM = { apiVersion: 'v1', kind: 'ConfigMap' }

test('derived objects placed in two clusters follow their input, each repaired in its own cluster', async () => {
  const [eastServer, westServer] = await Promise.all([
    startTestServer({ name: 'east', kinds: [{ group: 'demo.statewright.io', version: 'v1', resource: 'sites', kind: 'Site' }] }),
    startTestServer({ name: 'west' }),
  ])
  const east = new Cluster({ kubeconfig: eastServer.kubeconfig, name: 'east', qps: 0 })
  const west = new Cluster({ kubeconfig: westServer.kubeconfig, name: 'west', qps: 0 })
  const m = new Manager({
    name: 'spread',
    cluster: east,
    clusters: [west],
    http: false,
    handleSignals: false,
    logger: createLogger({ level: 'silent' }),
    drift: { retry: { minMs: 10, maxMs: 50 } },
  })
  const sites = m.watch(SITE)
  const cm = (site: KubeObject): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `site-${site.metadata.name}`, namespace: 'default' },
    data: { from: String(site.metadata.name) },
  })
  m.derive({ from: sites, owns: [CM], fn: (site) => [cm(site), inCluster('west', cm(site))] })
  assert.throws(() => new Manager({ name: 'x', cluster: east, clusters: [east], http: false }), /two clusters are named "east"/)
  const get = (server: typeof eastServer, name: string) => server.control.get(CM, name, 'default')
  try {
    await east.request({
      method: 'POST',
      path: '/apis/demo.statewright.io/v1/namespaces/default/sites',
      body: { ...SITE, metadata: { name: 'a' } },
    })
    await m.start()
    assert.equal([...m.watched.keys()].sort(), ['owned-configmaps', 'owned-west-configmaps', 'sites'])
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.equal(get(eastServer, 'site-a').data, { from: 'a' })
    assert.equal(get(westServer, 'site-a').data, { from: 'a' })
    // drift in west is repaired in west
    await west.request({ method: 'DELETE', path: '/api/v1/namespaces/default/configmaps/site-a' })
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.ok(get(westServer, 'site-a'), 'recreated in west')
    assert.equal(m.drift.map((d) => d.repairs).sort(), [0, 1])
    await east.request({ method: 'DELETE', path: '/apis/demo.statewright.io/v1/namespaces/default/sites/a' })
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(get(eastServer, 'site-a'), undefined)
    assert.is(get(westServer, 'site-a'), undefined)
  } finally {
    await m.stop()
    await east.close()
    await west.close()
    await eastServer.stop()
    await westServer.stop()
  }
})

test.run()
