import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { collectingLogger } from '../../../test/lib/logger.ts'
import { FencedError, LeaderElector, LeaseLock, leaderOnly, type LeaseTerm } from '@statewright/k8s'
import { leasePath, microTime } from '../src/lease-record.ts'
import { wallNow } from '../src/wallclock.ts'
import { clusterFor, startServer } from './helpers.ts'
import { FreezableCluster, actWhileLeading, checkFencing, periodOf, waitUntil, type Period } from './leader-fixtures.ts'

const FAST = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 }

test('MicroTime has exactly six fractional digits', () => {
  assert.match(microTime(Date.UTC(2026, 10, 21, 10, 24, 0, 123) + 0.4567), /^2026-11-21T10:24:00\.123456Z$/)
  assert.match(microTime(Date.UTC(2026, 0, 1)), /^2026-01-01T00:00:00\.000000Z$/)
  assert.match(microTime(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
})

test("options are checked; defaults are client-go's", async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    assert.throws(
      () => new LeaderElector({ cluster, namespace: 'default', name: 'x', leaseDurationMs: 1000, renewDeadlineMs: 1000 }),
      /below/,
    )
    assert.throws(() => new LeaderElector({ cluster, namespace: 'default', name: 'x', renewDeadlineMs: 500, retryPeriodMs: 500 }), /below/)
    const e = new LeaderElector({ cluster, namespace: 'default', name: 'x' })
    assert.is(e.lock.leaseDurationMs, 15_000)
    assert.is(e.lock.renewDeadlineMs, 10_000)
    assert.ok(e.identity.length > 3)
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test('acquire, renew with optimistic concurrency, release on a clean stop', async () => {
  const server = await startServer()
  const c1 = clusterFor(server)
  const c2 = clusterFor(server)
  const events: string[] = []
  try {
    const a = new LeaderElector({
      cluster: c1,
      namespace: 'kube-system',
      name: 'ctl',
      identity: 'a',
      ...FAST,
      onStartedLeading: (t) => {
        events.push(`a started ${t.transitions}`)
      },
      onStoppedLeading: (t, why) => {
        events.push(`a stopped ${t.transitions}: ${why}`)
      },
      onNewLeader: (id) => events.push(`a sees ${id || '(none)'}`),
    })
    await a.start()
    const t1 = await a.waitLeading(AbortSignal.timeout(5000))
    assert.is(t1.transitions, 0)
    const lease = await c1.request({ path: leasePath('kube-system', 'ctl') })
    assert.is(lease.spec.holderIdentity, 'a')
    assert.is(lease.spec.leaseDurationSeconds, 1)
    assert.match(lease.spec.renewTime, /\.\d{6}Z$/)
    assert.match(lease.spec.acquireTime, /\.\d{6}Z$/)
    // renewals keep the acquireTime and move renewTime
    const rv0 = Number(lease.metadata.resourceVersion)
    await new Promise((r) => setTimeout(r, 350))
    const later = await c1.request({ path: leasePath('kube-system', 'ctl') })
    assert.ok(Number(later.metadata.resourceVersion) > rv0, 'renewed')
    assert.is(later.spec.acquireTime, lease.spec.acquireTime)
    assert.is(later.spec.leaseTransitions, 0)
    // the renewals were PUTs with the resourceVersion (no GET needed while nothing else wrote)
    const puts = server.control.requestLog().filter((e) => e.method === 'PUT' && e.path.endsWith('/leases/ctl'))
    assert.ok(puts.length >= 2)
    assert.ok(a.isLeader())

    // a second candidate waits while the lease is held
    const b = new LeaderElector({ cluster: c2, namespace: 'kube-system', name: 'ctl', identity: 'b', ...FAST })
    await b.start()
    await new Promise((r) => setTimeout(r, 800))
    assert.not.ok(b.isLeader())
    assert.is(b.health().leader, 'a')

    // a clean stop ends the term, then clears holderIdentity: b takes over well within the lease duration
    const stopAt = wallNow()
    await a.stop()
    const released = server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'ctl', 'kube-system')
    assert.ok(
      released.spec.holderIdentity === '' || released.spec.holderIdentity === 'b',
      `holder after release: ${released.spec.holderIdentity}`,
    )
    const t2 = await b.waitLeading(AbortSignal.timeout(5000))
    assert.ok(t2.startedAt - stopAt < FAST.leaseDurationMs, `took over after ${(t2.startedAt - stopAt).toFixed(0)} ms`)
    assert.is(t2.transitions, 1)
    assert.equal(events.slice(0, 2), ['a sees a', 'a started 0'])
    assert.ok(events.includes('a stopped 0: stopped'))
    assert.not.ok(a.isLeader())
    await b.stop()
    assert.is(server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'ctl', 'kube-system').spec.holderIdentity, '')
  } finally {
    await c1.close()
    await c2.close()
    await server.stop()
  }
})

test('leaderOnly starts runnables on the leader and stops them when the term ends', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    let running = false
    const log: string[] = []
    const r = {
      start() {
        running = true
        log.push('start')
      },
      async stop() {
        await new Promise((res) => setTimeout(res, 20))
        running = false
        log.push('stop')
      },
    }
    const e = new LeaderElector({ cluster, namespace: 'default', name: 'only', identity: 'x', ...FAST, ...leaderOnly(r) })
    await e.start()
    await e.waitLeading(AbortSignal.timeout(5000))
    assert.ok(running)
    await e.stop()
    assert.not.ok(running)
    assert.equal(log, ['start', 'stop'])
    // stopped before the release: the lease is released after stop() resolved
    assert.is(server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'only', 'default').spec.holderIdentity, '')
  } finally {
    await cluster.close()
    await server.stop()
  }
})

