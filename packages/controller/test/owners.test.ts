// Owner references: controllerRef/withOwner/ownerOf as pure functions with clear errors, and end to
// end: a ConfigMap derived from a Gadget with withOwner goes when the Gadget is deleted (the test
// server's garbage collector).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { controllerRef, withOwner, ownerOf, ownerReferences, isOwnedBy } from '@statewright/controller'
import type { KubeObject } from '@statewright/k8s'
import { env, gadget, createGadget, type Env } from './helpers.ts'

const owner: KubeObject = { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g', namespace: 'default', uid: 'u-1' } }
const cm = (extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'g-config', namespace: 'default', ...extra },
})

test('controllerRef and withOwner build a controller reference; ownerOf finds it', () => {
  assert.equal(controllerRef(owner), {
    apiVersion: 'example.com/v1',
    kind: 'Gadget',
    name: 'g',
    uid: 'u-1',
    controller: true,
    blockOwnerDeletion: true,
  })
  const input = cm({ ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 's', uid: 'u-s' }] })
  const owned = withOwner(input, owner)
  assert.equal(
    ownerReferences(owned).map((r) => r.uid),
    ['u-s', 'u-1'],
    'other references are kept',
  )
  assert.equal(ownerOf(owned), controllerRef(owner))
  assert.ok(isOwnedBy(owned, owner))
  assert.is(ownerReferences(input).length, 1, 'the input is not mutated')
  assert.equal(withOwner(owned, owner), owned, 'setting the same owner again changes nothing')
  assert.is(ownerOf(cm()), undefined)
  // a cluster-scoped owner may own objects in any namespace
  const node: KubeObject = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n', uid: 'u-n' } }
  assert.is(ownerOf(withOwner(cm({ namespace: 'elsewhere' }), node))?.kind, 'Node')
})

test('bad input: an owner without uid, a second controller, another namespace', () => {
  assert.throws(
    () => controllerRef({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g', namespace: 'default' } }),
    /Gadget.example.com default\/g: cannot be an owner without metadata.uid/,
  )
  assert.throws(() => controllerRef({ metadata: { name: 'x' } }), /\? x: cannot be an owner without apiVersion, kind, metadata.uid/)
  const other: KubeObject = { ...owner, metadata: { ...owner.metadata, name: 'h', uid: 'u-2' } }
  assert.throws(
    () => withOwner(withOwner(cm(), owner), other),
    /ConfigMap default\/g-config: already controlled by Gadget g \(uid u-1\); cannot set Gadget.example.com default\/h as its controller/,
  )
  assert.throws(
    () => withOwner(cm({ namespace: 'kube-system' }), owner),
    /ConfigMap kube-system\/g-config: cannot be owned by Gadget.example.com default\/g: a namespaced owner only owns objects in its own namespace/,
  )
})

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.stop()
})

test('a derived object with withOwner is garbage-collected with its owner', async () => {
  const g = await createGadget(e.cluster, gadget('owner-1'))
  const derived = withOwner(
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner-1-config', namespace: 'default' }, data: { a: '1' } },
    g,
  )
  const applied = await e.cluster.request({
    method: 'PATCH',
    path: '/api/v1/namespaces/default/configmaps/owner-1-config',
    query: { fieldManager: 'test', force: true },
    body: derived,
    contentType: 'application/apply-patch+yaml',
  })
  assert.ok(isOwnedBy(applied, g))
  await e.cluster.request({ method: 'DELETE', path: '/apis/example.com/v1/namespaces/default/gadgets/owner-1' })
  assert.is(e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'owner-1-config', 'default'), undefined)
})

test.run()
