import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { FencedError, ShardedLeases, shardOf, type LeaseTerm } from '@statewright/k8s'
import { fairShare, fnv1a } from '../src/sharding.ts'
import { wallNow } from '../src/lease.ts'
import { clusterFor, startServer } from './helpers.ts'
import { FreezableCluster, checkFencing, periodOf, waitUntil, type Period } from './leader-fixtures.ts'

const FAST = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 }

test('stable hash and fair shares', () => {
  assert.is(fnv1a(''), 0x811c9dc5)
  assert.is(fnv1a('a'), 0xe40c292c) // FNV-1a reference value
  assert.is(shardOf('default/web', 6), fnv1a('default/web') % 6)
  // 6 shards over 3, 4 and 5 members
  assert.equal(
    [0, 1, 2].map((r) => fairShare(6, 3, r)),
    [2, 2, 2],
  )
  assert.equal(
    [0, 1, 2, 3].map((r) => fairShare(6, 4, r)),
    [2, 2, 1, 1],
  )
  assert.equal(
    [0, 1, 2, 3, 4].map((r) => fairShare(4, 5, r)),
    [1, 1, 1, 1, 0],
  )
  // keys spread over the shards
  const counts = new Array(6).fill(0)
  for (let i = 0; i < 6000; i++) counts[shardOf(`ns/obj-${i}`, 6)]++
  for (const c of counts) assert.ok(c > 800 && c < 1200, `shard sizes ${counts}`)
})

interface Reconcile {
  key: string
  replica: string
  shard: number
  token: number
  at: number
}

test('three replicas split the keys; one dies; its shards move; every key is reconciled by its current owner only', async () => {
  const server = await startServer({ seed: 3 })
  const SHARDS = 6
  const keys = Array.from({ length: 60 }, (_, i) => `default/obj-${i}`)
  const clusters = [0, 1, 2].map(() => new FreezableCluster({ kubeconfig: server.kubeconfig, qps: 0 }))
  const periods: Period[] = []
  const reconciles: Reconcile[] = []
  const loops: Array<Promise<void>> = []
  // "reconciling" a key: record it, only while the shard's term is valid (checked right before)
  const work = (replica: string, shard: number, term: LeaseTerm) => {
    loops.push(
      (async () => {
        while (term.valid()) {
          for (const key of keys) {
            if (shardOf(key, SHARDS) !== shard || !term.valid()) continue
            reconciles.push({ key, replica, shard, token: term.transitions, at: wallNow() })
          }
          await new Promise((r) => setTimeout(r, 40))
        }
      })(),
    )
  }
  const replicas = clusters.map(
    (cluster, i) =>
      new ShardedLeases({
        cluster,
        namespace: 'default',
        name: 'ctl',
        shards: SHARDS,
        identity: `replica-${i}`,
        ...FAST,
        onShardAcquired: (shard, term) => work(`replica-${i}`, shard, term),
        onShardReleased: (_shard, term) => {
          periods.push(periodOf(term))
        },
      }),
  )
  const balanced = (rs: ShardedLeases[], each: number) => {
    const owned = rs.map((r) => r.ownedShards())
    return (
      owned.every((o) => o.length === each) &&
      new Set(owned.flat()).size === SHARDS &&
      rs.every((r) => r.health().members.length === rs.length)
    )
  }
  try {
    for (const r of replicas) r.start()
    await waitUntil(() => balanced(replicas, 2), 'three replicas with two shards each', 10_000)
    for (const r of replicas) assert.equal(r.health().members, ['replica-0', 'replica-1', 'replica-2'])
    // every key has exactly one owner
    for (const key of keys) assert.is(replicas.filter((r) => r.owns(key)).length, 1, key)

    // replica-1 dies (cut off from the API server, never releasing)
    const dead = replicas[1]
    const deadShards = dead.ownedShards()
    const killedAt = wallNow()
    clusters[1].freeze()
    const survivors = [replicas[0], replicas[2]]
    const movedAt = await waitUntil(() => balanced(survivors, 3), 'the survivors with three shards each', 10_000)
    assert.is(dead.ownedShards().length, 0, 'the dead replica stopped acting at its renew deadlines')
    assert.ok(
      movedAt - killedAt < 2 * FAST.leaseDurationMs + 6 * FAST.retryPeriodMs + 1000,
      `moved after ${(movedAt - killedAt).toFixed(0)} ms`,
    )
    for (const r of survivors) assert.equal(r.health().members, ['replica-0', 'replica-2'])
    for (const s of deadShards) assert.ok(survivors.some((r) => r.ownedShards().includes(s)))
    // every key of a moved shard is reconciled by its new owner
    await waitUntil(
      () => keys.every((k) => reconciles.some((x) => x.key === k && x.at > movedAt)),
      'every key reconciled after the move',
      5000,
    )
    for (const key of keys) assert.is(survivors.filter((r) => r.owns(key)).length, 1, key)
    for (const key of keys) {
      const last = reconciles.filter((x) => x.key === key).at(-1)!
      assert.ok(survivors.find((r) => r.owns(key))!.identity === last.replica, `${key} last reconciled by ${last.replica}`)
    }
  } finally {
    clusters[1].thaw()
    await Promise.all(replicas.map((r) => r.stop()))
    await Promise.all(loops)
    for (const c of clusters) await c.close()
    await server.stop()
  }
  // the leases were released on stop
  // no two replicas ever acted on one shard at once, tokens increase per shard lease
  const problems = checkFencing(periods)
  assert.equal(problems, [], problems.join('\n'))
  // every reconcile happened inside a period of that replica for that shard
  for (const x of reconciles) {
    const p = periods.find((p) => p.identity === x.replica && p.lease === `ctl-shard-${x.shard}` && p.transitions === x.token)
    assert.ok(p, `no period for ${x.replica} on shard ${x.shard}`)
    assert.ok(x.at >= p!.start && x.at <= p!.end, `${x.key} by ${x.replica} outside its term`)
  }
})

