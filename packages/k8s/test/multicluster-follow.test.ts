// Multi-cluster caches that follow their clusters (issue 29 items 6-9, after pipeline-controller's
// watcher infrastructure and multicluster-runtime's kubeconfig provider): credential rotation through
// the registry and through kubeconfig Secrets, cache health reaching the owners, a missing API group
// named as such, and owners that never wait on another owner's cluster.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { kubeconfigObject, type RunningTestServer } from '@statewright/testserver'
import {
  Cluster,
  ClusterRegistry,
  KubeconfigSecrets,
  Target,
  UnknownKindError,
  WatchOnDemand,
  type CacheEvent,
  type TargetRef,
} from '@statewright/k8s'
import { collectingLogger } from '../../../test/lib/logger.ts'
import { startServer } from './helpers.ts'
import { waitUntil } from './leader-fixtures.ts'

const kubeconfigOf = (s: RunningTestServer, name: string) => JSON.stringify(kubeconfigObject({ server: s.url, token: s.token!, name }))
const fromOf = (o: unknown) => (o as { data?: { from?: string } } | undefined)?.data?.from
const cm = (cluster: string, name: string): TargetRef => ({ cluster, apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name })

async function createCm(s: RunningTestServer, name: string, data: Record<string, string>): Promise<void> {
  const c = new Cluster({ kubeconfig: s.kubeconfig, qps: 0 })
  try {
    await c.request({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: { metadata: { name }, data } })
  } finally {
    await c.close()
  }
}

function recorder() {
  const events: CacheEvent[] = []
  const told: string[][] = []
  return { events, told, onCacheEvent: (e: CacheEvent) => events.push(e), onChange: (owners: string[]) => void told.push(owners) }
}

test('credential rotation through the registry (remove, then add): the cache closes and reopens on the new endpoint; the old one hears nothing more', async () => {
  const old = await startServer()
  const fresh = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  const r = recorder()
  const wod = new WatchOnDemand({ registry, onChange: r.onChange, onCacheEvent: r.onCacheEvent, healthIntervalMs: 50 })
  try {
    await createCm(old, 'app', { from: 'old' })
    await createCm(fresh, 'app', { from: 'fresh' })
    registry.addKubeconfig('leaf', kubeconfigOf(old, 'leaf'))
    await wod.ensureWatch('pipeline-a', cm('leaf', 'app'), { waitSynced: true, signal: AbortSignal.timeout(10_000) })
    assert.is(fromOf(wod.get(cm('leaf', 'app'))), 'old')

    await registry.remove('leaf')
    await waitUntil(() => r.events.some((e) => e.type === 'closed'), 'a closed event', 5000)
    assert.equal(r.events.find((e) => e.type === 'closed')!.owners, ['pipeline-a'])
    const told = r.told.length
    registry.addKubeconfig('leaf', kubeconfigOf(fresh, 'leaf'))
    await waitUntil(() => fromOf(wod.get(cm('leaf', 'app'))) === 'fresh', 'the cache to read the new endpoint', 10_000)
    assert.ok(r.events.some((e) => e.type === 'reopened' && e.cluster === 'leaf'))
    assert.ok(r.told.length > told, 'the owner was told')
    // nothing goes to the old endpoint any more
    old.control.clearRequestLog()
    await createCm(fresh, 'other', {})
    await waitUntil(() => fresh.control.requestLog().some((e) => e.watch), 'a watch on the new endpoint', 5000)
    assert.equal(
      old.control.requestLog().filter((e) => e.userAgent !== undefined && !e.path.includes('other')),
      [],
    )
    assert.is(wod.cacheInfo().length, 1)
    assert.is(wod.cacheInfo()[0]!.refs, 1)
  } finally {
    await wod.stop()
    await registry.close()
    await old.stop()
    await fresh.stop()
  }
})

