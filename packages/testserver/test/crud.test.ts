// CRUD, patches, discovery, CRDs, status, selectors, pagination and auth through the real
// @kubernetes/client-node 1.4.0 (typed CoreV1Api and the generic KubernetesObjectApi).
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

test('create sets uid, creationTimestamp, resourceVersion; existing name is 409 AlreadyExists', async () => {
  const c = await e.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c1' }, data: { a: '1' } } })
  assert.ok(c.metadata?.uid && c.metadata.creationTimestamp instanceof Date)
  assert.match(c.metadata!.resourceVersion!, /^\d+$/)
  const body = await rejects(
    e.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c1' } } }),
    409,
    'AlreadyExists',
  )
  assert.is(body.kind, 'Status')
  assert.equal(body.details, { name: 'c1', kind: 'configmaps' })
  const got = await e.core.readNamespacedConfigMap({ namespace: 'default', name: 'c1' })
  assert.is(got.metadata!.uid, c.metadata!.uid)
})

test('missing object: 404 NotFound; missing namespace: 404 on create', async () => {
  await rejects(e.core.readNamespacedConfigMap({ namespace: 'default', name: 'nope' }), 404, 'NotFound')
  const b = await rejects(e.core.createNamespacedConfigMap({ namespace: 'ghost', body: { metadata: { name: 'x' } } }), 404, 'NotFound')
  assert.is(b.message, 'namespaces "ghost" not found')
})

test('invalid names are 422 Invalid; generateName makes one', async () => {
  const b = await rejects(
    e.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'Bad_Name' } } }),
    422,
    'Invalid',
  )
  assert.is(b.details.causes[0].field, 'metadata.name')
  const g = await e.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { generateName: 'gen-' } } })
  assert.match(g.metadata!.name!, /^gen-[a-z0-9]{5}$/)
})

test('replace: stale resourceVersion is 409 Conflict; no-op keeps the version; unconditional works', async () => {
  const c = await e.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'r1' }, data: { a: '1' } } })
  const u = await e.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'r1', body: { ...c, data: { a: '2' } } })
  assert.ok(Number(u.metadata!.resourceVersion) > Number(c.metadata!.resourceVersion))
  const b = await rejects(
    e.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'r1', body: { ...c, data: { a: '3' } } }),
    409,
    'Conflict',
  )
  assert.match(b.message, 'the object has been modified')
  const same = await e.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'r1', body: u })
  assert.is(same.metadata!.resourceVersion, u.metadata!.resourceVersion, 'no-op update keeps the version')
  const unconditional = await e.core.replaceNamespacedConfigMap({
    namespace: 'default',
    name: 'r1',
    body: { metadata: { name: 'r1' }, data: { a: '4' } },
  })
  assert.is(unconditional.data!.a, '4')
  assert.is(unconditional.metadata!.uid, c.metadata!.uid, 'uid is immutable')
  // Lease (and every custom kind) forbids unconditional updates, as their strategies do
  const co = k8s.KubernetesObjectApi.makeApiClient(e.kc)
  const lease: any = await co.create({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'l1', namespace: 'default' },
    spec: { holderIdentity: 'a' },
  } as any)
  const body = await rejects(
    co.replace({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l1', namespace: 'default' },
      spec: { holderIdentity: 'b' },
    } as any),
    422,
    'Invalid',
  )
  assert.is(
    body.message,
    'leases.coordination.k8s.io "l1" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
  )
  const held: any = await co.replace({ ...lease, spec: { holderIdentity: 'b' } })
  assert.is(held.spec.holderIdentity, 'b', 'with the resourceVersion it is accepted')
  await rejects(
    e.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'r1', body: { metadata: { name: 'other' } } }),
    400,
    'BadRequest',
  )
})

test('patches: merge, json, strategic; strategic on a custom kind is 415', async () => {
  await e.objs.create(cm('p1', { a: '1', b: '2' }))
  const merged = await e.objs.patch(cm('p1', { a: 'x' }) as any, undefined, undefined, undefined, undefined, k8s.PatchStrategy.MergePatch)
  assert.equal((merged as any).data, { a: 'x', b: '2' })
  const jp = await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'p1', body: [{ op: 'remove', path: '/data/b' }] },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
  )
  assert.equal(jp.data, { a: 'x' })
  await rejects(
    e.core.patchNamespacedConfigMap(
      { namespace: 'default', name: 'p1', body: [{ op: 'test', path: '/data/a', value: 'nope' }] },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    ),
    422,
  )
  const d = await e.objs.create({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd1', namespace: 'default' },
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: {
        metadata: { labels: { a: 'b' } },
        spec: {
          containers: [
            { name: 'a', image: 'a:1' },
            { name: 'b', image: 'b:1' },
          ],
        },
      },
    },
  } as any)
  const sp = await e.objs.patch({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd1', namespace: 'default' },
    spec: { template: { spec: { containers: [{ name: 'b', image: 'b:2' }] } } },
  } as any)
  assert.equal(
    (sp as any).spec.template.spec.containers.map((c: any) => ({ name: c.name, image: c.image })),
    [
      { name: 'a', image: 'a:1' },
      { name: 'b', image: 'b:2' },
    ],
    'strategic merge by container name',
  )
  assert.is((sp as any).metadata.generation, 2, 'spec change bumps generation')
  assert.is((d as any).metadata.generation, 1)
  await createWidgetCrd()
  await e.objs.create({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w1', namespace: 'default' },
    spec: { size: 1 },
  } as any)
  await rejects(
    e.objs.patch({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w1', namespace: 'default' },
      spec: { size: 2 },
    } as any),
    415,
    'UnsupportedMediaType',
  )
})

