// Server-side apply through KubernetesObjectApi (PatchStrategy.ServerSideApply), compared with the
// documented behaviour of a real apiserver: ownership, 409 conflicts with causes, force, removal of
// fields a manager stopped applying, no-op applies, managedFields entries.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, rejects, cm, k8s, type Env } from './helpers.ts'

let e: Env
test.before(async () => { e = await env() })
test.after(async () => { await e.server.stop() })
const SSA = k8s.PatchStrategy.ServerSideApply
const apply = (obj: any, manager: string, force = false) => e.objs.patch(obj, undefined, undefined, manager, force, SSA) as Promise<any>
const entries = (o: any) => o.metadata.managedFields.map((m: any) => [m.manager, m.operation, JSON.parse(JSON.stringify(m.fieldsV1))])

test('apply creates (201) with an Apply entry; an identical apply is a no-op', async () => {
  const res = await fetch(`${e.server.url}/api/v1/namespaces/default/configmaps/a1?fieldManager=m1`, {
    method: 'PATCH', body: JSON.stringify(cm('a1', { k: 'v' }, { app: 'x' })),
    headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/apply-patch+yaml' },
  })
  assert.is(res.status, 201)
  const first: any = await res.json()
  assert.equal(entries(first), [['m1', 'Apply', { 'f:data': { 'f:k': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } }]])
  const again = await apply(cm('a1', { k: 'v' }, { app: 'x' }), 'm1')
  assert.is(again.metadata.resourceVersion, first.metadata.resourceVersion)
})

test('fieldManager is required for apply (400)', async () => {
  const res = await fetch(`${e.server.url}/api/v1/namespaces/default/configmaps/a0`, {
    method: 'PATCH', body: JSON.stringify(cm('a0')), headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/apply-patch+yaml' },
  })
  assert.is(res.status, 400)
})

test('conflict with another applier: 409 with causes; force takes ownership', async () => {
  await apply(cm('a2', { shared: '1', mine: '1' }), 'alice')
  const body = await rejects(apply(cm('a2', { shared: '2' }), 'bob'), 409, 'Conflict')
  assert.equal(body.details.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "alice" using v1', field: '.data.shared' }])
  assert.is(body.message, 'Apply failed with 1 conflict: conflict with "alice" using v1: .data.shared')
  const forced = await apply(cm('a2', { shared: '2' }), 'bob', true)
  assert.is(forced.data.shared, '2')
  assert.equal(entries(forced), [['alice', 'Apply', { 'f:data': { 'f:mine': {} } }], ['bob', 'Apply', { 'f:data': { 'f:shared': {} } }]])
})

test('same value from two appliers is shared, not a conflict; removal only when nobody else owns it', async () => {
  await apply(cm('a3', { x: '1', y: '1' }), 'alice')
  await apply(cm('a3', { x: '1' }), 'bob')
  const a = await apply(cm('a3', {}), 'alice') // alice stops applying x and y
  assert.equal(a.data, { x: '1' }, 'y removed (alice only); x kept (bob still owns it)')
  const b = await apply(cm('a3', {}), 'bob')
  assert.equal(b.data ?? {}, {}, 'x removed once its last owner stops applying it')
})

test('an Update manager (PUT/merge patch) conflicts with an apply that changes its field', async () => {
  await e.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'a4' }, data: { k: 'from-create' } } }, k8s.setHeaderOptions('User-Agent', 'creator/1.0'))
  const body = await rejects(apply(cm('a4', { k: 'from-apply' }), 'applier'), 409, 'Conflict')
  assert.match(body.details.causes[0].message, 'conflict with "creator"')
  const patched: any = await e.core.patchNamespacedConfigMap({ namespace: 'default', name: 'a4', fieldManager: 'editor', body: { data: { k: 'edited' } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch))
  assert.equal(patched.metadata.managedFields.map((m: any) => [m.manager, m.operation]), [['editor', 'Update']], 'the editor took the field from the creator')
})

test('apply on a Deployment merges containers by name and keeps other managers\' containers', async () => {
  const dep = (containers: any[]) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ad', namespace: 'default' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers } } } })
  await apply(dep([{ name: 'main', image: 'main:1' }]), 'app')
  const side = await apply({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ad', namespace: 'default' }, spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'side:1' }] } } } }, 'injector')
  assert.equal(side.spec.template.spec.containers.map((c: any) => c.name), ['main', 'sidecar'])
  const tree = side.metadata.managedFields.find((m: any) => m.manager === 'injector').fieldsV1
  assert.ok(tree['f:spec']['f:template']['f:spec']['f:containers']['k:{"name":"sidecar"}']['.'], 'list item owned by key')
  const again = await apply(dep([{ name: 'main', image: 'main:2' }]), 'app')
  assert.equal(again.spec.template.spec.containers.map((c: any) => c.image), ['main:2', 'side:1'])
  assert.is(again.metadata.generation, 3)
})

test('apply to the status subresource records subresource "status"', async () => {
  await apply({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'as', namespace: 'default' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } } }, 'app')
  const res = await fetch(`${e.server.url}/apis/apps/v1/namespaces/default/deployments/as/status?fieldManager=ctrl&force=true`, {
    method: 'PATCH', body: JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'as', namespace: 'default' }, status: { replicas: 1 } }),
    headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/apply-patch+yaml' },
  })
  const out: any = await res.json()
  assert.is(res.status, 200)
  assert.equal(out.status, { replicas: 1 })
  assert.ok(out.metadata.managedFields.some((m: any) => m.manager === 'ctrl' && m.subresource === 'status'))
})

test.run()
