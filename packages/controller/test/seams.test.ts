// The operator layer's seams (issue 36): a Database-like operator (a Gadget owning a ConfigMap and a
// Secret holding a generated password, read back through a join so it is created once) restarted the
// way pods restart, with slow lists and functions that throw once.
// Follows controller-runtime's start-up contract (pkg/internal/controller/controller_test.go: "should
// wait for the cache to sync before starting workers", "should not call Reconcile before caches are
// synced"; a failed Reconcile deletes nothing) in the form statewright needs it: its prune deletes
// what is not desired, so an owner's children are pruned only after its fn succeeded in this process.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { randomBytes } from 'node:crypto'
import type { KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence, type ReconcileStep } from '@statewright/controller'
import { GADGET, createGadget, env, gadget, waitTable, type Env } from './helpers.ts'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const SECRET = { apiVersion: 'v1', kind: 'Secret' }
const quiet = createLogger({ level: 'silent' })
const N = 5

interface Operator {
  m: Manager
  step: ReconcileStep
  /** Per gadget, what fn saw of its Secret on each run: the password, or undefined when absent. */
  seen: Map<string, Array<string | undefined>>
}

/** The operator; `throwOnce` makes fn throw on its first run for each gadget (in this process). */
function operator(e: Env, o: { throwOnce?: boolean; derive?: boolean } = {}): Operator {
  const m = new Manager({
    name: 'gadget-operator',
    cluster: e.cluster,
    logger: process.env.SEAMS_DEBUG ? createLogger({ level: 'debug' }) : quiet,
    handleSignals: false,
    http: false,
    retry: { minMs: 20, maxMs: 100 },
  })
  const secrets = m.watch(SECRET)
  m.owns(CM)
  const seen = new Map<string, Array<string | undefined>>()
  const thrown = new Set<string>()
  const children = (g: KubeObject, existing: KubeObject | undefined): KubeObject[] => {
    const name = g.metadata.name!
    const password = existing ? Buffer.from(String((existing.data as any).password), 'base64').toString() : randomBytes(8).toString('hex')
    if (!seen.has(name)) seen.set(name, [])
    seen.get(name)!.push(existing ? password : undefined)
    if (o.throwOnce && !thrown.has(name)) {
      thrown.add(name)
      throw new Error(`first run of ${name} fails`)
    }
    return [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `${name}-config`, namespace: 'default' },
        data: { size: String((g.spec as any)?.size) },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `${name}-pw`, namespace: 'default' },
        data: { password: Buffer.from(password).toString('base64') },
      },
    ]
  }
  const step = m.reconcile({
    for: GADGET,
    owns: [CM, SECRET],
    joins: [secrets],
    fn: (g, ctx) => ({ children: children(g, ctx.get(secrets, secrets.primary.query(`default/${g.metadata.name}-pw`))) }),
  })
  return { m, step, seen }
}

const passwords = (e: Env) =>
  new Map(
    Array.from({ length: N }, (_, i) => {
      const s = e.server.control.get(SECRET, `g${i}-pw`, 'default')
      return [`g${i}`, s ? Buffer.from(s.data.password, 'base64').toString() : undefined] as const
    }),
  )
const deletes = (e: Env) =>
  e.server.control
    .requestLog()
    .filter((r) => r.method === 'DELETE' && /configmaps|secrets/.test(r.path))
    .map((r) => r.path)

/** A first operator creates every gadget's children; it stops as a pod does. */
async function firstRun(e: Env): Promise<Map<string, string | undefined>> {
  for (let i = 0; i < N; i++) await createGadget(e.cluster, gadget(`g${i}`, { size: i }))
  const first = operator(e)
  await first.m.start()
  await waitForConvergence(first.m, { timeoutMs: 20_000 })
  await first.m.stop()
  const pw = passwords(e)
  assert.ok(
    [...pw.values()].every((p) => typeof p === 'string' && p.length === 16),
    'every password generated',
  )
  e.server.control.clearRequestLog()
  return pw
}

