// Two sharded replicas on one cluster: every Site's ConfigMap is applied by the replica holding its
// shard, never deleted when a shard changes hands, and a replica that stops hands all its shards to
// the other, which then deletes what a deleted Site leaves behind.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { startTestServer } from '@statewright/testserver'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'

const SITE = { apiVersion: 'demo.statewright.io/v1', kind: 'Site' }
const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const SHARDS = 4

test('sharded replicas: each ConfigMap applied by its shard holder; handover deletes nothing', async () => {
  const server = await startTestServer({ kinds: [{ group: 'demo.statewright.io', version: 'v1', resource: 'sites', kind: 'Site' }] })
  const clusters: Cluster[] = []
  const replica = (identity: string) => {
    const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: identity })
    clusters.push(cluster)
    const m = new Manager({
      name: 'sharded',
      cluster,
      http: false,
      handleSignals: false,
      logger: createLogger({ level: 'silent' }),
      sharding: { namespace: 'default', shards: SHARDS, identity, retryPeriodMs: 50, leaseDurationMs: 600, renewDeadlineMs: 400 },
    })
    const sites = m.watch(SITE)
    m.derive({
      from: sites,
      owns: [CM],
      fn: (s: KubeObject) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `site-${s.metadata.name}`, namespace: 'default' },
        data: { site: String(s.metadata.name) },
      }),
    })
    return m
  }
  const a = replica('r-a')
  const b = replica('r-b')
  const cms = () => server.control.requestLog().filter((e) => e.path.includes('/configmaps'))
  const count = () => [...Array(12).keys()].filter((i) => server.control.get(CM, `site-s${i}`, 'default')).length
  const until = async (cond: () => boolean, what: string) => {
    const end = Date.now() + 10_000
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out: ${what}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  try {
    for (let i = 0; i < 12; i++)
      await clusters[0]!.request({
        method: 'POST',
        path: '/apis/demo.statewright.io/v1/namespaces/default/sites',
        body: { ...SITE, metadata: { name: `s${i}` } },
      })
    await a.start()
    await b.start()
    await until(
      () => a.shards().length + b.shards().length === SHARDS && a.shards().length > 0 && b.shards().length > 0,
      'the shards shared out',
    )
    await waitForConvergence(a, { timeout: 10_000 })
    await waitForConvergence(b, { timeout: 10_000 })
    await until(() => count() === 12, 'every ConfigMap applied')
    const appliedBy = new Map<string, Set<string>>()
    for (const e of cms().filter((x) => x.method === 'PATCH')) {
      const n = e.path.split('/').pop()!
      if (!appliedBy.has(n)) appliedBy.set(n, new Set())
      appliedBy.get(n)!.add(e.userAgent!)
    }
    assert.ok(
      [...appliedBy.values()].every((s) => s.size === 1),
      `each ConfigMap applied by one replica: ${JSON.stringify([...appliedBy].map(([k, v]) => [k, [...v]]))}`,
    )
    assert.equal(new Set([...appliedBy.values()].map((s) => [...s][0])), new Set(['r-a', 'r-b']), 'both replicas work')

    await a.stop() // hands its shards over
    await until(() => b.shards().length === SHARDS, 'r-b holds every shard')
    await waitForConvergence(b, { timeout: 10_000 })
    assert.is(count(), 12, 'nothing deleted by the handover')
    assert.equal(
      cms().filter((e) => e.method === 'DELETE'),
      [],
      'no DELETE of a ConfigMap',
    )

    await clusters[0]!.request({ method: 'DELETE', path: '/apis/demo.statewright.io/v1/namespaces/default/sites/s3' })
    await waitForConvergence(b, { timeout: 10_000 })
    assert.is(server.control.get(CM, 'site-s3', 'default'), undefined, 'the holder deletes what a deleted Site leaves')
    assert.is(count(), 11)
  } finally {
    await a.stop()
    await b.stop()
    for (const c of clusters) await c.close()
    await server.stop()
  }
})

test('bad input: sharding with leaderElection, or with a finalizer, is refused with a reason', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  try {
    assert.throws(
      () => new Manager({ name: 'x', http: false, cluster, sharding: { namespace: 'd', shards: 2 }, leaderElection: { namespace: 'd' } }),
      /sharding and leaderElection exclude each other/,
    )
    const m = new Manager({
      name: 'x',
      http: false,
      handleSignals: false,
      cluster,
      logger: createLogger({ level: 'silent' }),
      sharding: { namespace: 'default', shards: 2 },
    })
    m.finalizer({ on: m.watch(CM), name: 'example.com/f', cleanup: () => {} })
    await m.start().then(
      () => assert.unreachable('started'),
      (e: Error) => assert.match(e.message, 'need leaderElection, not sharding'),
    )
    await m.stop()
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test.run()