test('kubeconfig Secrets: a labelled Secret is a cluster; a rotated one reopens caches on the new credentials; a broken one keeps the last good; a deleted one removes the cluster', async () => {
  const mgmt = await startServer()
  const a = await startServer()
  const b = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  const logger = collectingLogger()
  const r = recorder()
  const wod = new WatchOnDemand({ registry, onChange: r.onChange, onCacheEvent: r.onCacheEvent, healthIntervalMs: 50 })
  const admin = new Cluster({ kubeconfig: mgmt.kubeconfig, qps: 0 })
  const secretPath = '/api/v1/namespaces/fleet/secrets'
  const secret = (text: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'leaf', namespace: 'fleet', labels: { 'example.com/kubeconfig': 'true' } },
    data: { value: Buffer.from(text).toString('base64') },
  })
  const secrets = new KubeconfigSecrets({
    cluster: admin,
    namespace: 'fleet',
    labelSelector: 'example.com/kubeconfig=true',
    registry,
    logger,
  })
  try {
    await admin.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: 'fleet' } } })
    await admin.request({ method: 'POST', path: secretPath, body: secret(kubeconfigOf(a, 'leaf')) })
    await createCm(a, 'app', { from: 'a' })
    await createCm(b, 'app', { from: 'b' })
    await secrets.start(AbortSignal.timeout(10_000))
    assert.equal(registry.names(), ['leaf'])
    await wod.ensureWatch('p', cm('leaf', 'app'), { waitSynced: true, signal: AbortSignal.timeout(10_000) })
    assert.is(fromOf(wod.get(cm('leaf', 'app'))), 'a')

    // rotated: the Secret now points at b
    await admin.request({ method: 'PUT', path: `${secretPath}/leaf`, body: secret(kubeconfigOf(b, 'leaf')) })
    await waitUntil(() => fromOf(wod.get(cm('leaf', 'app'))) === 'b', 'the cache on the rotated credentials', 10_000)

    // broken: logged with the Secret's name, the cluster stays on b
    await admin.request({ method: 'PUT', path: `${secretPath}/leaf`, body: secret('clusters: [ this is not: a kubeconfig') })
    await waitUntil(() => logger.errors.some((m) => /not a valid kubeconfig/.test(m)), 'the broken Secret logged', 5000)
    assert.ok(logger.errors.some((m) => /Secret fleet\/leaf/.test(m)))
    assert.not.ok(
      logger.errors.some((m) => /this is not/.test(m)),
      'never the content',
    )
    assert.equal(registry.names(), ['leaf'])
    await createCm(b, 'late', {})
    await wod.ensureWatch('p', cm('leaf', 'late'))
    await waitUntil(() => wod.get(cm('leaf', 'late')) !== undefined, 'the cache still follows b', 5000)

    // deleted: the cluster leaves the registry and its cache closes
    await admin.request({ method: 'DELETE', path: `${secretPath}/leaf` })
    await waitUntil(() => registry.names().length === 0, 'the cluster removed', 5000)
    await waitUntil(() => r.events.some((e) => e.type === 'closed'), 'the cache closed', 5000)
    assert.is(wod.cacheInfo().length, 0)
  } finally {
    await secrets.stop()
    await wod.stop()
    await registry.close()
    await admin.close()
    for (const s of [mgmt, a, b]) await s.stop()
  }
})