/** Until every gadget's run succeeded in this process. */
const allSettled = (op: Operator) =>
  waitTable(
    op.m.db,
    op.step.results,
    (txn) =>
      op.step.results.count(txn) === N &&
      op.step.results
        .all(txn)
        .toArray()
        .every((r) => r.error === undefined),
    'every gadget reconciled without error',
    20_000,
  )

test('after a restart with a slow Secret LIST, fn that throws once per object: no child deleted, no password replaced', async () => {
  const e = await env()
  try {
    const before = await firstRun(e)
    const undelay = e.server.control.delay({ method: 'GET', path: /\/secrets$/, watch: false, ms: 1000 })
    const op = operator(e, { throwOnce: true })
    await op.m.start()
    await allSettled(op)
    await waitForConvergence(op.m, { timeoutMs: 20_000 })
    undelay()
    assert.equal(deletes(e), [], 'nothing deleted')
    assert.equal(passwords(e), before, 'every password kept')
    for (const [name, runs] of op.seen)
      assert.ok(
        runs.every((p) => p === before.get(name)),
        `${name}: fn always saw its Secret`,
      )
    await op.m.stop()
  } finally {
    await e.stop()
  }
})

test('fn never runs before its joins are listed: a slow Secret LIST after a restart replaces no password', async () => {
  const e = await env()
  try {
    const before = await firstRun(e)
    const undelay = e.server.control.delay({ method: 'GET', path: /\/secrets$/, watch: false, ms: 1000 })
    const op = operator(e)
    await op.m.start()
    assert.match(op.m.readiness().reasons.join('; '), /waiting for "secrets" to be listed|reflector secrets: not synced/)
    await waitForConvergence(op.m, { timeoutMs: 20_000 })
    undelay()
    for (const [name, runs] of op.seen) assert.equal(runs, [before.get(name)], `${name}: one run, with its Secret`)
    assert.equal(passwords(e), before)
    assert.equal(deletes(e), [])
    await op.m.stop()
  } finally {
    await e.stop()
  }
})

test('children of an owner that never succeeds are kept; a child no longer wanted by a succeeding owner is pruned', async () => {
  const e = await env()
  try {
    await firstRun(e)
    // a child of g1 that its fn will not want any more, left in the cluster as a stale one
    const stale = { ...e.server.control.get(CM, 'g1-config', 'default') }
    await e.cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'g1-old', namespace: 'default', labels: stale.metadata.labels, ownerReferences: stale.metadata.ownerReferences },
      },
    })
    const m = new Manager({ name: 'gadget-operator', cluster: e.cluster, logger: quiet, handleSignals: false, http: false })
    m.owns(CM, SECRET)
    const step = m.reconcile({
      for: GADGET,
      fn: (g) => {
        if (g.metadata.name === 'g0') throw new Error('g0 is broken')
        const name = g.metadata.name!
        return {
          children: [
            { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-config`, namespace: 'default' }, data: { size: '0' } },
            { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-pw`, namespace: 'default' }, data: { password: 'eA==' } },
          ],
        }
      },
    })
    await m.start()
    await waitForConvergence(m, { timeoutMs: 20_000 })
    assert.equal(
      step.unsettledOwners().map((o) => o.name),
      ['default/g0'],
    )
    assert.ok(e.server.control.get(CM, 'g0-config', 'default'), "g0's ConfigMap kept")
    assert.ok(e.server.control.get(SECRET, 'g0-pw', 'default'), "g0's Secret kept")
    assert.not.ok(e.server.control.get(CM, 'g1-old', 'default'), "g1's stale child pruned (g1's fn succeeded)")
    await m.stop()
  } finally {
    await e.stop()
  }
})

