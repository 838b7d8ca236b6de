// Server-side apply through KubernetesObjectApi (PatchStrategy.ServerSideApply), compared with the
// documented behaviour of a real apiserver: ownership, 409 conflicts with causes, force, removal of
// fields a manager stopped applying, no-op applies, managedFields entries.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, rejects, cm, k8s, type Env } from './helpers.ts'

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})
const SSA = k8s.PatchStrategy.ServerSideApply
const apply = (obj: any, manager: string, force = false) => e.objs.patch(obj, undefined, undefined, manager, force, SSA) as Promise<any>
const entries = (o: any) => o.metadata.managedFields.map((m: any) => [m.manager, m.operation, JSON.parse(JSON.stringify(m.fieldsV1))])

test('apply creates (201) with an Apply entry; an identical apply is a no-op', async () => {
  const res = await fetch(`${e.server.url}/api/v1/namespaces/default/configmaps/a1?fieldManager=m1`, {
    method: 'PATCH',
    body: JSON.stringify(cm('a1', { k: 'v' }, { app: 'x' })),
    headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/apply-patch+yaml' },
  })
  assert.is(res.status, 201)
  const first: any = await res.json()
  assert.equal(entries(first), [['m1', 'Apply', { 'f:data': { 'f:k': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } }]])
  const again = await apply(cm('a1', { k: 'v' }, { app: 'x' }), 'm1')
  assert.is(again.metadata.resourceVersion, first.metadata.resourceVersion)
})

test('fieldManager is required for apply (422 Invalid, as kube-apiserver answers)', async () => {
  const res = await fetch(`${e.server.url}/api/v1/namespaces/default/configmaps/a0`, {
    method: 'PATCH',
    body: JSON.stringify(cm('a0')),
    headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/apply-patch+yaml' },
  })
  assert.is(res.status, 422)
  const body: any = await res.json()
  assert.is(body.reason, 'Invalid')
  assert.is(body.message, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
})

test('conflict with another applier: 409 with causes; force takes ownership', async () => {
  await apply(cm('a2', { shared: '1', mine: '1' }), 'alice')
  const body = await rejects(apply(cm('a2', { shared: '2' }), 'bob'), 409, 'Conflict')
  assert.equal(body.details.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "alice" using v1', field: '.data.shared' }])
  assert.is(body.message, 'Apply failed with 1 conflict: conflict with "alice" using v1: .data.shared')
  const forced = await apply(cm('a2', { shared: '2' }), 'bob', true)
  assert.is(forced.data.shared, '2')
  assert.equal(entries(forced), [
    ['alice', 'Apply', { 'f:data': { 'f:mine': {} } }],
    ['bob', 'Apply', { 'f:data': { 'f:shared': {} } }],
  ])
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
  await e.core.createNamespacedConfigMap(
    { namespace: 'default', body: { metadata: { name: 'a4' }, data: { k: 'from-create' } } },
    k8s.setHeaderOptions('User-Agent', 'creator/1.0'),
  )
  const body = await rejects(apply(cm('a4', { k: 'from-apply' }), 'applier'), 409, 'Conflict')
  assert.match(body.details.causes[0].message, 'conflict with "creator"')
  const patched: any = await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'a4', fieldManager: 'editor', body: { data: { k: 'edited' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  // the editor took the field; the creator still owns the map it created (FieldsV1 "f:data" without children)
  assert.equal(
    patched.metadata.managedFields.map((m: any) => [m.manager, m.operation, m.fieldsV1]),
    [
      ['creator', 'Update', { 'f:data': {} }],
      ['editor', 'Update', { 'f:data': { 'f:k': {} } }],
    ],
    'the editor took the field from the creator',
  )
})

test('an Update that creates a map owns the map itself ("." in FieldsV1), as structured-merge-diff reports it added', async () => {
  const created: any = await e.core.createNamespacedConfigMap({
    namespace: 'default',
    fieldManager: 'maker',
    body: { metadata: { name: 'a4b', labels: { app: 'x' } }, data: { k: 'v' } },
  })
  assert.equal(created.metadata.managedFields[0].fieldsV1, {
    'f:data': { '.': {}, 'f:k': {} },
    'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
  })
  // a key added to an existing map: the map was not created by this write
  const patched: any = await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'a4b', fieldManager: 'adder', body: { data: { k2: 'v' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  assert.equal(patched.metadata.managedFields.find((m: any) => m.manager === 'adder').fieldsV1, { 'f:data': { 'f:k2': {} } })
  // a Deployment: the pointer struct rollingUpdate (defaulted) and the label maps are owned, the structs Go always serializes are not
  const dep: any = await e.objs.create(
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'a4d', namespace: 'default' },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
      },
    },
    undefined,
    undefined,
    'maker',
  )
  const f = dep.metadata.managedFields[0].fieldsV1
  assert.ok(f['f:spec']['f:strategy']['f:rollingUpdate']['.'], JSON.stringify(f))
  assert.ok(f['f:spec']['f:template']['f:metadata']['f:labels']['.'], JSON.stringify(f))
  assert.is(f['f:spec']['.'], undefined)
  assert.is(f['f:spec']['f:template']['.'], undefined)
})

test("apply on a Deployment merges containers by name and keeps other managers' containers", async () => {
  const dep = (containers: any[]) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'ad', namespace: 'default' },
    spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers } } },
  })
  await apply(dep([{ name: 'main', image: 'main:1' }]), 'app')
  const side = await apply(
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'ad', namespace: 'default' },
      spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'side:1' }] } } },
    },
    'injector',
  )
  assert.equal(
    side.spec.template.spec.containers.map((c: any) => c.name),
    ['main', 'sidecar'],
  )
  const tree = side.metadata.managedFields.find((m: any) => m.manager === 'injector').fieldsV1
  assert.ok(tree['f:spec']['f:template']['f:spec']['f:containers']['k:{"name":"sidecar"}']['.'], 'list item owned by key')
  const again = await apply(dep([{ name: 'main', image: 'main:2' }]), 'app')
  assert.equal(
    again.spec.template.spec.containers.map((c: any) => c.image),
    ['main:2', 'side:1'],
  )
  assert.is(again.metadata.generation, 3)
})

