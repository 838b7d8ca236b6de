// Custom resources validated, pruned and defaulted by their CRD's structural schema, CEL rules, and
// CRDs refused when their schema is not structural (issue 30: "Custom resources are not validated",
// "No pruning, no defaulting, no warnings"); the messages follow kube-apiserver's.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, type Env } from './helpers.ts'

let e: Env
test.before(async () => {
  e = await env()
  const res = await http(e, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CERT_CRD)
  assert.is(res.status, 201, JSON.stringify(res.body))
})
test.after(async () => {
  await e.server.stop()
})

const condition = {
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: { type: 'string', maxLength: 316 },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    lastTransitionTime: { type: 'string', format: 'date-time' },
    reason: { type: 'string', minLength: 1 },
    message: { type: 'string', maxLength: 32768 },
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
  },
}
// shaped like cert-manager's Certificate (secretName required), with defaults, int-or-string and CEL
const CERT_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'certificates.certs.example.com' },
  spec: {
    group: 'certs.example.com',
    scope: 'Namespaced',
    names: { plural: 'certificates', singular: 'certificate', kind: 'Certificate' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['secretName'],
                'x-kubernetes-validations': [
                  { rule: 'self.replicas <= 10', message: 'at most 10 replicas' },
                  { rule: 'self.secretName == oldSelf.secretName', message: 'secretName is immutable' },
                ],
                properties: {
                  secretName: { type: 'string', minLength: 1 },
                  replicas: { type: 'integer', default: 1 },
                  port: { 'x-kubernetes-int-or-string': true },
                  usages: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
                  issuer: { type: 'object', default: {}, properties: { kind: { type: 'string', default: 'Issuer' } } },
                  extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  note: { type: 'string', nullable: true },
                  dns: {
                    type: 'string',
                    'x-kubernetes-validations': [{ rule: 'isIP(self) == false', messageExpression: "'not an IP: ' + self" }],
                  },
                  future: { type: 'string', 'x-kubernetes-validations': [{ rule: "self.someFutureFunction() == 'x'" }] },
                },
              },
              status: {
                type: 'object',
                properties: {
                  conditions: {
                    type: 'array',
                    items: condition,
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['type'],
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
}
const P = '/apis/certs.example.com/v1/namespaces/default/certificates'
const cert = (name: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'certs.example.com/v1',
  kind: 'Certificate',
  metadata: { name },
  spec,
  ...extra,
})

test('a wrong-typed field and a missing required field are 422 Invalid with field paths', async () => {
  const wrong = await http(e, 'POST', P, cert('c-wrong', { secretName: 's', replicas: 'three' }))
  assert.is(wrong.status, 422)
  assert.is(wrong.body.reason, 'Invalid')
  assert.equal(wrong.body.details.causes[0], {
    reason: 'FieldValueTypeInvalid',
    message: 'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
    field: 'spec.replicas',
  })
  const missing = await http(e, 'POST', P, cert('c-missing', { replicas: 2 }))
  assert.is(missing.status, 422)
  assert.is(missing.body.message, 'Certificate.certs.example.com "c-missing" is invalid: spec.secretName: Required value')
  assert.is(e.server.control.get({ apiVersion: 'certs.example.com/v1', kind: 'Certificate' }, 'c-missing'), undefined)
})

test('unknown fields are pruned with a Warning header; Strict refuses them; preserve-unknown-fields keeps them', async () => {
  const res = await http(e, 'POST', P, cert('c-prune', { secretName: 's', bogus: 1, extra: { anything: { goes: true } } }, { junk: 'x' }))
  assert.is(res.status, 201)
  assert.is(res.body.spec.bogus, undefined)
  assert.is(res.body.junk, undefined)
  assert.equal(res.body.spec.extra, { anything: { goes: true } })
  assert.match(res.headers.get('warning') ?? '', '299 - "unknown field \\"spec.bogus\\""')
  assert.match(res.headers.get('warning') ?? '', 'unknown field \\"junk\\"')
  const strict = await http(e, 'POST', `${P}?fieldValidation=Strict`, cert('c-strict', { secretName: 's', bogus: 1 }))
  assert.is(strict.status, 400)
  assert.match(strict.body.message, 'strict decoding error: unknown field "spec.bogus"')
  const ignore = await http(e, 'POST', `${P}?fieldValidation=Ignore`, cert('c-ignore', { secretName: 's', bogus: 1 }))
  assert.is(ignore.status, 201)
  assert.is(ignore.headers.get('warning'), null)
})

test('schema defaults fill absent fields (nested objects too); null in a non-nullable field is dropped', async () => {
  const res = await http(e, 'POST', P, cert('c-default', { secretName: 's', usages: null, note: null }))
  assert.is(res.status, 201, JSON.stringify(res.body))
  assert.is(res.body.spec.replicas, 1)
  assert.equal(res.body.spec.issuer, { kind: 'Issuer' })
  assert.not.ok('usages' in res.body.spec, 'null dropped')
  assert.is(res.body.spec.note, null, 'nullable keeps null')
})

test('int-or-string, set duplicates, CEL rules with message, messageExpression and oldSelf', async () => {
  assert.is((await http(e, 'POST', P, cert('c-ios', { secretName: 's', port: 'https' }))).status, 201)
  const dup = await http(e, 'POST', P, cert('c-dup', { secretName: 's', usages: ['a', 'a'] }))
  assert.is(dup.body.details.causes[0].message, 'Duplicate value: "a"')
  assert.is(dup.body.details.causes[0].field, 'spec.usages[1]')
  const many = await http(e, 'POST', P, cert('c-many', { secretName: 's', replicas: 11 }))
  assert.is(many.body.message, 'Certificate.certs.example.com "c-many" is invalid: spec: Invalid value: "object": at most 10 replicas')
  const ip = await http(e, 'POST', P, cert('c-ip', { secretName: 's', dns: '10.0.0.1' }))
  assert.is(ip.body.details.causes[0].message, 'Invalid value: "string": not an IP: 10.0.0.1')
  const c = (await http(e, 'POST', P, cert('c-immutable', { secretName: 's' }))).body
  const upd = await http(e, 'PUT', `${P}/c-immutable`, { ...c, spec: { ...c.spec, secretName: 'other' } })
  assert.is(upd.status, 422)
  assert.match(upd.body.message, 'secretName is immutable')
  assert.is((await http(e, 'PUT', `${P}/c-immutable`, { ...c, spec: { ...c.spec, replicas: 3 } })).status, 200)
})

test('a rule calling a function the server lacks is an explicit 500 naming the rule, never a pass', async () => {
  const res = await http(e, 'POST', P, cert('c-future', { secretName: 's', future: 'x' }))
  assert.is(res.status, 500)
  assert.match(res.body.message, 'cannot evaluate the x-kubernetes-validations rule "self.someFutureFunction() == \'x\'"')
})

test('a status write is validated: a condition with status true and no lastTransitionTime is 422', async () => {
  const c = (await http(e, 'POST', P, cert('c-status', { secretName: 's' }))).body
  const bad = await http(e, 'PUT', `${P}/c-status/status`, {
    ...c,
    status: { conditions: [{ type: 'Ready', status: true, reason: 'Done', message: '' }] },
  })
  assert.is(bad.status, 422)
  const fields = bad.body.details.causes.map((x: any) => x.field)
  assert.ok(fields.includes('status.conditions[0].status'), fields.join())
  assert.ok(fields.includes('status.conditions[0].lastTransitionTime'), fields.join())
  const good = await http(e, 'PUT', `${P}/c-status/status`, {
    ...c,
    status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Done', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
  })
  assert.is(good.status, 200, JSON.stringify(good.body))
})

test('a non-structural or schema-less CRD is 422 Invalid, as a real server refuses it', async () => {
  const crd = (schema: unknown) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'things.bad.example.com' },
    spec: {
      group: 'bad.example.com',
      scope: 'Namespaced',
      names: { plural: 'things', kind: 'Thing' },
      versions: [{ name: 'v1', served: true, storage: true, ...(schema ? { schema: { openAPIV3Schema: schema } } : {}) }],
    },
  })
  const untyped = await http(
    e,
    'POST',
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    crd({ type: 'object', properties: { spec: {} } }),
  )
  assert.is(untyped.status, 422)
  assert.is(untyped.body.details.causes[0].field, 'spec.versions[0].schema.openAPIV3Schema.properties[spec].type')
  assert.match(untyped.body.message, 'must not be empty for specified object fields')
  const none = await http(e, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd(undefined))
  assert.is(none.status, 422)
  assert.match(none.body.message, 'schemas are required')
  const junctor = await http(
    e,
    'POST',
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    crd({ type: 'object', properties: { spec: { type: 'object', anyOf: [{ type: 'object' }] } } }),
  )
  assert.is(junctor.status, 422)
  const badRule = await http(
    e,
    'POST',
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    crd({ type: 'object', 'x-kubernetes-validations': [{ rule: 'self.(' }] }),
  )
  assert.is(badRule.status, 422)
  assert.match(badRule.body.message, 'compilation failed')
  assert.is(e.server.server.registry.byKind('bad.example.com/v1', 'Thing'), undefined)
})

test.run()
