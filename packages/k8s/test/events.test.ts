import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { collectingLogger } from '../../../test/lib/logger.ts'
import { EventRecorder, ReconcileEvents, type KubeObject } from '@statewright/k8s'
import { clusterFor, create, startServer, widget } from './helpers.ts'
import { waitUntil } from './leader-fixtures.ts'

async function eventsOf(cluster: ReturnType<typeof clusterFor>, name: string, namespace = 'default'): Promise<any[]> {
  const list = await cluster.request({
    path: `/api/v1/namespaces/${namespace}/events`,
    query: { fieldSelector: `involvedObject.name=${name}` },
  })
  return list.items.sort((a: any, b: any) => a.metadata.name.localeCompare(b.metadata.name))
}

test('identical events aggregate into one Event with a count; others are separate', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const rec = new EventRecorder({ cluster, component: 'widget-controller', instance: 'pod-1' })
  try {
    const w = await create(cluster, widget('w1'))
    for (let i = 0; i < 10; i++) rec.warning(w, 'ReconcileFailed', 'no capacity')
    rec.normal(w, 'Scaled', 'to 3')
    await rec.flush()
    const evs = await eventsOf(cluster, 'w1')
    assert.is(evs.length, 2)
    const failed = evs.find((e) => e.reason === 'ReconcileFailed')
    assert.is(failed.count, 10)
    assert.is(failed.type, 'Warning')
    assert.is(failed.message, 'no capacity')
    assert.equal(failed.involvedObject, {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      name: 'w1',
      namespace: 'default',
      uid: w.metadata.uid,
      resourceVersion: w.metadata.resourceVersion,
    })
    assert.equal(failed.source, { component: 'widget-controller', host: 'pod-1' })
    assert.is(failed.reportingComponent, 'widget-controller')
    assert.match(failed.firstTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    assert.ok(failed.lastTimestamp >= failed.firstTimestamp)
    const scaled = evs.find((e) => e.reason === 'Scaled')
    assert.is(scaled.count, 1)
    assert.is(scaled.type, 'Normal')
    // one POST per distinct event; repeats are PATCHes of count and lastTimestamp (coalesced while busy)
    const log = server.control.requestLog().filter((e) => e.path.includes('/events'))
    assert.is(log.filter((e) => e.method === 'POST').length, 2)
    const patches = log.filter((e) => e.method === 'PATCH')
    assert.ok(patches.length >= 1 && patches.length <= 9, `patches ${patches.length}`)
    assert.is(patches[0].contentType, 'application/merge-patch+json')
    assert.is(rec.stats.created, 2)
    assert.is(rec.stats.aggregated, 9)
    assert.is(rec.stats.dropped, 0)

    // an Event the server no longer has (expired) is created again with the whole count
    await cluster.request({ method: 'DELETE', path: `/api/v1/namespaces/default/events/${failed.metadata.name}` })
    rec.warning(w, 'ReconcileFailed', 'no capacity')
    await rec.flush()
    const again = (await eventsOf(cluster, 'w1')).filter((e) => e.reason === 'ReconcileFailed')
    assert.is(again.length, 1)
    assert.is(again[0].count, 11)
    assert.is.not(again[0].metadata.name, failed.metadata.name)
  } finally {
    await rec.close()
    await cluster.close()
    await server.stop()
  }
})

test('rate limit: new events beyond the burst are dropped; repeats are counted and written when a token comes', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const rec = new EventRecorder({ cluster, component: 'c', burst: 3, qps: 1000 / 150 })
  try {
    const a = await create(cluster, widget('a'))
    const b = await create(cluster, widget('b'))
    for (let i = 0; i < 6; i++) rec.warning(a, 'Failed', `error ${i}`)
    rec.warning(b, 'Failed', 'error 0') // another object has its own bucket
    await rec.flush()
    assert.is((await eventsOf(cluster, 'a')).length, 3)
    assert.is((await eventsOf(cluster, 'b')).length, 1)
    assert.is(rec.stats.dropped, 3)

    // repeats of "error 0" on a: no token now, counted, written later in one PATCH
    server.control.clearRequestLog()
    for (let i = 0; i < 50; i++) rec.warning(a, 'Failed', 'error 0')
    await rec.flush()
    assert.is(server.control.requestLog().filter((e) => e.method === 'PATCH').length, 0)
    await waitUntil(() => rec.cached().every((e) => e.written === e.count), 'the count to be written', 5000)
    await rec.flush()
    const e0 = (await eventsOf(cluster, 'a')).find((e) => e.message === 'error 0')
    assert.is(e0.count, 51)
    assert.ok(server.control.requestLog().filter((e) => e.method === 'PATCH').length <= 2)

    // tokens come back: a new event is accepted again
    await new Promise((r) => setTimeout(r, 200))
    rec.warning(a, 'Failed', 'error 9')
    await rec.flush()
    assert.ok((await eventsOf(cluster, 'a')).some((e) => e.message === 'error 9'))
  } finally {
    await rec.close()
    await cluster.close()
    await server.stop()
  }
})

test('API errors are counted, never thrown; close leaves no timer', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const errors: string[] = []
  const rec = new EventRecorder({
    cluster,
    component: 'c',
    burst: 2,
    qps: 1 / 60,
    logger: collectingLogger((e) => errors.push((e.fields.err as Error).message)),
  })
  try {
    const w = await create(cluster, widget('w'))
    const remove = server.control.fail({ path: '/events', method: 'POST', status: 500, count: 1 })
    rec.warning(w, 'Failed', 'x')
    await rec.flush()
    remove()
    assert.is(rec.stats.errors, 1)
    assert.is(errors.length, 1)
    rec.warning(w, 'Failed', 'x') // not created before: a new event (the last token)
    await rec.flush()
    assert.is((await eventsOf(cluster, 'w'))[0].count, 1)
    rec.warning(w, 'Failed', 'x') // a repeat without a token: waits for a refill a minute away
    assert.is(rec.cached()[0].count, 2)
  } finally {
    await rec.close() // clears the refill timer: the test process exits
    await cluster.close()
    await server.stop()
  }
})

test('reconcile failures and recoveries on the owning object', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const rec = new EventRecorder({ cluster, component: 'c' })
  const re = new ReconcileEvents(rec)
  try {
    const w: KubeObject = await create(cluster, widget('own'))
    re.succeeded(w) // never failed: no event
    for (let i = 0; i < 3; i++) re.failed(w, new Error('quota exceeded'))
    re.succeeded(w)
    re.succeeded(w) // already recovered: no event
    await rec.flush()
    const evs = await eventsOf(cluster, 'own')
    assert.is(evs.length, 2)
    const f = evs.find((e) => e.reason === 'ReconcileFailed')
    assert.is(f.count, 3)
    assert.is(f.type, 'Warning')
    const r = evs.find((e) => e.reason === 'Reconciled')
    assert.is(r.type, 'Normal')
    assert.is(r.message, 'reconciled after 3 failed attempts')
  } finally {
    await rec.close()
    await cluster.close()
    await server.stop()
  }
})

test.run()
