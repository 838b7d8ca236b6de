// Two sharded replicas on one cluster: every Site's ConfigMap is applied by the replica holding its
// shard, never deleted when a shard changes hands, and a replica that stops hands all its shards to
// the other, which then deletes what a deleted Site leaves behind.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { startTestServer } from '@statewright/testserver'
import { Cluster, type KubeObject, type RequestOptions } from '@statewright/k8s'
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
        data: { site: String(s.metadata.name), v: String((s as { spec?: { v?: number } }).spec?.v ?? 0) },
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
    await waitForConvergence(a, { timeoutMs: 10_000 })
    await waitForConvergence(b, { timeoutMs: 10_000 })
    await until(() => count() === 12, 'every ConfigMap applied')
    // once the shards are shared out (the first applies may come before: one replica held them
    // all), a change of every Site is applied by its shard's holder alone
    server.control.clearRequestLog()
    for (let i = 0; i < 12; i++)
      await clusters[0]!.request({
        method: 'PATCH',
        path: `/apis/demo.statewright.io/v1/namespaces/default/sites/s${i}`,
        body: { spec: { v: 1 } },
        contentType: 'application/merge-patch+json',
      })
    await until(
      () => [...Array(12).keys()].every((i) => server.control.get(CM, `site-s${i}`, 'default')?.data?.v === '1'),
      'every ConfigMap updated',
    )
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
    await waitForConvergence(b, { timeoutMs: 10_000 })
    assert.is(count(), 12, 'nothing deleted by the handover')
    assert.equal(
      cms().filter((e) => e.method === 'DELETE'),
      [],
      'no DELETE of a ConfigMap',
    )

    await clusters[0]!.request({ method: 'DELETE', path: '/apis/demo.statewright.io/v1/namespaces/default/sites/s3' })
    await waitForConvergence(b, { timeoutMs: 10_000 })
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

/** A Cluster whose requests (not its watches) can be held: a replica cut off from the API server. */
class FreezableCluster extends Cluster {
  private gate: Promise<void> | undefined
  private open: (() => void) | undefined
  freeze(): void {
    this.gate ??= new Promise((r) => (this.open = r))
  }
  thaw(): void {
    const open = this.open
    this.gate = undefined
    open?.()
  }
  override async request<T = any>(o: RequestOptions): Promise<T> {
    while (this.gate) await this.gate
    return super.request<T>(o)
  }
}

// issue 31: per-shard caches; an acquired shard is pruned at once; nothing written after a term
test('sharded replicas cache only their shards, prune a shard they acquire at once, and write nothing after a term', async () => {
  const server = await startTestServer({ kinds: [{ group: 'demo.statewright.io', version: 'v1', resource: 'sites', kind: 'Site' }] })
  const clusters: FreezableCluster[] = []
  const TIMING = { retryPeriodMs: 50, leaseDurationMs: 800, renewDeadlineMs: 500 }
  const replica = (identity: string) => {
    const cluster = new FreezableCluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: identity })
    clusters.push(cluster)
    const m = new Manager({
      name: 'sharded',
      cluster,
      http: false,
      handleSignals: false,
      logger: createLogger({ level: 'silent' }),
      sharding: { namespace: 'default', shards: SHARDS, identity, ...TIMING },
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
  const until = async (cond: () => boolean, what: string, ms = 15_000) => {
    const end = Date.now() + ms
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out: ${what}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  const a = replica('r-a')
  const b = replica('r-b')
  try {
    for (let i = 0; i < 16; i++)
      await clusters[0]!.request({
        method: 'POST',
        path: '/apis/demo.statewright.io/v1/namespaces/default/sites',
        body: { ...SITE, metadata: { name: `s${i}` } },
      })
    await a.start()
    await b.start()
    await until(() => a.shards().length === SHARDS / 2 && b.shards().length === SHARDS / 2, 'shared out evenly')
    await waitForConvergence(a, { timeoutMs: 15_000 })
    await waitForConvergence(b, { timeoutMs: 15_000 })
    // each replica's cache of owned ConfigMaps holds its own shards' only (the selector follows the
    // shards held, so after a move it catches up with a relist)
    for (const m of [a, b]) {
      const cached = () => m.watched.get('owned-configmaps')!.table.all(m.db.readTxn()).toArray()
      await until(
        () => cached().length > 0 && cached().every((o) => m.shards().includes(Number(o.metadata.labels?.['statewright.io/shard']))),
        'a cache of the shards it holds only',
      )
      assert.ok(cached().length < 16, `${cached().length} cached`)
    }

    // r-a is cut off from the API server; meanwhile a Site of one of its shards is deleted
    const aShards = a.shards()
    const victim = [...Array(16).keys()]
      .map((i) => `s${i}`)
      .find((n) => aShards.includes(Number(server.control.get(CM, `site-${n}`, 'default')?.metadata.labels?.['statewright.io/shard'])))!
    assert.ok(victim, "a Site in one of r-a's shards")
    clusters[0]!.freeze()
    const frozenAt = Date.now()
    await clusters[1]!.request({ method: 'DELETE', path: `/apis/demo.statewright.io/v1/namespaces/default/sites/${victim}` })
    // r-b takes r-a's shards once their leases expire, and prunes them at once: the deleted Site's
    // ConfigMap goes without waiting for a full reconciliation (every 300 s by default)
    await until(() => b.shards().length === SHARDS, 'r-b holds every shard')
    await until(() => server.control.get(CM, `site-${victim}`, 'default') === undefined, 'the orphaned ConfigMap pruned', 10_000)
    assert.ok(Date.now() - frozenAt < 10_000)
    // r-a, thawed, finds its terms over: it writes nothing more (fenced), and hands over cleanly
    const log = () =>
      server.control.requestLog().filter((e) => e.userAgent === 'r-a' && e.path.includes('/configmaps') && e.method !== 'GET')
    const before = log().length
    clusters[0]!.thaw()
    await a.stop()
    assert.is(log().length, before, 'no ConfigMap write by r-a after its terms ended')
    await waitForConvergence(b, { timeoutMs: 15_000 })
    assert.is([...Array(16).keys()].filter((i) => server.control.get(CM, `site-s${i}`, 'default')).length, 15)
  } finally {
    for (const c of clusters) c.thaw()
    await a.stop()
    await b.stop()
    for (const c of clusters) await c.close()
    await server.stop()
  }
})

test.run()