test('apply to the status subresource records subresource "status"', async () => {
  await apply(
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'as', namespace: 'default' },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
      },
    },
    'app',
  )
  const res = await fetch(`${e.server.url}/apis/apps/v1/namespaces/default/deployments/as/status?fieldManager=ctrl&force=true`, {
    method: 'PATCH',
    body: JSON.stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'as', namespace: 'default' },
      status: { replicas: 1 },
    }),
    headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/apply-patch+yaml' },
  })
  const out: any = await res.json()
  assert.is(res.status, 200)
  assert.equal(out.status, { replicas: 1 })
  assert.ok(out.metadata.managedFields.some((m: any) => m.manager === 'ctrl' && m.subresource === 'status'))
})

const applyRaw = async (path: string, body: any, manager: string, force = false) => {
  const res = await fetch(`${e.server.url}${path}?fieldManager=${manager}${force ? '&force=true' : ''}`, {
    method: 'PATCH',
    body: JSON.stringify(body),
    headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/apply-patch+yaml' },
  })
  return { status: res.status, body: (await res.json()) as any }
}

test('a keyed item a manager stops applying goes whole, with its nested keyed lists (no husks)', async () => {
  // a Deployment's template (a Pod's containers cannot change after creation on a real server)
  const deploy = (containers: any[]) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'husk', namespace: 'default' },
    spec: { selector: { matchLabels: { app: 'husk' } }, template: { metadata: { labels: { app: 'husk' } }, spec: { containers } } },
  })
  const path = '/apis/apps/v1/namespaces/default/deployments/husk'
  await applyRaw(
    path,
    deploy([
      { name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] },
      { name: 'b', image: 'y' },
    ]),
    'a',
  )
  const r = await applyRaw(path, deploy([{ name: 'a', image: 'x' }]), 'a')
  assert.is(r.status, 200)
  const containers = r.body.spec.template.spec.containers
  assert.equal(
    containers.map((c: any) => [c.name, c.image, c.env]),
    [['a', 'x', undefined]],
    "b went whole, and a's env with it",
  )
})