// A clean stop drains as a shard given up does (sharding.test.ts): the term is closed to new writes,
// what was sent is answered, and only then does the term end and the Lease get released.
test('a leader that stops drains: new writes are refused, the ones sent are answered, then the Lease is released', async () => {
  const server = await startServer({ seed: 12 })
  const cluster = clusterFor(server)
  const cm = '/api/v1/namespaces/default/configmaps'
  await cluster.request({
    method: 'POST',
    path: cm,
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { n: '0' } },
  })
  const during: { valid?: boolean; aborted?: boolean; refused?: unknown } = {}
  const e = new LeaderElector({
    cluster,
    namespace: 'default',
    name: 'drain',
    identity: 'x',
    leaseDurationMs: 6000,
    renewDeadlineMs: 4000,
    retryPeriodMs: 100,
    onDraining: async (term) => {
      during.valid = term.valid()
      during.aborted = term.signal.aborted
      during.refused = await cluster
        .request({ method: 'PATCH', path: `${cm}/c`, body: { data: { n: '2' } }, contentType: 'application/merge-patch+json', fence: term })
        .then(
          () => undefined,
          (err: unknown) => err,
        )
      await cluster.settled(term)
    },
  })
  await e.start()
  try {
    const term = await e.waitLeading(AbortSignal.timeout(5000))
    server.control.delay({ method: 'PATCH', path: /configmaps/, ms: 600 })
    const sent = cluster.request<{ metadata: { resourceVersion: string } }>({
      method: 'PATCH',
      path: `${cm}/c`,
      body: { data: { n: '1' } },
      contentType: 'application/merge-patch+json',
      fence: term,
    })
    sent.catch(() => {})
    await new Promise((r) => setTimeout(r, 50)) // the write reached the server, which holds it
    await e.stop()
    assert.is(during.valid, false, 'closed: no new write passes the fence')
    assert.is(during.aborted, false, 'not ended: what was sent is not cut off')
    assert.instance(during.refused, FencedError, 'a write after the close is refused, not sent')
    const answered = await sent
    const lease = await cluster.request({ path: '/apis/coordination.k8s.io/v1/namespaces/default/leases/drain' })
    assert.is(lease.spec.holderIdentity, '', 'released')
    assert.ok(
      Number(answered.metadata.resourceVersion) < Number(lease.metadata.resourceVersion),
      `the write (rv ${answered.metadata.resourceVersion}) landed before the release (rv ${lease.metadata.resourceVersion})`,
    )
    assert.is((await cluster.request({ path: `${cm}/c` })).data.n, '1', 'the refused write was not carried out')
  } finally {
    server.control.clearFaults()
    await e.stop()
    await cluster.close()
    await server.stop()
  }
})