test('a new replica joins: the others give shards back; a clean stop releases everything', async () => {
  const server = await startServer({ seed: 5 })
  const clusters = [0, 1, 2].map(() => new FreezableCluster({ kubeconfig: server.kubeconfig, qps: 0 }))
  const periods: Period[] = []
  const mk = (i: number) =>
    new ShardedLeases({
      cluster: clusters[i],
      namespace: 'default',
      name: 'grow',
      shards: 4,
      identity: `r${i}`,
      ...FAST,
      onShardReleased: (_s, term) => {
        periods.push(periodOf(term))
      },
    })
  const rs = [mk(0), mk(1)]
  let leases: any[] = []
  try {
    for (const r of rs) r.start()
    await waitUntil(() => rs.every((r) => r.ownedShards().length === 2), 'two replicas with two shards each', 10_000)
    rs.push(mk(2))
    await rs[2]!.start()
    // 4 shards over 3: 2, 1, 1 by rank
    await waitUntil(() => rs.map((r) => r.ownedShards().length).join() === '2,1,1', 'shares 2,1,1', 10_000)
    assert.is(new Set(rs.flatMap((r) => r.ownedShards())).size, 4)
  } finally {
    await Promise.all(rs.map((r) => r.stop()))
    leases = (
      await clusters[0].request({
        path: '/apis/coordination.k8s.io/v1/namespaces/default/leases',
        query: { labelSelector: 'statewright.dev/lease-group=grow' },
      })
    ).items
    for (const c of clusters) await c.close()
    await server.stop()
  }
  assert.is(leases.length, 4 + 3)
  for (const l of leases) assert.is(l.spec.holderIdentity, '', l.metadata.name)
  assert.equal(checkFencing(periods), [])
})