async function createWidgetCrd() {
  if (e.server.control.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, 'widgets.example.com')) return
  await e.objs.create({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', shortNames: ['wd'] },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          // client-node sends the object as is, or through its CRD model once it has resolved the kind;
          // the model knows only its own name, x_kubernetes_preserve_unknown_fields (and drops the dashed key), so both are given
          schema: {
            openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, x_kubernetes_preserve_unknown_fields: true },
          },
        },
      ],
    },
  } as any)
}

test('CRD: registers the kind (discovery + CRUD), reports Established, status subresource, deletion unregisters', async () => {
  await createWidgetCrd()
  const crd: any = await e.objs.read({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
  } as any)
  assert.ok(crd.status.conditions.some((c: any) => c.type === 'Established' && c.status === 'True'))
  const disc = (await (await fetchJson('/apis/example.com/v1')).json()) as any
  assert.equal(
    disc.resources.map((r: any) => r.name),
    ['widgets', 'widgets/status'],
  )
  const w: any = await e.objs.create({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w2', namespace: 'default' },
    spec: { size: 1 },
    status: { ready: true },
  } as any)
  assert.is(w.status, undefined, 'status is dropped on create')
  assert.is(w.metadata.generation, 1)
  const st = await fetchJson(`/apis/example.com/v1/namespaces/default/widgets/w2/status`, {
    method: 'PUT',
    body: JSON.stringify({ ...w, spec: { size: 99 }, status: { ready: true } }),
    headers: { 'content-type': 'application/json' },
  })
  assert.is(st.status, 200)
  const afterStatus: any = await st.json()
  assert.equal(afterStatus.status, { ready: true })
  assert.equal(afterStatus.spec, { size: 1 }, '/status ignores spec')
  assert.is(afterStatus.metadata.generation, 1, 'status writes do not bump generation')
  const main: any = await e.objs.replace({ ...afterStatus, spec: { size: 2 }, status: { ready: false } })
  assert.equal(main.status, { ready: true }, 'the main resource ignores status')
  assert.is(main.metadata.generation, 2)
  await e.objs.delete({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
  } as any)
  assert.is((await fetchJson('/apis/example.com/v1/namespaces/default/widgets')).status, 404)
})

test('programmatic kind registration (cluster-scoped)', async () => {
  e.server.control.registerKind({ group: 'test.io', version: 'v1alpha1', resource: 'gadgets', kind: 'Gadget', namespaced: false })
  const objs = k8s.KubernetesObjectApi.makeApiClient(e.kc) // fresh discovery cache
  const g: any = await objs.create({ apiVersion: 'test.io/v1alpha1', kind: 'Gadget', metadata: { name: 'g1' } } as any)
  assert.is(g.metadata.namespace, undefined)
  const list: any = await objs.list('test.io/v1alpha1', 'Gadget')
  assert.equal(
    list.items.map((i: any) => i.metadata.name),
    ['g1'],
  )
})

test('delete: preconditions, finalizers keep the object with deletionTimestamp until cleared', async () => {
  const c = await e.core.createNamespacedConfigMap({
    namespace: 'default',
    body: { metadata: { name: 'd1', finalizers: ['example.com/hold'] } },
  })
  await rejects(
    e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'd1', body: { preconditions: { uid: 'wrong' } } }),
    409,
    'Conflict',
  )
  await rejects(
    e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'd1', body: { preconditions: { resourceVersion: '1' } } }),
    409,
    'Conflict',
  )
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'd1', body: { preconditions: { uid: c.metadata!.uid! } } })
  const held = await e.core.readNamespacedConfigMap({ namespace: 'default', name: 'd1' })
  assert.ok(held.metadata!.deletionTimestamp, 'deletionTimestamp set')
  await rejects(
    e.core.patchNamespacedConfigMap(
      { namespace: 'default', name: 'd1', body: { metadata: { finalizers: ['example.com/hold', 'more'] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    ),
    422,
    'Invalid',
  )
  await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'd1', body: { metadata: { finalizers: null } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  await rejects(e.core.readNamespacedConfigMap({ namespace: 'default', name: 'd1' }), 404, 'NotFound')
  const s = await e.core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 's1' }, stringData: { a: 'b' } } })
  assert.is(s.type, 'Opaque')
  const st = await e.core.deleteNamespacedSecret({ namespace: 'default', name: 's1' })
  assert.is((st as any).status, 'Success')
})

