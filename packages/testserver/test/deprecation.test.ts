// Deprecated CRD versions send a `Warning: 299 - "<text>"` header on every response, after
// apiextensions-apiserver's test/integration/deprecation_test.go (TestCustomResourceDeprecation) and
// customresource_handler_test.go (Test_defaultDeprecationWarning), and apimachinery's
// CompareKubeAwareVersionStrings ordering (helpers_test.go); kubectl prints the warning.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, type Env } from './helpers.ts'
import { compareKubeAwareVersions, crdDeprecationWarning } from '../src/deprecation.ts'

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

const schema = { openAPIV3Schema: { type: 'object' } }
// deprecation_test.go's deprecationFixture
const DEPS = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'deps.tests.example.com' },
  spec: {
    group: 'tests.example.com',
    scope: 'Cluster',
    names: { plural: 'deps', singular: 'dep', kind: 'Dep', listKind: 'DepList' },
    versions: [
      { name: 'v1alpha1', served: true, storage: false, deprecated: true, schema },
      { name: 'v1alpha2', served: true, storage: false, deprecated: true, deprecationWarning: 'custom deprecation warning', schema },
      { name: 'v1beta3', served: true, storage: false, schema },
      { name: 'v1beta2', served: true, storage: false, schema },
      { name: 'v1', served: false, storage: true, schema },
    ],
  },
}

/** The warning texts of a response, as client-go's handler gets them. */
const warnings = (h: Headers): string[] => {
  const raw = h.get('warning')
  if (!raw) return []
  return [...raw.matchAll(/299 - "((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`))
}

test('TestCustomResourceDeprecation: default and custom warnings on a list; none for served, non-deprecated versions', async () => {
  const r = await http(e, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', DEPS)
  assert.is(r.status, 201, JSON.stringify(r.body))
  const cases: Array<[string, string[]]> = [
    ['v1alpha1', ['tests.example.com/v1alpha1 Dep is deprecated; use tests.example.com/v1beta3 Dep']], // "default"
    ['v1alpha2', ['custom deprecation warning']], // "custom"
    ['v1beta2', []], // "older non-deprecated"
    ['v1beta3', []], // "newest non-deprecated"
  ]
  for (const [version, want] of cases) {
    const list = await http(e, 'GET', `/apis/tests.example.com/${version}/deps`)
    assert.is(list.status, 200)
    assert.equal(warnings(list.headers), want, version)
  }
})

test('every verb on a deprecated version warns once; a write keeps its own warnings after it', async () => {
  const path = '/apis/tests.example.com/v1alpha2/deps'
  const created = await http(e, 'POST', path, { apiVersion: 'tests.example.com/v1alpha2', kind: 'Dep', metadata: { name: 'a' }, junk: 1 })
  assert.is(created.status, 201, JSON.stringify(created.body))
  assert.equal(warnings(created.headers), ['custom deprecation warning', 'unknown field "junk"'])
  assert.equal(warnings((await http(e, 'GET', `${path}/a`)).headers), ['custom deprecation warning'])
  const missing = await http(e, 'GET', `${path}/nope`)
  assert.is(missing.status, 404)
  assert.equal(warnings(missing.headers), ['custom deprecation warning'])
  const watch = await fetch(`${e.server.url}${path}?watch=true&timeoutSeconds=1`, {
    headers: { authorization: `Bearer ${e.server.token}` },
  })
  assert.equal(warnings(watch.headers), ['custom deprecation warning'])
  await watch.body?.cancel()
  assert.equal(warnings((await http(e, 'DELETE', `${path}/a`)).headers), ['custom deprecation warning'])
})

test('Test_defaultDeprecationWarning: the replacement is the most preferred served, non-deprecated, more preferred version', () => {
  const spec = (versions: any[]) => ({ group: 'example.com', names: { kind: 'Widget' }, versions })
  const v = (name: string, served = true, deprecated = false) => ({ name, served, deprecated })
  // "no replacement"
  assert.is(
    crdDeprecationWarning({ ...v('v1', true, true) }, spec([v('v1', true, true), v('v2', true, true), v('v3', false)])),
    'example.com/v1 Widget is deprecated',
  )
  // "replacement sorting"
  const all = ['v1', 'v1alpha1', 'v1alpha2', 'v1beta1', 'v1beta2', 'v2', 'v2alpha1', 'v2alpha2', 'v2beta1', 'v2beta2'].map((n) => v(n))
  const unserved = ['v3', 'v3alpha1', 'v3alpha2', 'v3beta1', 'v3beta2'].map((n) => v(n, false))
  assert.is(
    crdDeprecationWarning(v('v1', true, true), spec([...all, ...unserved])),
    'example.com/v1 Widget is deprecated; use example.com/v2 Widget',
  )
  // "no newer replacement of equal stability"
  const versions = [v('v1'), v('v2', true, true), v('v3', false), v('v3alpha1'), v('v3beta1'), v('v4', true, true)]
  assert.is(crdDeprecationWarning(v('v2', true, true), spec(versions)), 'example.com/v2 Widget is deprecated')
  assert.is(crdDeprecationWarning(v('v2'), spec(versions)), undefined)
})

test('CompareKubeAwareVersionStrings order: GA > beta > alpha, then major, then minor; other names below, reverse alphabetical', () => {
  const order = ['v2', 'v1', 'v11beta2', 'v10beta3', 'v3beta1', 'v12alpha1', 'v11alpha2', 'foo1', 'foo10']
  for (let i = 0; i < order.length; i++)
    for (let j = 0; j < order.length; j++) {
      const c = Math.sign(compareKubeAwareVersions(order[i]!, order[j]!))
      assert.is(c, Math.sign(j - i), `${order[i]} vs ${order[j]}`)
    }
  const shuffled = [...order].sort(() => 0.5 - Math.random())
  assert.equal(
    shuffled.sort((a, b) => compareKubeAwareVersions(b, a)),
    order,
  )
})

test.run()
