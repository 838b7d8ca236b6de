// Manager.reconcile end to end on the test server (a Gadget CRD with a status subresource): children
// applied with the primary as their controller, status and conditions written on /status with
// observedGeneration and only when they change, a throwing fn as Ready=False + a Warning Event + a
// retry with backoff + degraded health, requeueAfterMs, and bad results named.
// Follows controller-runtime's reconcile contract (pkg/reconcile: Result{RequeueAfter}, an error
// requeues with backoff) and kopf's handler outcomes (status written back, an exception retried).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { type KubeObject } from '@statewright/k8s'
import { ConfigMap } from '@statewright/k8s/kinds'
import { Manager, TerminalError, createLogger, findCondition, conditionsOf, waitForConvergence } from '@statewright/controller'
import { GADGET, createGadget, env, gadget, waitTable, type Env } from './helpers.ts'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const quiet = createLogger({ level: 'silent' })

function manager(e: Env) {
  return new Manager({
    name: 'gadget-controller',
    cluster: e.cluster,
    logger: quiet,
    handleSignals: false,
    http: false,
    retry: { minMs: 20, maxMs: 200 },
  })
}
const configMap = (g: KubeObject, data: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: `gadget-${g.metadata.name}`, namespace: g.metadata.namespace },
  data,
})
const gadgetOf = (e: Env, name: string) => e.server.control.get(GADGET, name, 'default')
const spec = (e: Env, name: string, s: Record<string, unknown>) =>
  e.cluster.request({
    method: 'PATCH',
    path: `/apis/example.com/v1/namespaces/default/gadgets/${name}`,
    body: { spec: s },
    contentType: 'application/merge-patch+json',
  })
const statusWrites = (e: Env) => e.server.control.requestLog().filter((r) => r.method === 'PATCH' && r.path.endsWith('/status')).length
async function events(e: Env, m: Manager, name: string) {
  await m.events.flush()
  const list: any = await e.cluster.request({ path: '/api/v1/namespaces/default/events' })
  return (list.items as any[]).filter((ev) => ev.involvedObject?.name === name)
}