test('namespace deletion terminates, removes its contents, then itself; creates into it are refused', async () => {
  await e.core.createNamespace({ body: { metadata: { name: 'doomed' } } })
  await e.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'x' } } })
  await e.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'held', finalizers: ['f'] } } })
  const ns = (await e.core.deleteNamespace({ name: 'doomed' })) as any
  assert.is(ns.status.phase, 'Terminating')
  await rejects(e.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'y' } } }), 403, 'Forbidden')
  // Terminating, not yet emptied: recreating it is 409 (the namespace controller runs later)
  const again = await rejects(e.core.createNamespace({ body: { metadata: { name: 'doomed' } } }), 409, 'AlreadyExists')
  assert.is(again.message, 'object is being deleted: namespaces "doomed" already exists')
  assert.ok(await e.core.readNamespacedConfigMap({ namespace: 'doomed', name: 'x' }), 'contents stay until the controller runs')
  assert.ok(e.server.control.finishDeletions() >= 1, 'the namespace controller ran')
  await rejects(e.core.readNamespacedConfigMap({ namespace: 'doomed', name: 'x' }), 404)
  assert.ok(await e.core.readNamespace({ name: 'doomed' }), 'held by the finalizer of what is left')
  await e.core.patchNamespacedConfigMap(
    { namespace: 'doomed', name: 'held', body: { metadata: { finalizers: null } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  await rejects(e.core.readNamespace({ name: 'doomed' }), 404)
})

test('list: label and field selectors, limit/continue, expired continue is 410, RV semantics', async () => {
  await e.core.createNamespace({ body: { metadata: { name: 'lists' } } })
  for (let i = 0; i < 7; i++)
    await e.core.createNamespacedConfigMap({
      namespace: 'lists',
      body: { metadata: { name: `l${i}`, labels: { parity: i % 2 ? 'odd' : 'even', i: String(i) } } },
    })
  const odd = await e.core.listNamespacedConfigMap({ namespace: 'lists', labelSelector: 'parity=odd' })
  assert.equal(
    odd.items.map((i) => i.metadata!.name),
    ['l1', 'l3', 'l5'],
  )
  // (kube-root-ca.crt, which every namespace has, carries none of these labels: `i` must exist)
  const notin = await e.core.listNamespacedConfigMap({ namespace: 'lists', labelSelector: 'i,i notin (0,1,2),parity!=odd' })
  assert.equal(
    notin.items.map((i) => i.metadata!.name),
    ['l4', 'l6'],
  )
  const byName = await e.core.listConfigMapForAllNamespaces({ fieldSelector: 'metadata.name=l2' })
  assert.equal(
    byName.items.map((i) => `${i.metadata!.namespace}/${i.metadata!.name}`),
    ['lists/l2'],
  )
  await rejects(e.core.listNamespacedConfigMap({ namespace: 'lists', fieldSelector: 'data.x=1' }), 400, 'BadRequest')
  const p1 = await e.core.listNamespacedConfigMap({ namespace: 'lists', limit: 3 })
  assert.equal(
    p1.items.map((i) => i.metadata!.name),
    ['kube-root-ca.crt', 'l0', 'l1'],
  )
  assert.is(p1.metadata!.remainingItemCount, 5)
  await e.core.createNamespacedConfigMap({ namespace: 'lists', body: { metadata: { name: 'l9' } } })
  const p2 = await e.core.listNamespacedConfigMap({ namespace: 'lists', limit: 3, _continue: p1.metadata!._continue! })
  assert.equal(
    p2.items.map((i) => i.metadata!.name),
    ['l2', 'l3', 'l4'],
  )
  assert.is(p2.metadata!.resourceVersion, p1.metadata!.resourceVersion, 'pages come from one snapshot')
  const p3 = await e.core.listNamespacedConfigMap({ namespace: 'lists', limit: 3, _continue: p2.metadata!._continue! })
  assert.equal(
    p3.items.map((i) => i.metadata!.name),
    ['l5', 'l6'],
    'l9 was created after the snapshot',
  )
  assert.is(p3.metadata!._continue, undefined)
  const q1 = await e.core.listNamespacedConfigMap({ namespace: 'lists', limit: 2 })
  e.server.control.compact()
  await rejects(e.core.listNamespacedConfigMap({ namespace: 'lists', limit: 2, _continue: q1.metadata!._continue! }), 410, 'Expired')
  const now = await e.core.listNamespacedConfigMap({ namespace: 'lists' })
  assert.is(now.metadata!.resourceVersion, String(e.server.control.resourceVersion()), 'list RV is the store version')
  const far = await rejects(
    e.core.listNamespacedConfigMap({ namespace: 'lists', resourceVersion: String(Number(now.metadata!.resourceVersion) + 1000) }),
    504,
    'Timeout',
  )
  assert.is(far.details.causes[0].reason, 'ResourceVersionTooLarge')
})

test('discovery: /api, /api/v1, /apis, /apis/apps, /version', async () => {
  const api: any = await (await fetchJson('/api')).json()
  assert.equal(api.versions, ['v1'])
  const v1: any = await (await fetchJson('/api/v1')).json()
  const cmRes = v1.resources.find((r: any) => r.name === 'configmaps')
  assert.equal([cmRes.kind, cmRes.namespaced, cmRes.shortNames], ['ConfigMap', true, ['cm']])
  assert.ok(v1.resources.some((r: any) => r.name === 'namespaces/status'))
  const apis: any = await (await fetchJson('/apis')).json()
  for (const g of ['apps', 'coordination.k8s.io', 'apiextensions.k8s.io'])
    assert.ok(
      apis.groups.some((x: any) => x.name === g),
      g,
    )
  const apps: any = await (await fetchJson('/apis/apps')).json()
  assert.is(apps.preferredVersion.groupVersion, 'apps/v1')
  const ver = await e.kc.makeApiClient(k8s.VersionApi).getCode()
  assert.is(ver.major, '1')
  assert.is((await fetchJson('/apis/nope/v1')).status, 404)
})

test('typed APIs for Lease, Event, Service and Deployment', async () => {
  const coord = e.kc.makeApiClient(k8s.CoordinationV1Api)
  const lease = await coord.createNamespacedLease({
    namespace: 'default',
    body: { metadata: { name: 'leader' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime: new k8s.V1MicroTime() } },
  })
  assert.is(lease.spec!.holderIdentity, 'a')
  const upd = await coord.replaceNamespacedLease({
    namespace: 'default',
    name: 'leader',
    body: { ...lease, spec: { ...lease.spec, holderIdentity: 'b' } },
  })
  assert.is(upd.spec!.holderIdentity, 'b')
  await e.core.createNamespacedEvent({
    namespace: 'default',
    body: { metadata: { name: 'ev1' }, involvedObject: { kind: 'Pod', name: 'p' }, reason: 'Started', type: 'Normal' },
  })
  const evs = await e.core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.name=p,reason=Started' })
  assert.is(evs.items.length, 1)
  await e.core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } } })
  const apps = e.kc.makeApiClient(k8s.AppsV1Api)
  const dep = await apps.createNamespacedDeployment({
    namespace: 'default',
    body: {
      metadata: { name: 'web' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      },
    },
  })
  const st = await apps.replaceNamespacedDeploymentStatus({
    namespace: 'default',
    name: 'web',
    body: { ...dep, status: { readyReplicas: 1, observedGeneration: 1 } },
  })
  assert.is(st.status!.readyReplicas, 1)
})

