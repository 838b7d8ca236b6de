// Validation ratcheting (1.30+): after apiextensions-apiserver's test/integration/ratcheting_test.go
// (TestRatchetingFunctionality; each test names its case). A CRD's schema is tightened after objects
// were written; an update that leaves an invalid value unchanged passes, one that changes it (to
// another invalid value) is refused; list items correlate by key in map lists only.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, type Env } from './helpers.ts'
import { loadCel } from '../src/cel.ts'

let e: Env
test.before(async () => {
  e = await env()
  await loadCel()
})
test.after(async () => {
  await e.server.stop()
})

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'
let n = 0
/** A fresh CRD (kind Thing<n>) whose root is `spec`-less: the object's top-level fields follow `props`. */
async function crdWith(
  props: Record<string, any>,
  rules?: any[],
): Promise<{ setProps(p: Record<string, any>, r?: any[]): Promise<void>; path: string; kind: string }> {
  const i = n++
  const plural = `things${i}`
  const kind = `Thing${i}`
  const body = (p: Record<string, any>, r?: any[]) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.ratchet.example.com` },
    spec: {
      group: 'ratchet.example.com',
      scope: 'Namespaced',
      names: { plural, kind },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', properties: p, ...(r ? { 'x-kubernetes-validations': r } : {}) } },
        },
      ],
    },
  })
  assert.is((await http(e, 'POST', CRDS, body(props, rules))).status, 201)
  return {
    path: `/apis/ratchet.example.com/v1/namespaces/default/${plural}`,
    kind,
    async setProps(p, r) {
      const cur = (await http(e, 'GET', `${CRDS}/${plural}.ratchet.example.com`)).body
      const next = body(p, r)
      const res = await http(e, 'PUT', `${CRDS}/${plural}.ratchet.example.com`, { ...next, metadata: cur.metadata })
      assert.is(res.status, 200, JSON.stringify(res.body))
    },
  }
}
async function apply(c: { path: string; kind: string }, fields: Record<string, any>) {
  const obj = { apiVersion: 'ratchet.example.com/v1', kind: c.kind, metadata: { name: 'x', namespace: 'default' }, ...fields }
  return http(e, 'PATCH', `${c.path}/x?fieldManager=t&force=true`, obj, 'application/apply-patch+yaml')
}

test('"Minimum Maximum": an unchanged out-of-range value ratchets; changing it to another invalid one does not', async () => {
  const c = await crdWith({ hasMinimum: { type: 'integer' }, other: { type: 'string' } })
  assert.is((await apply(c, { hasMinimum: 0 })).status, 201)
  await c.setProps({ hasMinimum: { type: 'integer', minimum: 1 }, other: { type: 'string' } })
  assert.is((await apply(c, { hasMinimum: 0, other: 'a' })).status, 200, 'other fields may change')
  const worse = await apply(c, { hasMinimum: -1, other: 'a' })
  assert.is(worse.status, 422)
  assert.match(worse.body.message, 'hasMinimum: Invalid value: -1: hasMinimum in body should be greater than or equal to 1')
  assert.is((await apply(c, { hasMinimum: 1, other: 'a' })).status, 200)
  assert.is((await apply(c, { hasMinimum: 0, other: 'a' })).status, 422, 'once valid, it may not become invalid again')
})

test('"Enum" and "Pattern": unchanged values ratchet, new ones are checked', async () => {
  const c = await crdWith({ e: { type: 'string' }, p: { type: 'string' } })
  assert.is((await apply(c, { e: 'old', p: 'UPPER' })).status, 201)
  await c.setProps({ e: { type: 'string', enum: ['a', 'b'] }, p: { type: 'string', pattern: '^[a-z]+$' } })
  assert.is((await apply(c, { e: 'old', p: 'UPPER' })).status, 200)
  const r = await apply(c, { e: 'other', p: 'UP' })
  assert.is(r.status, 422)
  assert.equal(r.body.details.causes.map((x: any) => x.field).sort(), ['e', 'p'])
})

test('"ArrayItems do not correlate by index": an unchanged atomic list ratchets as a whole; touching it checks every item', async () => {
  const item = (minLength?: number) => ({
    type: 'object',
    properties: { name: { type: 'string' }, key: { type: 'string', ...(minLength ? { minLength } : {}) }, key2: { type: 'string' } },
  })
  const c = await crdWith({ values: { type: 'array', items: item() }, otherField: { type: 'string' } })
  const values = [
    { name: '1', key: 'value' },
    { name: '2', key: 'value' },
  ]
  assert.is((await apply(c, { values })).status, 201)
  await c.setProps({ values: { type: 'array', items: item(6) }, otherField: { type: 'string' } })
  assert.is((await apply(c, { values: [values[0], { name: '2', key: 'bad' }] })).status, 422, 'change value to one that exceeds minLength')
  assert.is((await apply(c, { values, otherField: 'hello world' })).status, 200, 'add new fields without touching the list')
  const touched = await apply(c, { values: [values[0], { ...values[1], key2: 'valid value' }], otherField: 'hello world' })
  assert.is(touched.status, 422, 'an atomic list changed: its items do not correlate, every item is checked')
  assert.equal(touched.body.details.causes.map((x: any) => x.field).sort(), ['values[0].key', 'values[1].key'])
})

test('"Map Type List Reordering Grandfathers Invalid Key": map-list items correlate by key, in any order', async () => {
  const item = (maxLength?: number) => ({
    type: 'object',
    required: ['name'],
    properties: { name: { type: 'string' }, value: { type: 'string', ...(maxLength ? { maxLength } : {}) } },
  })
  const list = (m?: number) => ({ type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: item(m) })
  const c = await crdWith({ entries: list() })
  assert.is(
    (
      await apply(c, {
        entries: [
          { name: 'a', value: 'toolong' },
          { name: 'b', value: 'ok' },
        ],
      })
    ).status,
    201,
  )
  await c.setProps({ entries: list(3) })
  // reordered and another item changed: the unchanged invalid item is still correlated (by key) and ratchets
  const r = await apply(c, {
    entries: [
      { name: 'b', value: 'ok2' },
      { name: 'a', value: 'toolong' },
    ],
  })
  assert.is(r.status, 200, JSON.stringify(r.body))
  assert.is(
    (
      await apply(c, {
        entries: [
          { name: 'b', value: 'ok2' },
          { name: 'a', value: 'toolong2' },
        ],
      })
    ).status,
    422,
  )
})

test('"CEL Add Change Rule": a rule without oldSelf ratchets on unchanged nodes; a transition rule always runs', async () => {
  const c = await crdWith({ field: { type: 'string' }, other: { type: 'string' } })
  assert.is((await apply(c, { field: 'bad', other: 'x' })).status, 201)
  await c.setProps({
    field: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self != "bad"', message: 'no bad' }] },
    other: { type: 'string' },
  })
  assert.is((await apply(c, { field: 'bad', other: 'y' })).status, 200, 'the rule does not run on the unchanged field')
  assert.is((await apply(c, { field: 'bad!', other: 'y' })).status, 200, 'a changed field is checked (and passes)')
  assert.is((await apply(c, { field: 'bad', other: 'y' })).status, 422, 'back to bad: changed, so checked')
  await c.setProps({
    field: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self == oldSelf && self != "bad"', message: 'frozen' }] },
    other: { type: 'string' },
  })
  const t = await apply(c, { field: 'bad', other: 'z' })
  assert.is(t.status, 422, 'CEL_transition_rules_should_not_ratchet')
  assert.match(t.body.message, 'field: Invalid value: "string": frozen')
})

test.run()