test('cache health reaches the owners: synced, lost (with the cluster, kind and reason) and recovered, each telling the owners', async () => {
  const leaf = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  const r = recorder()
  const wod = new WatchOnDemand({
    registry,
    onChange: r.onChange,
    onCacheEvent: r.onCacheEvent,
    healthIntervalMs: 50,
    reflector: { lostAfterMs: 300, retry: { minMs: 50, maxMs: 200 } },
  })
  try {
    await createCm(leaf, 'app', {})
    registry.addKubeconfig('leaf', kubeconfigOf(leaf, 'leaf'))
    await wod.setTargets('p1', [cm('leaf', 'app')])
    await wod.setTargets('p2', [cm('leaf', 'app')])
    await waitUntil(() => r.events.some((e) => e.type === 'synced'), 'synced', 10_000)
    assert.equal(wod.usersOf({ cluster: 'leaf', apiVersion: 'v1', kind: 'ConfigMap' }), ['p1', 'p2'])
    const told = r.told.length
    // the leaf goes away for a while: its watch breaks and nothing connects
    const outage = leaf.control.refuseConnections(2500)
    leaf.control.resetWatches()
    await waitUntil(() => r.events.some((e) => e.type === 'lost'), 'a lost event', 10_000)
    const lost = r.events.find((e) => e.type === 'lost')!
    assert.is(lost.cluster, 'leaf')
    assert.is(lost.kind, 'ConfigMap')
    assert.equal(lost.owners, ['p1', 'p2'])
    assert.ok(lost.message && lost.message.length > 0, 'says why')
    await waitUntil(() => r.told.length > told, 'the owners told of the loss', 5000)
    await outage
    await waitUntil(() => r.events.some((e) => e.type === 'recovered'), 'recovered', 15_000)
    assert.ok(r.told.slice(told).filter((o) => o.includes('p1') && o.includes('p2')).length >= 2, 'told of loss and recovery')
  } finally {
    await wod.stop()
    await registry.close()
    await leaf.stop()
  }
})

test('an owner never waits on another owner’s cluster: setTargets returns at once by default; the sync tells the owner', async () => {
  const up = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  const r = recorder()
  const wod = new WatchOnDemand({ registry, onChange: r.onChange, onCacheEvent: r.onCacheEvent, healthIntervalMs: 50 })
  try {
    await createCm(up, 'app', {})
    registry.addKubeconfig('up', kubeconfigOf(up, 'up'))
    // a cluster nobody answers on (a closed port)
    const dead = await startServer()
    const deadConfig = kubeconfigOf(dead, 'down')
    await dead.stop()
    registry.addKubeconfig('down', deadConfig)
    const t0 = performance.now()
    await wod.setTargets('broken', [cm('down', 'app')])
    await wod.setTargets('fine', [cm('up', 'app')])
    assert.ok(performance.now() - t0 < 1000, 'neither call waited for a cache')
    assert.not.ok(wod.isSynced(cm('down', 'app')))
    await waitUntil(() => r.told.some((o) => o.includes('fine')), 'the good owner told once its cache synced', 10_000)
    assert.ok(wod.isSynced(cm('up', 'app')))
    assert.ok(wod.get(cm('up', 'app')))
    // asking to wait is still possible, bounded by a signal
    const waited = await wod.setTargets('broken', [cm('down', 'app')], { waitSynced: true, signal: AbortSignal.timeout(200) }).then(
      () => 'synced',
      () => 'aborted',
    )
    assert.is(waited, 'aborted')
  } finally {
    await wod.stop()
    await registry.close()
    await up.stop()
  }
})

test('a kind whose whole API group is missing is UnknownKindError naming the cluster, as a missing kind in a served group is', async () => {
  const s = await startServer()
  const cluster = new Cluster({ kubeconfig: s.kubeconfig, qps: 0, name: 'leaf-7' })
  const target = new Target({ clusters: cluster, fieldManager: 't' })
  try {
    for (const apiVersion of ['nope.example.com/v1', 'v1']) {
      const err = await target.apply({ object: { apiVersion, kind: 'Nope', metadata: { name: 'x', namespace: 'default' } } } as any).then(
        () => undefined,
        (e) => e,
      )
      assert.instance(err, UnknownKindError, `${apiVersion}: ${err}`)
      assert.match(String(err.message), /cluster leaf-7/)
      assert.match(String(err.message), new RegExp(`no kind Nope in ${apiVersion}`))
    }
  } finally {
    await cluster.close()
    await s.stop()
  }
})

test.run()