test('authentication: wrong or missing token is 401 Unauthorized; the right one is logged', async () => {
  const bad = new k8s.KubeConfig()
  bad.loadFromString(e.server.kubeconfig.replace(/token: .*/, 'token: wrong'))
  await rejects(bad.makeApiClient(k8s.CoreV1Api).listNamespace(), 401) // the generated client drops 401 bodies
  const res = await fetch(`${e.server.url}/api/v1/namespaces`)
  assert.is(res.status, 401)
  assert.is(res.headers.get('content-type'), 'application/json')
  assert.is(((await res.json()) as any).reason, 'Unauthorized')
  e.server.control.clearRequestLog()
  await e.core.listNamespace()
  const log = e.server.control.requestLog()
  assert.is(log.length, 1)
  assert.is(log[0]!.token, e.server.token)
  assert.is(log[0]!.status, 200)
})

test('several servers side by side are separate clusters', async () => {
  const other = await env({ name: 'cluster-b', seed: 2 })
  try {
    await other.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'only-b' } } })
    await rejects(e.core.readNamespacedConfigMap({ namespace: 'default', name: 'only-b' }), 404)
    assert.is.not(other.server.url, e.server.url)
  } finally {
    await other.server.stop()
  }
})

function fetchJson(path: string, init: RequestInit = {}) {
  return fetch(e.server.url + path, { ...init, headers: { authorization: `Bearer ${e.server.token}`, ...(init.headers ?? {}) } })
}

test.run()
