// A Manager's function runs as spans (ManagerOptions.tracer): a reconcile step's run is a
// `controller.reconcile_step` span, a derive function's a `controller.derive` span, a finalizer's
// cleanup a `controller.finalizer_cleanup` span, each with the object's key and kind, the run's
// reason and the function's name, and a throw as the span's error (status ERROR, the exception).
// The tracer is in memory (tracer.ts): no OpenTelemetry SDK.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { type KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { GADGET, createGadget, env, gadget } from './helpers.ts'
import { RecordingTracer } from './tracer.ts'

const quiet = createLogger({ level: 'silent' })
const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const cm = (g: KubeObject, prefix: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: `${prefix}-${g.metadata.name}`, namespace: g.metadata.namespace },
  data: { size: String((g.spec as any)?.size) },
})

test('reconcile step, derive and finalizer cleanup runs are spans with key, kind, reason; a throw is the span error', async () => {
  const e = await env()
  const tracer = new RecordingTracer()
  const m = new Manager({
    name: 'gadget-controller',
    cluster: e.cluster,
    logger: quiet,
    handleSignals: false,
    http: false,
    tracer,
    retry: { minMs: 20, maxMs: 200 },
  })
  try {
    const gadgets = m.watch(GADGET)
    m.reconcile({
      name: 'gadgets',
      for: gadgets,
      owns: [CM],
      fn: (g) => {
        if ((g.spec as any)?.size === 0) throw new Error('size 0 refused')
        return { children: cm(g, 'step'), status: { phase: 'ok' } }
      },
    })
    m.derive({ name: 'mirror', from: gadgets, fn: (g) => cm(g, 'mirror') })
    let cleaned = 0
    m.finalizer({ name: 'example.com/cleanup', on: gadgets, cleanup: () => void cleaned++ })
    await createGadget(e.cluster, gadget('a', { size: 1 }))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })

    const step = tracer.spans.filter((s) => s.name === 'controller.reconcile_step')
    assert.ok(step.length >= 1, 'a reconcile step run is a span')
    assert.equal(step[0]!.attributes, {
      'statewright.function': 'gadgets',
      'statewright.reason': 'created',
      'k8s.object.key': 'default/a',
      'k8s.object.kind': 'Gadget',
    })
    assert.ok(step.every((s) => s.ended))
    const derive = tracer.spans.filter((s) => s.name === 'controller.derive')
    assert.ok(derive.length >= 1, 'a derive run is a span')
    assert.is(derive[0]!.attributes['statewright.function'], 'mirror')
    assert.is(derive[0]!.attributes['k8s.object.key'], 'default/a')

    // a throw: the span's status is ERROR with the message, and the exception is recorded
    await e.cluster.request({
      method: 'PATCH',
      path: '/apis/example.com/v1/namespaces/default/gadgets/a',
      body: { spec: { size: 0 } },
      contentType: 'application/merge-patch+json',
    })
    const deadline = Date.now() + 10_000
    const failed = () => tracer.spans.find((s) => s.name === 'controller.reconcile_step' && s.status?.code === 2)
    while (!failed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    assert.equal(failed()?.status, { code: 2, message: 'size 0 refused' })
    assert.equal(failed()?.exceptions, ['size 0 refused'])
    assert.is(failed()?.attributes['statewright.reason'], 'updated')

    // deletion: the cleanup runs in its span
    await e.cluster.request({ method: 'DELETE', path: '/apis/example.com/v1/namespaces/default/gadgets/a' })
    const until = Date.now() + 10_000
    const cleanup = () => tracer.spans.find((s) => s.name === 'controller.finalizer_cleanup')
    while (!cleanup()?.ended && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
    assert.ok(cleaned >= 1)
    assert.is(cleanup()?.attributes['statewright.function'], 'example.com/cleanup')
    assert.is(cleanup()?.attributes['k8s.object.key'], 'default/a')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('tracer: false makes no spans, and the functions run as given', async () => {
  const e = await env()
  const m = new Manager({ name: 'gadget-controller', cluster: e.cluster, logger: quiet, handleSignals: false, http: false, tracer: false })
  try {
    assert.is(m.tracer, undefined)
  } finally {
    await e.stop()
  }
})

test.run()
