// When a state-of-world controller runs and what a run is given, held to Kuadrant policy-machinery's
// controller: no call for an empty world (controller_test.go TestCacheSubscription), the topology's
// error handed to the reconcile function (controller.go propagate), and the run traced with
// OpenTelemetry spans `controller.reconcile` and `topology.build` (a tracer given, or the API's global
// one, the optional peer, loaded when none is given).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { trace } from '@opentelemetry/api'
import { startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { createLogger, waitForConvergence } from '@statewright/controller'
import { StateOfWorldController, type StateOfWorldContext } from '@statewright/controller/stateofworld'
import { type TracerLike } from '@statewright/statedb'
import { TopologyCycleError, defineTopology } from '@statewright/topology'
import { RecordingTracer } from './tracer.ts'

const CM = '/api/v1/namespaces/default/configmaps'

async function withController(
  o: { topology?: Parameters<typeof defineTopology>[0]; tracer?: TracerLike | false; fail?: () => boolean },
  body: (h: {
    runs: StateOfWorldContext[]
    put: (name: string, data: Record<string, string>) => Promise<unknown>
    ctl: StateOfWorldController
  }) => Promise<void>,
): Promise<void> {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const runs: StateOfWorldContext[] = []
  const ctl = new StateOfWorldController({
    name: 'runs',
    clusters: [cluster],
    logger: createLogger({ level: 'silent' }),
    retry: { minMs: 10, maxMs: 50 },
    watch: [{ kind: { apiVersion: 'v1', kind: 'ConfigMap' }, labelSelector: 'app=src' }],
    topology: o.topology ?? defineTopology({ targetables: [{ kind: 'ConfigMap' }], links: [] }),
    ...(o.tracer !== undefined ? { tracer: o.tracer } : {}),
    reconcile: (ctx) => {
      runs.push(ctx)
      if (o.fail?.()) throw new Error('downstream unavailable')
    },
  })
  const put = (name: string, data: Record<string, string>) =>
    cluster.request({
      method: 'PATCH',
      path: `${CM}/${name}`,
      query: { fieldManager: 'user', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', labels: { app: 'src' } }, data },
    })
  try {
    await ctl.start()
    await body({ runs, put, ctl })
  } finally {
    await ctl.stop()
    await cluster.close()
    await server.stop()
  }
}

// follows policy-machinery controller/controller_test.go TestCacheSubscription
test('TestCacheSubscription: an empty world is no run; one object is one run with its create (issue 26, cause 7)', async () => {
  await withController({ tracer: false }, async ({ runs, put, ctl }) => {
    await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    assert.is(runs.length, 0, 'no reconcile call for an empty world')
    assert.equal(ctl.manager.readiness(), { ready: true, reasons: [] }, 'ready all the same: synced, nothing to run')
    await put('a', { v: '1' })
    await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    assert.is(runs.length, 1)
    assert.equal(
      runs[0]!.events.map((e) => `${e.type} ${e.kind} ${(e.new ?? e.old)!.metadata.name}`),
      ['create ConfigMap a'],
    )
  })
})

test("the topology's cycle is handed to reconcile as ctx.error, and goes when the cycle does", async () => {
  // ConfigMaps name their children in data.next: a -> b -> a is a cycle
  const topology = defineTopology({
    targetables: [{ kind: 'ConfigMap' }],
    links: [
      {
        from: 'ConfigMap',
        to: 'ConfigMap',
        children: (n) => (n.object.data?.next ? [`configmap:${n.namespace}/${n.object.data.next}`] : []),
      },
    ],
  })
  await withController({ topology, tracer: false }, async ({ runs, put, ctl }) => {
    await put('a', { next: 'b' })
    await put('b', { next: 'a' })
    await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    const last = runs.at(-1)!
    assert.instance(last.error, TopologyCycleError)
    assert.equal((last.error as TopologyCycleError).cycle, ['configmap:default/a', 'configmap:default/b', 'configmap:default/a'])
    await put('b', { next: '' })
    await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    assert.is(runs.at(-1)!.error, undefined)
  })
})

test('tracing: controller.reconcile with topology.build below it, events counted, a failed run recorded', async () => {
  const tracer = new RecordingTracer()
  let failures = 1
  await withController({ tracer, fail: () => failures-- > 0 }, async ({ runs, put, ctl }) => {
    await put('a', { v: '1' })
    await put('b', { v: '1' })
    await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    assert.is(runs.at(-1)!.tracer, tracer, 'the run has the tracer (for traceReconcile)')
  })
  const runSpans = tracer.spans.filter((s) => s.name === 'controller.reconcile')
  const buildSpans = tracer.spans.filter((s) => s.name === 'topology.build')
  assert.ok(runSpans.length >= 2, 'the failed run and its retry')
  assert.equal(runSpans[0]!.status, { code: 2, message: 'downstream unavailable' })
  assert.equal(runSpans[0]!.exceptions, ['downstream unavailable'])
  assert.is(runSpans[0]!.attributes['controller.name'], 'runs')
  assert.ok((runSpans[0]!.attributes['events.count'] as number) >= 1)
  assert.equal(runSpans.at(-1)!.status, undefined, 'a run that succeeds leaves the status unset')
  assert.ok(
    tracer.spans.every((s) => s.ended),
    'every span ended',
  )
  assert.equal(
    buildSpans.map((s) => s.parent),
    runSpans.map(() => 'controller.reconcile'),
  )
  const b = buildSpans.at(-1)!.attributes
  assert.equal([b['topology.targetables'], b['topology.policies'], b['topology.objects']], [2, 0, 0])
})

test("tracing without a tracer given: @opentelemetry/api's global tracer, the optional peer", async () => {
  // an @opentelemetry/api Tracer is a TracerLike (checked by the type-check)
  const otel: TracerLike = trace.getTracer('statewright-test')
  assert.type(otel.startActiveSpan, 'function')
  const tracer = new RecordingTracer()
  // a provider of our own where an SDK would register one
  trace.setGlobalTracerProvider({ getTracer: () => tracer as never })
  try {
    await withController({}, async ({ put, ctl }) => {
      await put('a', { v: '1' })
      await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    })
  } finally {
    trace.disable()
  }
  assert.ok(tracer.spans.some((s) => s.name === 'controller.reconcile'))
  // tracer: false traces none of the controller's runs (the Manager's own tracer, the global one,
  // still traces its clusters: k8s.request, k8s.apply, reflector.event, reflector.list)
  const runs = () => tracer.spans.filter((s) => s.name.startsWith('controller.') || s.name.startsWith('topology.')).length
  const before = runs()
  trace.setGlobalTracerProvider({ getTracer: () => tracer as never })
  try {
    await withController({ tracer: false }, async ({ put, ctl }) => {
      await put('a', { v: '2' })
      await waitForConvergence(ctl.manager, { timeoutMs: 10_000 })
    })
  } finally {
    trace.disable()
  }
  assert.is(runs(), before)
})

test.run()