// A write the server has received cannot be called back by aborting the request: a replica giving a
// shard up (a fair-share move, a stop) closes the term to new writes, waits for the ones sent to be
// answered, and only then clears the Lease, so none lands after the release.
test('a shard given up drains: new writes are refused, the ones sent are answered, then the Lease is cleared', async () => {
  const server = await startServer({ seed: 11 })
  const cluster = clusterFor(server)
  const cm = '/api/v1/namespaces/default/configmaps'
  await cluster.request({
    method: 'POST',
    path: cm,
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { n: '0' } },
  })
  let sent: Promise<unknown> | undefined
  const during: { valid?: boolean; aborted?: boolean; refused?: unknown } = {}
  const leases = new ShardedLeases({
    cluster,
    namespace: 'default',
    name: 'drain',
    shards: 1,
    identity: 'r0',
    leaseDurationMs: 6000,
    renewDeadlineMs: 4000,
    retryPeriodMs: 100,
    onShardAcquired: (_s, term) => {
      // the server holds this write for a while: it is on the wire when the shard is given up
      sent = cluster.request({
        method: 'PATCH',
        path: `${cm}/c`,
        body: { data: { n: '1' } },
        contentType: 'application/merge-patch+json',
        fence: term,
      })
      sent.catch(() => {})
    },
    onShardDraining: async (_s, term) => {
      during.valid = term.valid()
      during.aborted = term.signal.aborted
      during.refused = await cluster
        .request({ method: 'PATCH', path: `${cm}/c`, body: { data: { n: '2' } }, contentType: 'application/merge-patch+json', fence: term })
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      await cluster.settled(term) // what a Manager's draining awaits (every cluster it writes to)
    },
  })
  try {
    server.control.delay({ method: 'PATCH', path: /configmaps/, ms: 600 })
    leases.start()
    await waitUntil(() => sent !== undefined, 'the shard acquired and the write sent', 10_000)
    await new Promise((r) => setTimeout(r, 50)) // the write reached the server, which holds it
    await leases.stop()
    assert.is(during.valid, false, 'closed: no new write passes the fence')
    assert.is(during.aborted, false, 'not ended: what was sent is not cut off')
    assert.instance(during.refused, FencedError, 'a write after the close is refused, not sent')
    const answered = (await sent) as { metadata: { resourceVersion: string } }
    const lease = await cluster.request({ path: '/apis/coordination.k8s.io/v1/namespaces/default/leases/drain-shard-0' })
    assert.is(lease.spec.holderIdentity, '', 'released')
    assert.ok(
      Number(answered.metadata.resourceVersion) < Number(lease.metadata.resourceVersion),
      `the write (rv ${answered.metadata.resourceVersion}) landed before the release (rv ${lease.metadata.resourceVersion})`,
    )
    const now = await cluster.request({ path: `${cm}/c` })
    assert.is(now.data.n, '1', 'the refused write was not carried out')
  } finally {
    server.control.clearFaults()
    await leases.stop()
    await cluster.close()
    await server.stop()
  }
})

// issue 31: a round moving many shards must not outlast a held term
test('callbacks that take longer than the renew deadline never let a held term lapse; acquisitions run at once', async () => {
  const server = await startServer({ seed: 7 })
  const cluster = clusterFor(server)
  const SHARDS = 16
  const ended: string[] = []
  const slow = new ShardedLeases({
    cluster,
    namespace: 'default',
    name: 'slow',
    shards: SHARDS,
    identity: 'only',
    ...FAST,
    // each acquisition's work (a re-derivation, a prune) takes longer than the renew deadline
    onShardAcquired: () => new Promise((r) => setTimeout(r, FAST.renewDeadlineMs * 2)),
    onShardReleased: (shard, _term, reason) => {
      ended.push(`${shard}: ${reason}`)
    },
  })
  try {
    slow.start()
    await waitUntil(() => slow.ownedShards().length === SHARDS, 'a lone replica holds every shard', 10_000)
    // a few more rounds with the callbacks still running: nothing lapses
    await new Promise((r) => setTimeout(r, FAST.leaseDurationMs * 2))
    assert.is(slow.ownedShards().length, SHARDS)
    assert.equal(ended, [], 'no term ended while the callbacks ran (the old step awaited each callback in turn)')
  } finally {
    await slow.stop()
    await cluster.close()
    await server.stop()
  }
})

test('member leases of replicas gone longer than memberGcMs are deleted; live ones stay', async () => {
  const server = await startServer({ seed: 9 })
  const clusters = [0, 1].map(() => new FreezableCluster({ kubeconfig: server.kubeconfig, qps: 0 }))
  const [a, b] = clusters.map(
    (cluster, i) =>
      new ShardedLeases({ cluster, namespace: 'default', name: 'gc', shards: 2, identity: `m-${i}`, ...FAST, memberGcMs: 1500 }),
  )
  const members = async () =>
    (await clusters[0]!.request({ path: '/apis/coordination.k8s.io/v1/namespaces/default/leases' })).items
      .map((l: { metadata: { name: string } }) => l.metadata.name)
      .filter((n: string) => n.startsWith('gc-member-'))
      .sort()
  try {
    a!.start()
    b!.start()
    await waitUntil(() => a!.health().members.length === 2, 'two members', 10_000)
    assert.equal(await members(), ['gc-member-m-0', 'gc-member-m-1'])
    clusters[1]!.freeze() // m-1 is gone: it never renews nor releases
    let left: string[] = []
    const end = Date.now() + 10_000
    while (Date.now() < end) {
      left = await members()
      if (left.length === 1) break
      await new Promise((r) => setTimeout(r, 100))
    }
    assert.equal(left, ['gc-member-m-0'], 'the departed member lease is deleted')
    assert.ok(a!.health().membersCollected >= 1)
  } finally {
    clusters[1]!.thaw()
    await a!.stop()
    await b!.stop()
    for (const c of clusters) await c.close()
    await server.stop()
  }
})

test.run()