async function crd(name: string, plural: string, kind: string, statusSchema: any) {
  const res = await fetch(`${e.server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name },
      spec: {
        group: 'ssa.example.com',
        scope: 'Namespaced',
        names: { plural, kind },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, status: statusSchema },
              },
            },
          },
        ],
      },
    }),
  })
  assert.is(res.status, 201)
}
const condition = (type: string) => ({ type, status: 'True', reason: type, message: type, lastTransitionTime: '2026-01-01T00:00:00Z' })

test("a CRD's list-map conditions: dropping one on /status removes it whole, the rest keep their type", async () => {
  await crd('policies.ssa.example.com', 'policies', 'Policy', {
    type: 'object',
    properties: {
      conditions: {
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
        // a map list's keys are required (or defaulted) properties of its items, as kube-apiserver demands
        items: {
          type: 'object',
          required: ['type'],
          properties: { type: { type: 'string' } },
          'x-kubernetes-preserve-unknown-fields': true,
        },
      },
    },
  })
  const base = { apiVersion: 'ssa.example.com/v1', kind: 'Policy', metadata: { name: 'p', namespace: 'default' } }
  await applyRaw('/apis/ssa.example.com/v1/namespaces/default/policies/p', { ...base, spec: { a: 1 } }, 'ctl')
  const path = '/apis/ssa.example.com/v1/namespaces/default/policies/p/status'
  await applyRaw(path, { ...base, status: { conditions: [condition('Accepted'), condition('Enforced')] } }, 'ctl')
  const other = await applyRaw(path, { ...base, status: { conditions: [condition('Ready')] } }, 'other')
  assert.equal(
    other.body.status.conditions.map((c: any) => c.type),
    ['Accepted', 'Enforced', 'Ready'],
    'keyed: merged by type',
  )
  const r = await applyRaw(path, { ...base, status: { conditions: [condition('Accepted')] } }, 'ctl')
  assert.equal(r.body.status.conditions, [condition('Accepted'), condition('Ready')])
})

test("a CRD list with no list type is atomic: another manager's different list conflicts, force replaces it", async () => {
  await crd('gizmos.ssa.example.com', 'gizmos', 'Gizmo', {
    type: 'object',
    properties: { conditions: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
  })
  const base = { apiVersion: 'ssa.example.com/v1', kind: 'Gizmo', metadata: { name: 'g', namespace: 'default' } }
  await applyRaw('/apis/ssa.example.com/v1/namespaces/default/gizmos/g', { ...base, spec: {} }, 'ctl')
  const path = '/apis/ssa.example.com/v1/namespaces/default/gizmos/g/status'
  await applyRaw(path, { ...base, status: { conditions: [condition('Accepted')] } }, 'ctl')
  const c = await applyRaw(path, { ...base, status: { conditions: [condition('Ready')] } }, 'other')
  assert.is(c.status, 409)
  assert.equal(
    c.body.details.causes.map((x: any) => x.field),
    ['.status.conditions'],
  )
  const f = await applyRaw(path, { ...base, status: { conditions: [condition('Ready')] } }, 'other', true)
  assert.equal(
    f.body.status.conditions.map((x: any) => x.type),
    ['Ready'],
  )
})

test('a keyed item without its key is refused (422) for a CRD list-map', async () => {
  const base = { apiVersion: 'ssa.example.com/v1', kind: 'Policy', metadata: { name: 'p', namespace: 'default' } }
  const r = await applyRaw(
    '/apis/ssa.example.com/v1/namespaces/default/policies/p/status',
    { ...base, status: { conditions: [{ status: 'True' }] } },
    'ctl',
  )
  assert.is(r.status, 422)
  assert.match(r.body.message, 'omits key field "type"')
})

test('a resourceVersion in an applied configuration is a precondition: stale is 409 Conflict (forced too), current applies', async () => {
  const first = await apply(cm('a9', { k: '1' }), 'm1')
  await apply(cm('a9', { k: '2' }), 'm1')
  const stale = { ...cm('a9', { k: '3' }), metadata: { ...cm('a9').metadata, resourceVersion: first.metadata.resourceVersion } }
  const body = await rejects(apply(stale, 'm1'), 409, 'Conflict')
  assert.match(body.message, /the object has been modified/)
  await rejects(apply(stale, 'm1', true), 409, 'Conflict')
  const cur = await e.objs.read({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a9', namespace: 'default' } })
  assert.is((cur as any).data.k, '2', 'nothing written')
  const fresh = { ...cm('a9', { k: '3' }), metadata: { ...cm('a9').metadata, resourceVersion: cur.metadata!.resourceVersion } }
  const ok = await apply(fresh, 'm1')
  assert.is(ok.data.k, '3')
})

test("a map list's key with a schema default may be left out (structured-merge-diff uses the default): a pod template's ports by containerPort and protocol", async () => {
  await crd('rollouts.ssa.example.com', 'rollouts', 'Rollout', {
    type: 'object',
    properties: {
      ports: {
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['containerPort', 'protocol'],
        items: {
          type: 'object',
          required: ['containerPort'],
          properties: { containerPort: { type: 'integer' }, protocol: { type: 'string', default: 'TCP' }, name: { type: 'string' } },
        },
      },
    },
  })
  const base = { apiVersion: 'ssa.example.com/v1', kind: 'Rollout', metadata: { name: 'r', namespace: 'default' } }
  await applyRaw('/apis/ssa.example.com/v1/namespaces/default/rollouts/r', base, 'ctl')
  const path = '/apis/ssa.example.com/v1/namespaces/default/rollouts/r/status'
  const first = await applyRaw(
    path,
    {
      ...base,
      status: {
        ports: [
          { containerPort: 80, name: 'http' },
          { containerPort: 80, protocol: 'UDP' },
        ],
      },
    },
    'a',
  )
  assert.is(first.status, 200, JSON.stringify(first.body))
  assert.equal(first.body.status.ports, [
    { containerPort: 80, name: 'http', protocol: 'TCP' },
    { containerPort: 80, protocol: 'UDP' },
  ])
  // another manager's item keyed {80, TCP} by its default is the same item: a conflict on its name
  const other = await applyRaw(path, { ...base, status: { ports: [{ containerPort: 80, protocol: 'TCP', name: 'web' }] } }, 'b')
  assert.is(other.status, 409, JSON.stringify(other.body))
  const fields = JSON.stringify(first.body.metadata.managedFields.find((m: any) => m.manager === 'a').fieldsV1)
  assert.match(fields, '"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}"')
})

test.run()
