// What follows a DELETE on a real cluster (issue 30: "Deletion is synchronous"): a Terminating
// namespace until the namespace controller has emptied it (recreating it meanwhile is 409), a
// scheduled Pod deleted with a grace period stays Terminating until the kubelet removes it, and
// control.finishDeletions() fast-forwards both; a new namespace gets its `default` ServiceAccount and
// `kube-root-ca.crt` ConfigMap.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, waitFor, type Env } from './helpers.ts'

let e: Env
test.before(async () => {
  e = await env({ deletionTiming: { namespaceMs: 60_000, podMs: 60_000 } })
})
test.after(async () => {
  await e.server.stop()
})
const NS = { apiVersion: 'v1', kind: 'Namespace' }

test('a new namespace has the default ServiceAccount and kube-root-ca.crt', async () => {
  await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'fresh' } })
  assert.ok(e.server.control.get({ apiVersion: 'v1', kind: 'ServiceAccount' }, 'default', 'fresh'))
  const ca = e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'kube-root-ca.crt', 'fresh')
  assert.ok(ca && 'ca.crt' in ca.data)
  assert.ok(e.server.control.get({ apiVersion: 'v1', kind: 'ServiceAccount' }, 'default', 'kube-system'), 'the initial namespaces too')
})

test('an empty namespace stays Terminating until the namespace controller runs: recreating it is 409', async () => {
  await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'gone-soon' } })
  const del = await http(e, 'DELETE', '/api/v1/namespaces/gone-soon')
  assert.is(del.body.status.phase, 'Terminating')
  const again = await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'gone-soon' } })
  assert.is(again.status, 409)
  assert.is(again.body.message, 'object is being deleted: namespaces "gone-soon" already exists')
  assert.ok(e.server.control.finishDeletions() >= 1)
  assert.is(e.server.control.get(NS, 'gone-soon'), undefined)
  assert.is((await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'gone-soon' } })).status, 201)
})

test('a scheduled Pod deleted with a grace period is Terminating until the kubelet removes it; grace 0 removes it at once', async () => {
  const P = '/api/v1/namespaces/default/pods'
  const pod = (name: string) => ({ metadata: { name }, spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'busybox:1' }] } })
  await http(e, 'POST', P, pod('graceful'))
  const del = await http(e, 'DELETE', `${P}/graceful`)
  assert.is(del.status, 200)
  assert.is(del.body.metadata.deletionGracePeriodSeconds, 30)
  assert.ok(Date.parse(del.body.metadata.deletionTimestamp) > Date.now() + 20_000, 'deletionTimestamp is now + grace')
  const live = await http(e, 'GET', `${P}/graceful`)
  assert.is(live.status, 200, 'still there')
  e.server.control.finishDeletions()
  assert.is((await http(e, 'GET', `${P}/graceful`)).status, 404)
  await http(e, 'POST', P, pod('forced'))
  await http(e, 'DELETE', `${P}/forced?gracePeriodSeconds=0`)
  assert.is((await http(e, 'GET', `${P}/forced`)).status, 404)
  await http(e, 'POST', P, { metadata: { name: 'unscheduled' }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } })
  await http(e, 'DELETE', `${P}/unscheduled`)
  assert.is((await http(e, 'GET', `${P}/unscheduled`)).status, 404, 'no node: removed at once')
})

test('with the default timing the namespace controller finishes by itself', async () => {
  const quick = await env()
  try {
    await http(quick, 'POST', '/api/v1/namespaces', { metadata: { name: 'auto' } })
    await http(quick, 'DELETE', '/api/v1/namespaces/auto')
    await waitFor(() => quick.server.control.get(NS, 'auto') === undefined, 'the namespace removed', 5000)
  } finally {
    await quick.server.stop()
  }
})

test.run()
