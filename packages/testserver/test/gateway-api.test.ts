// The Gateway API's own CRD test data run against the test server, as upstream's
// tests/crd/crd_test.go (TestCRDValidation) runs it against envtest: the standard-channel CRDs install,
// every standard example is accepted ("should be able to install standard examples"), every standard
// invalid example is refused with a validation error ("should expect an error in case of validation
// failure", with its expectedValidationError texts). The fixtures are vendored (fixtures/gateway-api/README.md).
// Where upstream runs `kubectl apply`, this applies each document server-side with fieldValidation=Strict
// (what kubectl sends), which goes through the same admission as a create or an update.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { env, http, type Env } from './helpers.ts'

const ROOT = join(import.meta.dirname, 'fixtures', 'gateway-api')
let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

function yamlFiles(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) out.push(...yamlFiles(p))
    else if (name.endsWith('.yaml')) out.push(p)
  }
  return out
}
function docs(file: string): any[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS())
    .filter((d) => d && typeof d === 'object')
}

/** The collection path of an object (its kind must be served). */
function pathOf(obj: any): string {
  const t = e.server.server.registry.byKind(obj.apiVersion, obj.kind)
  if (!t) throw new Error(`not served: ${obj.apiVersion} ${obj.kind}`)
  const base = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`
  const ns = t.namespaced ? `/namespaces/${obj.metadata.namespace ?? 'default'}` : ''
  return `${base}${ns}/${t.resource}/${obj.metadata.name}`
}
const apply = (obj: any) =>
  http(e, 'PATCH', `${pathOf(obj)}?fieldManager=kubectl&force=true&fieldValidation=Strict`, obj, 'application/apply-patch+yaml')

/** crd_test.go's expectedValidationError */
const expectedValidationError = (out: string) =>
  out.includes('is invalid') || out.includes('missing required field') || out.includes('denied request') || out.includes('Invalid value')

test('should be able to start test environment: the standard-channel CRDs install and are Established', async () => {
  for (const file of yamlFiles(join(ROOT, 'config', 'crd', 'standard'))) {
    for (const crd of docs(file)) {
      if (crd.kind !== 'CustomResourceDefinition') continue // envtest installs CRDs only
      const res = await http(e, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
      assert.is(res.status, 201, `${relative(ROOT, file)}: ${JSON.stringify(res.body).slice(0, 400)}`)
    }
  }
  assert.ok(e.server.server.registry.byKind('gateway.networking.k8s.io/v1', 'HTTPRoute'))
})

test('should be able to install standard examples', async () => {
  const failures: string[] = []
  let applied = 0
  for (const file of yamlFiles(join(ROOT, 'examples', 'standard'))) {
    for (const obj of docs(file)) {
      const res = await apply(obj)
      applied++
      if (res.status >= 300) failures.push(`${relative(ROOT, file)} ${obj.kind}/${obj.metadata.name}: ${res.body.message ?? res.body}`)
    }
  }
  assert.equal(failures, [])
  assert.ok(applied > 80, `${applied} objects applied`)
  // the schema's defaults were applied, as a real server stores them (several examples write route "foo")
  const foo = e.server.control.get({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute' }, 'foo')
  const ref = foo.spec.rules[0].backendRefs[0]
  assert.equal([ref.group, ref.kind, ref.weight], ['', 'Service', 1])
  assert.equal([foo.spec.parentRefs[0].group, foo.spec.parentRefs[0].kind], ['gateway.networking.k8s.io', 'Gateway'])
})

test('should expect an error in case of validation failure: each invalid example is refused', async () => {
  const accepted: string[] = []
  let n = 0
  for (const file of yamlFiles(join(ROOT, 'hack', 'invalid-examples', 'standard'))) {
    n++
    const results = await Promise.all(docs(file).map((obj) => apply(obj)))
    const refused = results.find((r) => r.status >= 400)
    const out = refused ? String(refused.body.message) : ''
    if (!refused || !expectedValidationError(out)) accepted.push(`${relative(ROOT, file)}: ${refused ? out : 'accepted'}`)
  }
  assert.equal(accepted, [])
  assert.is(n, 32)
})

test.run()
