// The 50-line controller of examples/configmap-per-site.ts, on the test server, with only
// waitForConvergence to wait: ConfigMaps follow Sites, and deleting a Site whose cleanup fails twice
// ends with the Site and its ConfigMap gone after the third attempt.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { createLogger, waitForConvergence } from '@statewright/controller'
import { siteController } from '../examples/configmap-per-site.ts'
import type { Site } from '../examples/site-types.ts'

const crd = parse(readFileSync(new URL('../examples/site-crd.yaml', import.meta.url), 'utf8'))
const SITES = '/apis/demo.statewright.io/v1/namespaces/default/sites'

test('ConfigMaps follow Sites; a Site whose cleanup fails twice is deleted after the third attempt', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  await cluster.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: crd })
  const released: string[] = []
  const outside = {
    release: async (site: Site) => {
      released.push(site.metadata.name!)
      if (site.metadata.name === 'b' && released.filter((n) => n === 'b').length <= 2) throw new Error('DNS API unavailable')
    },
  }
  const m = siteController(
    { cluster, handleSignals: false, http: { port: 0 }, logger: createLogger({ level: 'silent' }), retry: { minMs: 20, maxMs: 200 } },
    outside,
  )
  const put = (name: string, title: string) =>
    cluster.request({
      method: 'PATCH',
      path: `${SITES}/${name}`,
      query: { fieldManager: 'user', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'demo.statewright.io/v1', kind: 'Site', metadata: { name, namespace: 'default' }, spec: { title, replicas: 2 } },
    })
  const cm = (name: string) => server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, `site-${name}`, 'default')
  const site = (name: string) => server.control.get({ apiVersion: 'demo.statewright.io/v1', kind: 'Site' }, name, 'default')
  try {
    await put('a', 'Alpha')
    await put('b', 'Beta')
    await m.start()
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.equal(cm('a').data, { title: 'Alpha', replicas: '2' })
    assert.is(cm('b').metadata.ownerReferences[0].uid, site('b').metadata.uid, 'owned by its Site')
    assert.ok(site('b').metadata.finalizers.includes('demo.statewright.io/release'), 'the finalizer was added')

    await put('a', 'Alpha 2')
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.is(cm('a').data.title, 'Alpha 2')

    await cluster.request({ method: 'DELETE', path: `${SITES}/b` })
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.equal(released, ['b', 'b', 'b'], 'cleanup failed twice, then succeeded')
    assert.is(site('b'), undefined, 'the Site is gone once the finalizer is removed')
    assert.is(cm('b'), undefined, 'and its ConfigMap with it')
    assert.ok(cm('a'), 'the other Site keeps its ConfigMap')
    const failures = server.control.requestLog().filter((e) => e.method === 'PATCH' && e.path === `${SITES}/b/status`)
    assert.ok(failures.length >= 1, "the failing cleanup was reported on the Site's status")
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
})

test.run()