test('a logger that throws does not keep a leader working past its term', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  let running = false
  const errors: string[] = []
  const a = new LeaderElector({
    cluster,
    namespace: 'kube-system',
    name: 'throwing',
    identity: 'a',
    ...FAST,
    onStartedLeading: () => {
      running = true
    },
    onStoppedLeading: () => {
      running = false
    },
    logger: collectingLogger((e) => {
      errors.push((e.fields.err as Error).message)
      throw new Error('a buggy logger')
    }),
  })
  await a.start()
  try {
    await a.waitLeading(AbortSignal.timeout(5000))
    assert.ok(running)
    // renewals fail: the term ends at its deadline and the work must be stopped
    const removeOutage = server.control.fail({ path: '/leases/', status: 500 })
    await waitUntil(() => !a.isLeader(), 'the term to end', 3000)
    await waitUntil(() => !running, 'onStoppedLeading after a failed renewal', 3000)
    assert.ok(errors.length >= 1)
    // and the elector campaigns again once the API is back
    removeOutage()
    await a.waitLeading(AbortSignal.timeout(5000))
    assert.ok(running)
  } finally {
    await a.stop()
    await cluster.close()
    await server.stop()
  }
})

test('two candidates racing for a new lease: one wins, one gets a conflict', async () => {
  const server = await startServer()
  const c1 = clusterFor(server)
  const c2 = clusterFor(server)
  try {
    const l1 = new LeaseLock({ cluster: c1, namespace: 'default', name: 'race', identity: 'one', ...FAST })
    const l2 = new LeaseLock({ cluster: c2, namespace: 'default', name: 'race', identity: 'two', ...FAST })
    const rs = await Promise.all([l1.tryAcquireOrRenew(), l2.tryAcquireOrRenew()])
    assert.equal([...rs].sort(), ['acquired', 'held'])
    // an expired lease: two candidates PUT with the same resourceVersion: one wins
    const winner = rs[0] === 'acquired' ? l1 : l2
    winner.drop() // the holder "dies"
    const w1 = new LeaseLock({ cluster: c1, namespace: 'default', name: 'race', identity: 'three', ...FAST })
    const w2 = new LeaseLock({ cluster: c2, namespace: 'default', name: 'race', identity: 'four', ...FAST })
    assert.equal(await Promise.all([w1.tryAcquireOrRenew(), w2.tryAcquireOrRenew()]), ['held', 'held'])
    await new Promise((r) => setTimeout(r, FAST.leaseDurationMs + 50))
    const rs2 = await Promise.all([w1.tryAcquireOrRenew(), w2.tryAcquireOrRenew()])
    assert.equal([...rs2].sort(), ['acquired', 'held'])
    const lease = await c1.request({ path: leasePath('default', 'race') })
    assert.is(lease.spec.leaseTransitions, 1)
    assert.is(lease.spec.holderIdentity, rs2[0] === 'acquired' ? 'three' : 'four')
  } finally {
    await c1.close()
    await c2.close()
    await server.stop()
  }
})

