// Garbage collection by ownerReferences: background, foreground and orphan propagation, owners
// already gone at create, cluster-scoped owners, finalizers on dependents, and `gc: false`.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, type Env, k8s } from './helpers.ts'

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

const ref = (o: { apiVersion?: string; kind?: string; metadata?: { name?: string; uid?: string } }, block = false) => ({
  apiVersion: o.apiVersion ?? 'v1',
  kind: o.kind ?? 'ConfigMap',
  name: o.metadata!.name!,
  uid: o.metadata!.uid!,
  ...(block ? { blockOwnerDeletion: true } : {}),
})
async function cm(name: string, owners: any[] = [], extra: Record<string, unknown> = {}, namespace = 'default') {
  const c = await e.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, ownerReferences: owners, ...extra } } })
  return { ...c, apiVersion: 'v1', kind: 'ConfigMap' }
}
const exists = (name: string, namespace = 'default') =>
  e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, name, namespace) !== undefined
const stored = (name: string, namespace = 'default') => e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, name, namespace)

test('background: dependents of any kind go with their owner, transitively; a dependent with a surviving owner loses only the dead reference', async () => {
  const owner = await cm('bg-owner')
  const other = await cm('bg-other')
  const d1 = await cm('bg-d1', [ref(owner)])
  await e.core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'bg-secret', ownerReferences: [ref(owner)] } } })
  await cm('bg-grandchild', [ref(d1)])
  await cm('bg-shared', [ref(owner), ref(other)])
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'bg-owner' })
  assert.not.ok(exists('bg-d1'))
  assert.not.ok(exists('bg-grandchild'), 'the dependent of a dependent goes too')
  assert.is(e.server.control.get({ apiVersion: 'v1', kind: 'Secret' }, 'bg-secret', 'default'), undefined)
  const shared = stored('bg-shared')
  assert.ok(shared, 'a dependent with another existing owner stays')
  assert.equal(
    shared.metadata.ownerReferences.map((r: any) => r.name),
    ['bg-other'],
  )
  assert.ok(exists('bg-other'))
})

test('a dependent created (or updated) with owners already gone is deleted at once; unresolvable owners keep it', async () => {
  const owner = await cm('late-owner')
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'late-owner' })
  const created = await cm('late-dep', [ref(owner)])
  assert.ok(created.metadata?.uid, 'the create itself succeeds, as on a real server')
  assert.not.ok(exists('late-dep'), 'then the collector removes it')
  // a namespaced owner is looked up in the dependent's namespace: elsewhere it counts as absent
  await e.core.createNamespace({ body: { metadata: { name: 'gc-elsewhere' } } })
  const here = await cm('here')
  await cm('cross-ns', [ref(here)], {}, 'gc-elsewhere')
  assert.not.ok(exists('cross-ns', 'gc-elsewhere'))
  // a kind the server does not serve cannot be verified: never deleted on a guess
  await cm('unknown-kind', [{ apiVersion: 'example.com/v1', kind: 'Ghost', name: 'g', uid: 'u-1' }])
  assert.ok(exists('unknown-kind'))
  // an update that points the only reference at a missing owner: collected too
  await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'unknown-kind', body: { metadata: { ownerReferences: [ref(owner)] } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  assert.not.ok(exists('unknown-kind'))
})

test('a cluster-scoped owner collects namespaced dependents', async () => {
  const node = await e.core.createNode({ body: { metadata: { name: 'gc-node' } } })
  await cm('on-node', [ref({ apiVersion: 'v1', kind: 'Node', metadata: node.metadata! })])
  await e.core.deleteNode({ name: 'gc-node' })
  assert.not.ok(exists('on-node'))
})

test('a dependent with a finalizer is marked for deletion and stays until the finalizer is cleared', async () => {
  const owner = await cm('fin-owner')
  await cm('fin-dep', [ref(owner)], { finalizers: ['example.com/hold'] })
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'fin-owner' })
  assert.ok(stored('fin-dep')?.metadata.deletionTimestamp, 'terminating')
  await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'fin-dep', body: { metadata: { finalizers: null } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  assert.not.ok(exists('fin-dep'))
})

test('foreground: the owner stays (foregroundDeletion) until its blocking dependents are gone', async () => {
  const owner = await cm('fg-owner')
  await cm('fg-blocker', [ref(owner, true)], { finalizers: ['example.com/hold'] })
  await cm('fg-plain', [ref(owner)])
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'fg-owner', propagationPolicy: 'Foreground' })
  const held = stored('fg-owner')
  assert.ok(held?.metadata.deletionTimestamp)
  assert.equal(held.metadata.finalizers, ['foregroundDeletion'])
  assert.not.ok(exists('fg-plain'), 'dependents are deleted first')
  assert.ok(stored('fg-blocker')?.metadata.deletionTimestamp)
  await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'fg-blocker', body: { metadata: { finalizers: null } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  assert.not.ok(exists('fg-blocker'))
  assert.not.ok(exists('fg-owner'), 'the owner goes once nothing blocks it')
  // nothing blocking: the owner goes within the DELETE
  const quick = await cm('fg-quick')
  await cm('fg-quick-dep', [ref(quick, true)])
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'fg-quick', propagationPolicy: 'Foreground' })
  assert.not.ok(exists('fg-quick'))
  assert.not.ok(exists('fg-quick-dep'))
})

test('orphan: the owner goes, dependents stay without the reference to it', async () => {
  const owner = await cm('or-owner')
  const other = await cm('or-other')
  await cm('or-dep', [ref(owner)])
  await cm('or-two', [ref(owner), ref(other)])
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'or-owner', propagationPolicy: 'Orphan' })
  assert.not.ok(exists('or-owner'))
  assert.is(stored('or-dep')?.metadata.ownerReferences, undefined)
  assert.equal(
    stored('or-two').metadata.ownerReferences.map((r: any) => r.name),
    ['or-other'],
  )
  // an owner with another finalizer: orphaned now, removed when that finalizer is cleared
  const held = await cm('or-held', [], { finalizers: ['example.com/hold'] })
  await cm('or-held-dep', [ref(held)])
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'or-held', propagationPolicy: 'Orphan' })
  assert.equal(stored('or-held').metadata.finalizers, ['example.com/hold'], 'the orphan finalizer is done and removed')
  assert.is(stored('or-held-dep').metadata.ownerReferences, undefined)
})

test('gc: false behaves like envtest: nothing is collected, propagation finalizers stay', async () => {
  const g = await env({ gc: false })
  try {
    const core = g.core
    const owner = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'o' } } })
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'd', ownerReferences: [ref({ ...owner, apiVersion: 'v1', kind: 'ConfigMap' })] } },
    })
    await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'o' })
    assert.ok(g.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'd', 'default'), 'the dependent stays')
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'f' } } })
    await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'f', propagationPolicy: 'Foreground' })
    assert.equal(g.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'f', 'default')?.metadata.finalizers, ['foregroundDeletion'])
  } finally {
    await g.server.stop()
  }
})

test('a namespace deletion whose contents own each other completes', async () => {
  await e.core.createNamespace({ body: { metadata: { name: 'gc-ns' } } })
  const a = await cm('a', [], {}, 'gc-ns')
  await cm('b', [ref(a)], {}, 'gc-ns')
  await e.core.deleteNamespace({ name: 'gc-ns' })
  e.server.control.finishDeletions() // the namespace controller's pass
  assert.is(e.server.control.get({ apiVersion: 'v1', kind: 'Namespace' }, 'gc-ns'), undefined)
})

test.run()
