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
import { collectingLogger } from '../../../test/lib/logger.ts'

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

test("a run's requests are k8s.request spans of its trace, sent with traceparent; ctx.logger names the trace; applies and status writes are spans", async () => {
  const e = await env()
  const tracer = new RecordingTracer()
  const logger = collectingLogger()
  const reads: Promise<unknown>[] = []
  const m = new Manager({
    name: 'gadget-controller',
    cluster: e.cluster,
    logger,
    handleSignals: false,
    http: false,
    tracer,
  })
  try {
    m.reconcile({
      name: 'gadgets',
      for: GADGET,
      owns: [CM],
      fn: (g, ctx) => {
        ctx.logger?.info({ key: g.metadata.name }, 'reconciling')
        // a request the function starts (a read of something outside, say) is a child of its span
        reads.push(e.cluster.request({ path: '/api/v1/namespaces/default/configmaps' }))
        return { children: cm(g, 'step'), status: { phase: 'ok' } }
      },
    })
    await createGadget(e.cluster, gadget('b', { size: 1 }))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    await Promise.all(reads)
    const run = tracer.spans.find((s) => s.name === 'controller.reconcile_step' && s.attributes['k8s.object.key'] === 'default/b')!
    assert.ok(run, 'the run span')
    const inner = tracer.spans.find((s) => s.name === 'k8s.request' && s.parent === 'controller.reconcile_step')!
    assert.ok(inner, "the run's own request is a child span")
    assert.is(inner.traceId, run.traceId)
    assert.is(inner.attributes['k8s.request'], 'GET /api/v1/namespaces/default/configmaps')
    assert.is(inner.attributes['http.response.status_code'], 200)
    const log = e.server.control.requestLog()
    const sent = log.find(
      (r) => r.path === '/api/v1/namespaces/default/configmaps' && r.method === 'GET' && !r.watch && r.traceparent?.includes(run.traceId),
    )
    assert.is(sent?.traceparent, `00-${run.traceId}-${inner.spanId}-01`, "the request names the run's trace")
    const line = logger.entries.find((l) => l.msg === 'reconciling')?.fields
    assert.equal([line?.trace_id, line?.span_id, line?.reconcile], [run.traceId, run.spanId, 'gadgets'])
    // the apply of the child and the status write are k8s.request spans, sent with their traceparent
    const apply = log.find((r) => r.method === 'PATCH' && r.path === '/api/v1/namespaces/default/configmaps/step-b')
    const status = log.find((r) => r.method === 'PATCH' && r.path === '/apis/example.com/v1/namespaces/default/gadgets/b/status')
    const event = log.find((r) => r.method === 'POST' && r.path === '/api/v1/namespaces/default/events')
    for (const r of [apply, status, event]) {
      assert.ok(r?.traceparent, `${r?.path} has a traceparent`)
      const [, traceId, spanId] = r!.traceparent!.split('-')
      const span = tracer.spans.find((s) => s.spanId === spanId)
      assert.is(span?.name, 'k8s.request')
      assert.is(span?.traceId, traceId)
      assert.is(span?.attributes['http.request.method'], r!.method)
    }
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('why did this object change is one trace: the watch event, the run linked to it, and its applies, status write and Events as its children', async () => {
  const e = await env()
  const tracer = new RecordingTracer()
  const m = new Manager({ name: 'gadget-controller', cluster: e.cluster, logger: quiet, handleSignals: false, http: false, tracer })
  try {
    const gadgets = m.watch(GADGET)
    m.reconcile({
      name: 'gadgets',
      for: gadgets,
      owns: [CM],
      fn: (g) => ({ children: cm(g, 'step'), status: { size: (g.spec as any)?.size } }),
    })
    m.derive({ name: 'mirror', from: gadgets, fn: (g) => cm(g, 'mirror') })
    await createGadget(e.cluster, gadget('c', { size: 1 }))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })

    // the first run's cause is the initial list; its Ready Event is its child
    const list = tracer.named('reflector.list').find((s) => s.attributes['k8s.object.kind'] === 'Gadget')!
    assert.ok(list, 'a list is a span reflector.list')
    const first = tracer.named('controller.reconcile_step').find((s) => s.attributes['statewright.reason'] === 'created')!
    assert.equal(first.links, [{ traceId: list.traceId, spanId: list.spanId, traceFlags: 1 }], 'the first run links to the list')
    await m.events.flush()
    const event = tracer.named('k8s.event').find((s) => s.attributes['k8s.event.reason'] === 'Reconciled')
    assert.is(event?.parentSpanId, first.spanId, "the run's Ready Event is its child")
    assert.is(event?.traceId, first.traceId)

    // an outside change: its watch event is a span, and the run it causes links to it
    const patched = await e.cluster.request({
      method: 'PATCH',
      path: '/apis/example.com/v1/namespaces/default/gadgets/c',
      body: { spec: { size: 2 } },
      contentType: 'application/merge-patch+json',
    })
    await waitForConvergence(m, { timeoutMs: 10_000 })
    const received = tracer
      .named('reflector.event')
      .find(
        (s) => s.attributes['k8s.object.key'] === 'default/c' && s.attributes['k8s.resource_version'] === patched.metadata.resourceVersion,
      )!
    assert.ok(received, "the watch event's receipt is a span reflector.event")
    assert.is(received.attributes['k8s.event.type'], 'MODIFIED')
    assert.is(received.parentSpanId, undefined, 'a new trace')
    const linked = (name: string) =>
      tracer.named(name).find((s) => s.links.some((l) => l.spanId === received.spanId && l.traceId === received.traceId))
    const run = linked('controller.reconcile_step')!
    assert.ok(run, 'the reconcile step run links to the watch event')
    assert.is(run.attributes['statewright.reason'], 'updated')
    const derive = linked('controller.derive')!
    assert.ok(derive, 'the derive run links to the watch event')

    // the run's apply and status write are its children; their requests are theirs
    const childOf = (parent: { spanId: string; traceId: string }, name: string, key?: string) =>
      tracer.spans.find(
        (s) =>
          s.name === name &&
          s.parentSpanId === parent.spanId &&
          s.traceId === parent.traceId &&
          (!key || s.attributes['k8s.object.key'] === key),
      )
    const apply = childOf(run, 'k8s.apply', 'default/step-c')
    assert.ok(apply, "the apply of the run's child is the run's child")
    const patch = childOf(apply!, 'k8s.request')
    assert.is(patch?.attributes['k8s.request'], 'PATCH /api/v1/namespaces/default/configmaps/step-c')
    const status = childOf(run, 'k8s.status_write', 'default/c')
    assert.ok(status, "the run's status write is its child")
    assert.is(childOf(status!, 'k8s.request')?.attributes['http.request.method'], 'PATCH')
    const mirror = childOf(derive, 'k8s.apply', 'default/mirror-c')
    assert.ok(mirror, "the apply of a derive run's output is the run's child")
    // a run caused by our own write (its answer put in the tables before the watch event) links to that write
    const statusRequest = childOf(status!, 'k8s.request')!
    const rerun = tracer.named('controller.reconcile_step').find((s) => s.links.some((l) => l.spanId === statusRequest.spanId))
    assert.ok(rerun, 'the run that reads our status write links to the write')
    // the server saw the apply in the run's trace
    const sent = e.server.control
      .requestLog()
      .find(
        (r) => r.method === 'PATCH' && r.path === '/api/v1/namespaces/default/configmaps/step-c' && r.traceparent?.includes(patch!.spanId),
      )
    assert.is(sent?.traceparent?.split('-')[1], run.traceId)
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