test('children owned by the primary; status and conditions on /status with observedGeneration, written only when changed', async () => {
  const e = await env()
  const m = manager(e)
  try {
    const step = m.reconcile({
      for: GADGET,
      owns: [CM],
      fn: (g) => ({
        children: configMap(g, { size: String((g.spec as any)?.size) }),
        status: { phase: `size ${(g.spec as any)?.size}` },
        conditions: [{ type: 'Available', status: 'True', reason: 'ConfigMapApplied', message: 'one ConfigMap' }],
      }),
    })
    const created = await createGadget(e.cluster, gadget('a', { size: 1 }))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    const cm = e.server.control.get(CM, 'gadget-a', 'default')
    assert.is(cm.data.size, '1')
    assert.equal(
      cm.metadata.ownerReferences.map((r: any) => [r.kind, r.name, r.uid, r.controller]),
      [['Gadget', 'a', created.metadata.uid, true]],
    )
    let g = gadgetOf(e, 'a')
    assert.is(g.status.phase, 'size 1')
    assert.is(g.status.observedGeneration, 1)
    const ready = findCondition(conditionsOf(g), 'Ready')!
    assert.equal([ready.status, ready.reason, ready.observedGeneration], ['True', 'Reconciled', 1])
    assert.equal(findCondition(conditionsOf(g), 'Available')?.observedGeneration, 1)
    assert.is(statusWrites(e), 1, 'one status write')

    // fn runs again with the same outcome: no second write
    const runs = step.derivation.runs
    await step.derivation.rederive()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.ok(step.derivation.runs > runs, 'fn ran again')
    assert.is(statusWrites(e), 1, 'an unchanged status is not written again')

    await spec(e, 'a', { size: 2 })
    await waitForConvergence(m, { timeoutMs: 10_000 })
    g = gadgetOf(e, 'a')
    assert.is(g.metadata.generation, 2)
    assert.is(g.status.phase, 'size 2')
    assert.is(g.status.observedGeneration, 2)
    assert.is(findCondition(conditionsOf(g), 'Ready')!.observedGeneration, 2)
    assert.is(findCondition(conditionsOf(g), 'Ready')!.lastTransitionTime, ready.lastTransitionTime, 'Ready stayed True')
    assert.is(e.server.control.get(CM, 'gadget-a', 'default').data.size, '2')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('a throwing fn: Ready=False with the message, a Warning Event, retries with backoff, degraded health; children kept; then recovery', async () => {
  const e = await env()
  const m = manager(e)
  try {
    const step = m.reconcile({
      for: GADGET,
      owns: [CM],
      fn: (g) => {
        const broken = (g.spec as any)?.broken
        if (broken) throw new Error(`cannot size: ${broken}`)
        return { children: configMap(g, { ok: 'yes' }) }
      },
    })
    await createGadget(e.cluster, gadget('b', {}))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(findCondition(conditionsOf(gadgetOf(e, 'b')), 'Ready')?.status, 'True')

    await spec(e, 'b', { broken: 'disk full' })
    // retried with backoff without any change: attempts grow
    await waitTable(
      m.db,
      step.results,
      (txn) => (step.results.get(txn, step.results.primary.query('default/b'))?.attempts ?? 0) >= 3,
      'three failed runs',
    )
    await waitForConvergence(m, { timeoutMs: 10_000 })
    const ready = findCondition(conditionsOf(gadgetOf(e, 'b')), 'Ready')!
    assert.equal([ready.status, ready.reason, ready.message], ['False', 'ReconcileError', 'cannot size: disk full'])
    assert.is(e.server.control.get(CM, 'gadget-b', 'default').data.ok, 'yes', 'the previous children stay')
    const comp = (m.status().components as any[]).find((c) => c.name === 'reconcile gadgets')
    assert.is(comp.level, 'degraded')
    assert.is(comp.ready, true, 'an object error is not unreadiness')
    assert.match(comp.message, 'default/b: cannot size: disk full')
    assert.is(m.readiness().ready, true)
    const warnings = (await events(e, m, 'b')).filter((ev) => ev.reason === 'ReconcileError')
    assert.is(warnings.length, 1, 'repeats aggregate into one Event')
    assert.is(warnings[0].type, 'Warning')
    assert.is(warnings[0].message, 'cannot size: disk full')
    assert.ok(warnings[0].count >= 1)

    await spec(e, 'b', { broken: null })
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(findCondition(conditionsOf(gadgetOf(e, 'b')), 'Ready')?.status, 'True')
    assert.equal(step.failing(), [])
    assert.is((m.status().components as any[]).find((c) => c.name === 'reconcile gadgets').level, 'ok')
    const normal = (await events(e, m, 'b')).find((ev) => ev.reason === 'Reconciled')
    assert.is(normal?.type, 'Normal', 'the transition back to Ready=True is an Event')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('requeueAfterMs runs fn again later without any change; a bad value is the object error naming it', async () => {
  const e = await env()
  const m = manager(e)
  const ticks = new Map<string, number>()
  try {
    m.reconcile({
      for: GADGET,
      owns: [CM],
      fn: (g) => {
        const name = String(g.metadata.name)
        if (name === 'bad') return { requeueAfterMs: -5 }
        const n = (ticks.get(name) ?? 0) + 1
        ticks.set(name, n)
        return { children: configMap(g, { tick: String(n) }), ...(n < 3 ? { requeueAfterMs: 30 } : {}) }
      },
    })
    await createGadget(e.cluster, gadget('c', {}))
    await createGadget(e.cluster, gadget('bad', {}))
    await m.start()
    const owned = m.watched.get('owned-configmaps')!.table
    await waitTable(
      m.db,
      owned,
      (txn) => (owned.get(txn, owned.primary.query('default/gadget-c'))?.data as any)?.tick === '3',
      'the third tick applied',
    )
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(ticks.get('c'), 3, 'no requeue after a run that asks for none')
    const ready = findCondition(conditionsOf(gadgetOf(e, 'bad')), 'Ready')!
    assert.is(ready.status, 'False')
    assert.match(ready.message, 'requeueAfterMs must be a non-negative number of ms, not -5')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('a built-in kind without status (readyCondition false): children applied, no /status request', async () => {
  const e = await env()
  const m = manager(e)
  try {
    m.reconcile({
      for: ConfigMap,
      readyCondition: false,
      observedGeneration: false,
      fn: (cm) =>
        cm.metadata?.name === 'in'
          ? {
              children: {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                metadata: { name: 'out', namespace: 'default' },
                data: { v: cm.data?.v ?? '' },
              },
            }
          : {},
    })
    await e.cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'in' }, data: { v: 'x' } },
    })
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(e.server.control.get(CM, 'out', 'default').data.v, 'x')
    assert.is(statusWrites(e), 0)
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('bad input: a step name used twice, reconcile() after start()', async () => {
  const e = await env()
  const m = manager(e)
  try {
    const gadgets = m.watch(GADGET)
    m.reconcile({ for: gadgets, fn: () => ({}) })
    assert.throws(() => m.reconcile({ for: gadgets, fn: () => ({}) }), /already named "gadgets"/)
    await m.start()
    assert.throws(() => m.reconcile({ for: gadgets, name: 'x', fn: () => ({}) }), /reconcile\(\) must be called before start\(\)/)
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('status writes go concurrently: 32 objects whose /status PATCH is held 300 ms each are Ready long before 32 x 300 ms', async () => {
  const e = await env()
  const m = manager(e)
  try {
    m.reconcile({ for: GADGET, fn: (g) => ({ status: { phase: `size ${(g.spec as any)?.size}` } }) })
    for (let i = 0; i < 32; i++) await createGadget(e.cluster, gadget(`s${i}`, { size: i }))
    const undelay = e.server.control.delay({ method: 'PATCH', path: /\/status$/, ms: 300 })
    const t0 = performance.now()
    await m.start()
    await waitForConvergence(m, { timeoutMs: 30_000 })
    const took = performance.now() - t0
    undelay()
    for (let i = 0; i < 32; i++) assert.is(gadgetOf(e, `s${i}`).status.phase, `size ${i}`)
    // one at a time takes at least 9.6 s; 16 at a time about 0.6 s (bounds far apart: true under load)
    assert.ok(took < 6000, `32 status writes took ${Math.round(took)} ms: not concurrent`)
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('controller_runtime_reconcile_total counts runs of fn with their result; applies have their own metric', async () => {
  const e = await env()
  const m = manager(e)
  try {
    let runs = 0
    let failed = false
    m.reconcile({
      for: GADGET,
      owns: [CM],
      fn: (g) => {
        runs++
        if (!failed) {
          failed = true
          throw new Error('once')
        }
        return { children: configMap(g, {}), requeueAfterMs: runs < 5 ? 10 : undefined }
      },
    })
    await createGadget(e.cluster, gadget('a'))
    await m.start()
    await waitTable(m.db, m.derivations[0]!.to, () => runs >= 5, 'five runs')
    await waitForConvergence(m, { timeoutMs: 10_000 })
    const text = await m.registry!.metrics()
    const count = (result: string) =>
      Number(text.match(new RegExp(`controller_runtime_reconcile_total\\{controller="gadgets",result="${result}"\\} (\\d+)`))?.[1] ?? 0)
    assert.is(count('error'), 1)
    assert.is(count('error') + count('requeue_after') + count('success'), runs, `every run counted (${runs})`)
    assert.ok(count('requeue_after') >= 3)
    assert.match(text, /statewright_controller_apply_total\{controller="gadget-controller",operation="update",result="success"\} [1-9]/)
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('Events worth reading: one Event per object on the happy path, none again after a restart; conditionEvents picks', async () => {
  const e = await env()
  const run = async (o: { conditionEvents?: boolean | string[] } = {}) => {
    const m = manager(e)
    m.reconcile({
      for: GADGET,
      fn: (g) => ({
        status: { phase: 'ok' },
        conditions: [{ type: 'Available', status: 'True', reason: 'AllReplicasReady', message: `${g.metadata.name} is up` }],
      }),
      ...o,
    })
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    // fn runs again (a resync): nothing changed, no Event
    for (const d of m.derivations) await d.rederive()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    await m.events.flush()
    await m.stop()
  }
  const normals = async () => {
    const list: any = await e.cluster.request({ path: '/api/v1/namespaces/default/events' })
    return (list.items as any[])
      .filter((ev) => ev.type === 'Normal')
      .map((ev) => `${ev.involvedObject.name} ${ev.reason} x${ev.count ?? 1}`)
  }
  try {
    for (let i = 0; i < 5; i++) await createGadget(e.cluster, gadget(`ev${i}`))
    await run()
    const first = (await normals()).sort()
    assert.equal(
      first,
      [0, 1, 2, 3, 4].map((i) => `ev${i} Reconciled x1`),
      'the ready condition appearing True: one Event per object',
    )
    await run() // a restart: Ready never changed
    assert.equal((await normals()).sort(), first, 'no Event again after a restart')
    await createGadget(e.cluster, gadget('ev9'))
    await run({ conditionEvents: ['Available'] })
    assert.ok((await normals()).includes('ev9 AllReplicasReady x1'), 'a listed type has its Event')
    assert.not.ok(
      (await normals()).some((x) => x.startsWith('ev9 Reconciled')),
      'the ready condition not listed: none',
    )
  } finally {
    await e.stop()
  }
})

test('a reconcile step: ctx.reason, onDeleted with the last state, and a TerminalError that is not retried (Ready=False TerminalError)', async () => {
  const e = await env()
  const m = manager(e)
  const reasons: string[] = []
  const deleted: string[] = []
  let runsOfBad = 0
  try {
    m.reconcile({
      for: GADGET,
      fn: (g, ctx) => {
        reasons.push(`${g.metadata.name}:${ctx.reason}`)
        if ((g.spec as any)?.size === -1) {
          runsOfBad++
          throw new TerminalError('size -1 can never work')
        }
        return { status: { phase: 'ok' } }
      },
      onDeleted: (last) => deleted.push(`${last.metadata.name}@${(last.spec as any)?.size}`),
    })
    await createGadget(e.cluster, gadget('good', { size: 1 }))
    await createGadget(e.cluster, gadget('bad', { size: -1 }))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    const ready = findCondition(conditionsOf(gadgetOf(e, 'bad')), 'Ready')!
    assert.equal([ready.status, ready.reason, ready.message], ['False', 'TerminalError', 'size -1 can never work'])
    // the Manager's retry is 20-200 ms: 600 ms later the terminal error has not run again (its own
    // status write ran it once more, as any status write does: that is a change, not a retry)
    const runs = runsOfBad
    await new Promise((r) => setTimeout(r, 600))
    assert.is(runsOfBad, runs, 'not retried')
    assert.ok(runs <= 2)
    await spec(e, 'bad', { size: 2 }) // a change runs it again
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(findCondition(conditionsOf(gadgetOf(e, 'bad')), 'Ready')!.status, 'True')
    await e.cluster.request({ method: 'DELETE', path: '/apis/example.com/v1/namespaces/default/gadgets/good' })
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.equal(deleted, ['good@1'])
    assert.ok(reasons.includes('good:created') && reasons.includes('bad:updated'), reasons.join(' '))
  } finally {
    await m.stop()
    await e.stop()
  }
})

test.run()
