// Storage-independent parts: selectors, patches, SSA field sets, faults PRNG, kubeconfig, routing.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { parseLabelSelector, matchLabels, makeMatcher } from '../src/selectors.ts'
import { mergePatch, jsonPatch, strategicMerge } from '../src/patch.ts'
import { serverSideApply, recordUpdate } from '../src/apply.ts'
import { fieldSetOf, toFieldsV1, fromFieldsV1, pathString } from '../src/fieldset.ts'
import { BUILTIN_SCHEMA } from '../src/schema.ts'
import { Faults, prng } from '../src/faults.ts'
import { kubeconfigYaml } from '../src/kubeconfig.ts'
import { KubeConfig } from '@kubernetes/client-node'
import { Registry } from '../src/resources.ts'
import { route } from '../src/routes.ts'
import { StatusError } from '../src/status.ts'

test('label selectors: every operator', () => {
  const l = { app: 'web', tier: 'front', n: '5' }
  const m = (s: string) => matchLabels(parseLabelSelector(s), l)
  assert.ok(m('app=web'))
  assert.ok(m('app==web,tier=front'))
  assert.not.ok(m('app!=web'))
  assert.ok(m('app in (web, db)'))
  assert.not.ok(m('app notin (web,db)'))
  assert.ok(m('tier'))
  assert.ok(m('!missing'))
  assert.not.ok(m('!app'))
  assert.ok(m('n>3'))
  assert.not.ok(m('n<3'))
  assert.ok(m('missing!=x'), 'a missing key satisfies !=')
  assert.ok(m(''))
  assert.throws(
    () => parseLabelSelector('app=(web'),
    (e: unknown) => e instanceof StatusError && e.code === 400,
  )
})

test('field selectors: metadata fields and declared ones only', () => {
  const m = makeMatcher(undefined, 'metadata.name=a,metadata.namespace!=kube-system', [])!
  assert.ok(m({ metadata: { name: 'a', namespace: 'default' } }))
  assert.not.ok(m({ metadata: { name: 'a', namespace: 'kube-system' } }))
  assert.throws(
    () => makeMatcher(undefined, 'spec.foo=1', []),
    (e: unknown) => e instanceof StatusError && e.code === 400,
  )
  assert.ok(makeMatcher(undefined, 'type=Opaque', ['type'])!({ type: 'Opaque', metadata: {} }))
})

test('merge patch (RFC 7386): null deletes, objects merge, arrays replace', () => {
  const out = mergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { a: null, b: { c: 9 }, l: [3] })
  assert.equal(out, { b: { c: 9, d: 3 }, l: [3] })
})

test('json patch (RFC 6902): all operations, test failure is 422', () => {
  const doc = { a: [1, 2], b: { c: 'x' } }
  const out = jsonPatch(doc, [
    { op: 'add', path: '/a/1', value: 9 },
    { op: 'remove', path: '/a/0' },
    { op: 'replace', path: '/b/c', value: 'y' },
    { op: 'copy', from: '/b/c', path: '/d' },
    { op: 'move', from: '/d', path: '/e' },
    { op: 'test', path: '/e', value: 'y' },
    { op: 'add', path: '/a/-', value: 7 },
  ])
  assert.equal(out, { a: [9, 2, 7], b: { c: 'y' }, e: 'y' })
  assert.equal(doc, { a: [1, 2], b: { c: 'x' } }, 'input untouched')
  assert.throws(
    () => jsonPatch(doc, [{ op: 'test', path: '/b/c', value: 'nope' }]),
    (e: unknown) => e instanceof StatusError && e.code === 422,
  )
  assert.throws(
    () => jsonPatch(doc, [{ op: 'remove', path: '/zz' }]),
    (e: unknown) => e instanceof StatusError && e.code === 422,
  )
})

test('strategic merge: lists merge by key, $patch directives, set lists', () => {
  const live = {
    spec: {
      containers: [
        { name: 'a', image: 'a:1' },
        { name: 'b', image: 'b:1' },
      ],
    },
    metadata: { finalizers: ['x'] },
  }
  const out = strategicMerge(live, {
    spec: {
      containers: [
        { name: 'b', image: 'b:2' },
        { name: 'c', image: 'c:1' },
        { name: 'a', $patch: 'delete' },
      ],
    },
    metadata: { finalizers: ['y'] },
  })
  assert.equal(out.spec.containers, [
    { name: 'b', image: 'b:2' },
    { name: 'c', image: 'c:1' },
  ])
  assert.equal(out.metadata.finalizers, ['x', 'y'])
  const rep = strategicMerge({ data: { a: '1', b: '2' } }, { data: { $patch: 'replace', c: '3' } })
  assert.equal(rep, { data: { c: '3' } })
  const del = strategicMerge({ metadata: { finalizers: ['x', 'y'] } }, { metadata: { '$deleteFromPrimitiveList/finalizers': ['x'] } })
  assert.equal(del.metadata.finalizers, ['y'])
})

test('FieldsV1 round trip and path strings', () => {
  const set = fieldSetOf(
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: '1' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    'all',
    BUILTIN_SCHEMA,
  )
  const tree = toFieldsV1(set)
  assert.equal(tree, {
    'f:metadata': { 'f:labels': { 'f:a': {} } },
    'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:name': {}, 'f:image': {} } } },
  })
  assert.equal([...fromFieldsV1(tree).keys()].sort(), [...set.keys()].sort())
  assert.is(pathString(['f:spec', 'f:containers', 'k:{"name":"c"}', 'f:image']), '.spec.containers[name="c"].image')
})