test('derive: after a restart a fn that throws once keeps its outputs', async () => {
  const e = await env()
  try {
    for (let i = 0; i < N; i++) await createGadget(e.cluster, gadget(`g${i}`, { size: i }))
    const make = (throwOnce: boolean) => {
      const m = new Manager({
        name: 'gadget-deriver',
        cluster: e.cluster,
        logger: quiet,
        handleSignals: false,
        http: false,
        retry: { minMs: 20, maxMs: 100 },
      })
      const thrown = new Set<string>()
      const d = m.derive({
        from: m.watch(GADGET),
        owns: [CM],
        fn: (g) => {
          if (throwOnce && !thrown.has(g.metadata.name!)) {
            thrown.add(g.metadata.name!)
            throw new Error('first run fails')
          }
          return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${g.metadata.name}-d`, namespace: 'default' }, data: {} }
        },
      })
      return { m, d }
    }
    const first = make(false)
    await first.m.start()
    await waitForConvergence(first.m, { timeoutMs: 20_000 })
    await first.m.stop()
    e.server.control.clearRequestLog()
    const second = make(true)
    await second.m.start()
    await waitTable(
      second.m.db,
      second.d.errors,
      (txn) => second.d.failures(txn).length === 0 && second.d.unsettled(txn).length === 0,
      'recovered',
      20_000,
    )
    await waitForConvergence(second.m, { timeoutMs: 20_000 })
    assert.equal(deletes(e), [])
    for (let i = 0; i < N; i++) assert.ok(e.server.control.get(CM, `g${i}-d`, 'default'))
    await second.m.stop()
  } finally {
    await e.stop()
  }
})

test('waitForConvergence waits for a leader-elected Manager to lead and act; a standby times out naming the leader', async () => {
  const e = await env()
  const le = (identity: string) =>
    new Manager({
      name: 'gadget-leader',
      cluster: e.cluster,
      logger: quiet,
      handleSignals: false,
      http: false,
      leaderElection: { namespace: 'default', identity, leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 },
    })
  const derived = (m: Manager) =>
    m.derive({
      from: m.watch(GADGET),
      owns: [CM],
      fn: (g) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${g.metadata.name}-led`, namespace: 'default' }, data: {} }),
    })
  const a = le('replica-a')
  const b = le('replica-b')
  try {
    await createGadget(e.cluster, gadget('g0'))
    derived(a)
    derived(b)
    await a.start()
    // right after start(): not leading yet, its parts not started; the wait must not return before they acted
    const r = await waitForConvergence(a, { timeoutMs: 20_000 })
    assert.equal(r.errors, [])
    assert.ok(e.server.control.get(CM, 'g0-led', 'default'), 'the leader acted before the wait returned')
    assert.ok(a.isWorking())
    await b.start()
    const err = await waitForConvergence(b, { timeoutMs: 1000 }).then(
      () => undefined,
      (x: Error) => x,
    )
    assert.ok(err, 'a standby does not converge')
    assert.match(err!.message, /standby: replica-b waits to lead, replica-a leads/, err!.message)
  } finally {
    await b.stop()
    await a.stop()
    await e.stop()
  }
})

test("waitForConvergence({ errors: 'wait' }) waits until a failing fn succeeds; 'return' returns at once", async () => {
  const e = await env()
  const m = new Manager({
    name: 'gadget-errors',
    cluster: e.cluster,
    logger: quiet,
    handleSignals: false,
    http: false,
    retry: { minMs: 50, maxMs: 100 },
  })
  let failures = 3
  const d = m.derive({
    from: m.watch(GADGET),
    owns: [CM],
    fn: (g) => {
      if (failures-- > 0) throw new Error('not yet')
      return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${g.metadata.name}-w`, namespace: 'default' }, data: {} }
    },
  })
  try {
    await createGadget(e.cluster, gadget('g0'))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 20_000 })
    await waitForConvergence(m, { timeoutMs: 20_000, errors: 'wait' })
    assert.equal(d.failures(), [])
    assert.ok(e.server.control.get(CM, 'g0-w', 'default'))
  } finally {
    await m.stop()
    await e.stop()
  }
})

test.run()