test('three in-process instances: frozen holder, API errors, outage; never two leaders at once', async () => {
  const server = await startServer({ seed: 7 })
  const clusters = [0, 1, 2].map(() => new FreezableCluster({ kubeconfig: server.kubeconfig, qps: 0 }))
  const periods: Period[] = []
  const acting = { actions: 0, violations: [] as string[] }
  const starts: Array<{ id: string; at: number }> = []
  const electors = clusters.map(
    (cluster, i) =>
      new LeaderElector({
        cluster,
        namespace: 'default',
        name: 'ha',
        identity: `r${i}`,
        ...FAST,
        onStartedLeading: (term: LeaseTerm) => {
          starts.push({ id: term.identity, at: term.startedAt })
          void actWhileLeading(cluster, 'fence-ha', term, 15, acting)
        },
        onStoppedLeading: (term) => {
          periods.push(periodOf(term))
        },
      }),
  )
  const leader = () => electors.filter((e) => e.isLeader())
  try {
    for (const e of electors) e.start()
    await waitUntil(() => leader().length === 1, 'a leader', 5000)
    await waitUntil(() => acting.actions >= 5, 'actions', 5000)

    // 1. freeze the holder: its requests stall; it stops acting at its renew deadline; another takes over
    for (let round = 0; round < 2; round++) {
      const old = leader()[0]
      const i = electors.indexOf(old)
      const frozenAt = wallNow()
      clusters[i].freeze()
      const took = await waitUntil(() => leader().some((e) => e !== old), 'a takeover', 5000)
      assert.not.ok(old.isLeader(), 'the frozen holder stopped at its deadline')
      const took2 = starts[starts.length - 1]
      assert.ok(took2.id !== old.identity)
      const delay = took2.at - frozenAt
      assert.ok(delay <= FAST.leaseDurationMs + 2 * FAST.retryPeriodMs * 1.2 + 500, `takeover after ${delay.toFixed(0)} ms`)
      void took
      clusters[i].thaw()
      await waitUntil(() => acting.actions >= 5 * (round + 2), 'the new leader acting', 5000)
    }

    // 2. API errors on leases: 30% of lease requests fail with 500 for a while
    const removeFault = server.control.fail({ path: '/leases/', ratio: 0.3, status: 500 })
    await new Promise((r) => setTimeout(r, 1500))
    removeFault()
    await waitUntil(() => leader().length === 1, 'a leader after errors', 5000)

    // 3. an outage of the lease API: the leader steps down at its renew deadline; nobody leads
    const before = leader()[0]
    const removeOutage = server.control.fail({ path: '/leases/', status: 503 })
    await waitUntil(() => !before.isLeader(), 'the leader to step down', 2000)
    assert.is(leader().length, 0)
    removeOutage()
    await waitUntil(() => leader().length === 1, 'a leader after the outage', 5000)

    for (const e of electors) assert.ok(e.health().terms >= 0)
  } finally {
    for (const c of clusters) c.thaw()
    await Promise.all(electors.map((e) => e.stop()))
    for (const c of clusters) await c.close()
    await server.stop()
  }
  const problems = checkFencing(periods)
  assert.equal(problems, [], problems.join('\n'))
  assert.equal(acting.violations, [], acting.violations.join('\n'))
  assert.ok(periods.length >= 4, `periods ${periods.length}`)
})

test('an acquiring write whose answer is lost (the server carried it out) is released on stop all the same', async () => {
  const server = await startServer()
  const real = clusterFor(server)
  let loseNextWrite = false
  // the server carries the write out; the answer never reaches us (aborted, the connection lost)
  const cluster = Object.create(real) as typeof real
  cluster.request = (async (o: any) => {
    const res = await real.request(o)
    if (loseNextWrite && o.method !== undefined && o.method !== 'GET') {
      loseNextWrite = false
      throw new DOMException('the answer was lost', 'AbortError')
    }
    return res
  }) as typeof real.request
  try {
    for (const create of [true, false]) {
      const name = create ? 'lost-create' : 'lost-put'
      if (!create) {
        // a Lease held by nobody: the acquiring write is a PUT
        const other = new LeaseLock({ cluster: real, namespace: 'default', name, identity: 'other', ...FAST })
        assert.is(await other.tryAcquireOrRenew(), 'acquired')
        assert.ok(await other.release())
      }
      const lock = new LeaseLock({ cluster, namespace: 'default', name, identity: 'me', ...FAST })
      loseNextWrite = true
      await lock.tryAcquireOrRenew().then(
        () => assert.unreachable('the answer was lost'),
        () => undefined,
      )
      const lease = () => server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, name, 'default')
      assert.is(lease().spec.holderIdentity, 'me', 'the server carried the write out')
      assert.ok(await lock.release(), 'released though the acquiring answer never came')
      assert.is(lease().spec.holderIdentity, '')
    }
  } finally {
    real.close()
    await server.stop()
  }
})

test.run()
