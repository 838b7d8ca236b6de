// The Manager's Events, read as `kubectl describe` reads them (field selector on the involved
// object's name, namespace and uid): a failed apply is a Warning about the child's controller (or the
// child itself when nothing controls it; an invalid child name, a forbidden write), a failed finalizer cleanup is a Warning about the object
// (repeats aggregated into one Event with a count), and its later success a Normal Event.
// Follows client-go's record.EventRecorder use in controller-runtime (a Warning per failed
// reconcile, aggregated by the correlator) and kopf's per-object events for handler failures.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { GADGET, createGadget, env, gadget, type Env } from './helpers.ts'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const quiet = createLogger({ level: 'silent' })

/** The Events `kubectl describe` shows for an object. */
async function describeEvents(e: Env, m: Manager, obj: { name: string; namespace: string; uid?: string }) {
  await m.events.flush()
  const sel = [`involvedObject.name=${obj.name}`, `involvedObject.namespace=${obj.namespace}`]
  if (obj.uid) sel.push(`involvedObject.uid=${obj.uid}`)
  const list: any = await e.cluster.request({
    path: `/api/v1/namespaces/${obj.namespace}/events`,
    query: { fieldSelector: sel.join(',') },
  })
  return list.items as any[]
}

test('a failed apply is a Warning Event about the child’s controller, or about the child when nothing controls it', async () => {
  const e = await env()
  const m = new Manager({
    name: 'ev',
    cluster: e.cluster,
    logger: quiet,
    handleSignals: false,
    http: false,
    retry: { minMs: 20, maxMs: 200 },
  })
  try {
    const bad = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' } })
    m.reconcile({ for: GADGET, owns: [CM], fn: (g) => ({ children: bad(`Owned_${g.metadata.name}`) }) })
    m.derive({ from: m.watch(CM, { name: 'all-configmaps', labelSelector: 'seed=1' }), fn: () => bad('free-child') })
    e.server.control.fail({ path: '/configmaps/free-child', method: 'PATCH', status: 403 }) // forbidden
    const g = await createGadget(e.cluster, gadget('a'))
    await e.cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { ...bad('seed'), metadata: { name: 'seed', namespace: 'default', labels: { seed: '1' } } },
    })
    await m.start()
    const r = await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.equal(r.errors.map((x) => x.object).sort(), ['ConfigMap default/Owned_a', 'ConfigMap default/free-child'])

    const about = await describeEvents(e, m, { name: 'a', namespace: 'default', uid: g.metadata.uid })
    const failed = about.find((ev) => ev.reason === 'ApplyFailed')
    assert.ok(failed, `an ApplyFailed Event about Gadget a: ${JSON.stringify(about.map((x) => x.reason))}`)
    assert.is(failed.type, 'Warning')
    assert.is(failed.involvedObject.kind, 'Gadget')
    assert.match(failed.message, 'apply of ConfigMap default/Owned_a failed')
    assert.is(failed.source.component, 'ev')

    const free = await describeEvents(e, m, { name: 'free-child', namespace: 'default' })
    assert.equal(
      free.map((x) => [x.type, x.reason, x.involvedObject.kind]),
      [['Warning', 'ApplyFailed', 'ConfigMap']],
    )
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('a failing finalizer cleanup: one aggregated Warning Event with a count, then a Normal Event when it succeeds', async () => {
  const e = await env()
  const m = new Manager({ name: 'ev', cluster: e.cluster, logger: quiet, handleSignals: false, http: false })
  let tries = 0
  try {
    const gadgets = m.watch(GADGET)
    m.finalizer({
      on: gadgets,
      name: 'example.com/cleanup',
      kind: GADGET,
      retry: { minMs: 10, maxMs: 50 },
      cleanup: () => {
        if (++tries <= 3) throw new Error('bucket busy')
      },
    })
    const g = await createGadget(e.cluster, gadget('f'))
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    await e.cluster.request({ method: 'DELETE', path: '/apis/example.com/v1/namespaces/default/gadgets/f' })
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(e.server.control.get(GADGET, 'f', 'default'), undefined, 'finalized and gone')
    const about = await describeEvents(e, m, { name: 'f', namespace: 'default', uid: g.metadata.uid })
    const failed = about.filter((ev) => ev.reason === 'CleanupFailed')
    assert.is(failed.length, 1, 'identical failures aggregate into one Event')
    assert.is(failed[0].type, 'Warning')
    assert.is(failed[0].count, 3)
    assert.is(failed[0].message, 'finalizer example.com/cleanup: bucket busy')
    const done = about.find((ev) => ev.reason === 'CleanupSucceeded')
    assert.is(done?.type, 'Normal')
    assert.match(done.message, 'after 4 attempts')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test.run()