test('SSA: conflicts, force, shared ownership, removal of unapplied fields', () => {
  const a1 = serverSideApply(
    undefined,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1', b: '1' } },
    { manager: 'A', force: false, apiVersion: 'v1', scope: 'all', schema: BUILTIN_SCHEMA },
  )
  // B applies the same value of a: shared, no conflict
  const b1 = serverSideApply(
    a1.object,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } },
    { manager: 'B', force: false, apiVersion: 'v1', scope: 'all', schema: BUILTIN_SCHEMA },
  )
  assert.equal(
    b1.managedFields.map((e) => e.manager),
    ['A', 'B'],
  )
  // B changes a: conflict with A
  try {
    serverSideApply(
      b1.object,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '2' } },
      { manager: 'B', force: false, apiVersion: 'v1', scope: 'all', schema: BUILTIN_SCHEMA },
    )
    assert.unreachable('conflict expected')
  } catch (e) {
    assert.instance(e, StatusError)
    const err = e as StatusError
    assert.is(err.code, 409)
    assert.equal(err.status.details?.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "A" using v1', field: '.data.a' }])
  }
  const forced = serverSideApply(
    b1.object,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '2' } },
    { manager: 'B', force: true, apiVersion: 'v1', scope: 'all', schema: BUILTIN_SCHEMA },
  )
  assert.is(forced.object.data.a, '2')
  assert.equal(forced.managedFields.find((e) => e.manager === 'A')!.fieldsV1, { 'f:data': { 'f:b': {} } })
  // A stops applying b: removed (nobody else owns it)
  const a2 = serverSideApply(
    forced.object,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: {} },
    { manager: 'A', force: false, apiVersion: 'v1', scope: 'all', schema: BUILTIN_SCHEMA },
  )
  assert.equal(a2.object.data, { a: '2' })
})

test('Update ownership: the writer takes the fields it changed', () => {
  const a = serverSideApply(
    undefined,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } },
    { manager: 'A', force: false, apiVersion: 'v1', scope: 'all', schema: BUILTIN_SCHEMA },
  )
  const next = { ...a.object, data: { a: '2', c: '3' } }
  const mf = recordUpdate(a.object, next, { manager: 'kubectl-edit', apiVersion: 'v1', scope: 'all', schema: BUILTIN_SCHEMA })
  assert.equal(
    mf.map((e) => [e.manager, e.operation, e.fieldsV1]),
    [['kubectl-edit', 'Update', { 'f:data': { 'f:a': {}, 'f:c': {} } }]],
  )
})

test('faults: the same seed gives the same decisions; count limits hits', () => {
  const run = (seed: number) => {
    const f = new Faults(seed)
    f.failRequests({ ratio: 0.5, path: '/api' })
    return Array.from({ length: 64 }, () => !!f.failureFor({ method: 'GET', path: '/api/v1/x', watch: false }))
  }
  assert.equal(run(7), run(7))
  assert.not.equal(run(7), run(8))
  const hits = run(7).filter(Boolean).length
  assert.ok(hits > 16 && hits < 48, `about half fail (${hits})`)
  const f = new Faults(1)
  f.failRequests({ count: 2, method: 'POST', status: 429 })
  const got = Array.from({ length: 4 }, () => f.failureFor({ method: 'POST', path: '/x', watch: false })?.status)
  assert.equal(got, [429, 429, undefined, undefined])
  assert.is(f.failureFor({ method: 'GET', path: '/x', watch: false }), undefined)
  const r = prng(3)
  assert.ok(r() >= 0 && r() < 1)
})

test('kubeconfig: skip-verify cluster over HTTP, the CA over HTTPS; names with YAML syntax stay valid', () => {
  const load = (y: string) => {
    const kc = new KubeConfig()
    kc.loadFromString(y)
    return kc
  }
  const plain = load(kubeconfigYaml({ server: 'http://127.0.0.1:1', token: 'tok', name: 'c1' }))
  assert.is(plain.getCurrentCluster()!.skipTLSVerify, true)
  assert.is(plain.getCurrentUser()!.token, 'tok')
  const odd = 'east: prod #1 "quoted" - [x]'
  const kc = load(
    kubeconfigYaml({
      server: 'https://127.0.0.1:2',
      token: 't: #x',
      name: odd,
      namespace: 'ns: #y',
      caPem: '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n',
    }),
  )
  assert.is(kc.getCurrentContext(), odd)
  assert.is(kc.getCurrentCluster()!.name, odd)
  assert.is(kc.getCurrentUser()!.token, 't: #x')
  assert.is(kc.getContextObject(odd)!.namespace, 'ns: #y')
  assert.is(kc.getCurrentCluster()!.skipTLSVerify, false)
  assert.match(Buffer.from(kc.getCurrentCluster()!.caData!, 'base64').toString(), 'BEGIN CERTIFICATE')
})

test('routing: namespaced, cluster-scoped, subresources, unknown', () => {
  const reg = new Registry()
  const r1 = route(reg, '/api/v1/namespaces/ns1/configmaps/a')
  assert.ok(r1.kind === 'object' && r1.type.kind === 'ConfigMap' && r1.namespace === 'ns1' && r1.name === 'a')
  const r2 = route(reg, '/api/v1/namespaces/ns1')
  assert.ok(r2.kind === 'object' && r2.type.kind === 'Namespace' && r2.name === 'ns1')
  const r3 = route(reg, '/apis/apps/v1/namespaces/d/deployments/x/status')
  assert.ok(r3.kind === 'object' && r3.subresource === 'status')
  assert.is(route(reg, '/api/v1/namespaces/d/configmaps/x/status').kind, 'unknown', 'no status on configmaps')
  assert.is(route(reg, '/apis/nope/v1/things').kind, 'unknown')
  const r4 = route(reg, '/api/v1/configmaps')
  assert.ok(r4.kind === 'object' && r4.namespace === undefined)
})

test.run()
