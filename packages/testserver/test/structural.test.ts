// Structural-schema rules (apiextensions-apiserver pkg/apiserver/schema validation.go, complete.go),
// ported from its validation_test.go and from TestValidateCustomResourceDefinitionValidation (each
// test names the Go test and case it follows; the schemas are rewritten as JSON, the checks are ours).
// Each calls checkCrdSchemas (the CRD admission step) on a CRD built around the schema.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { loadCel } from '../src/cel.ts'
import { AT, atSpec, causes, shape, type S } from './crd-schema-helpers.ts'

test.before(() => loadCel())

const INT_OR_STRING = { anyOf: [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true }

test('int-or-string: the anyOf and allOf patterns are structural (validation.go isIntOrStringAnyOfPattern, isIntOrStringAllOfPattern)', () => {
  assert.equal(causes(atSpec({ type: 'object', properties: { port: INT_OR_STRING } })), [])
  // a pod template's resources: a map of quantities
  const limits = { type: 'object', additionalProperties: { ...INT_OR_STRING, pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))$' } }
  assert.equal(causes(atSpec({ type: 'object', properties: { limits } })), [])
  const allOf = { 'x-kubernetes-int-or-string': true, allOf: [{ anyOf: [{ type: 'integer' }, { type: 'string' }] }, { maxLength: 10 }] }
  assert.equal(causes(atSpec({ type: 'object', properties: { port: allOf } })), [])
  // any other anyOf still may not carry a type (the message the issue reports, now only where it belongs)
  assert.equal(
    causes(
      atSpec({
        type: 'object',
        properties: { port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'boolean' }] } },
      }),
    ),
    [
      'properties[spec].properties[port].anyOf[0].type FieldValueForbidden: Forbidden: must be empty to be structural',
      'properties[spec].properties[port].anyOf[1].type FieldValueForbidden: Forbidden: must be empty to be structural',
    ],
  )
  // the pattern in the second allOf is not the exception
  assert.equal(
    shape(
      causes(
        atSpec({
          type: 'object',
          properties: { p: { 'x-kubernetes-int-or-string': true, allOf: [{}, { anyOf: [{ type: 'integer' }, { type: 'string' }] }] } },
        }),
      ),
    ),
    [
      'properties[spec].properties[p].allOf[1].anyOf[0].type FieldValueForbidden',
      'properties[spec].properties[p].allOf[1].anyOf[1].type FieldValueForbidden',
    ],
  )
  // a description inside the pattern breaks it (Go compares the junctor with DeepEqual)
  assert.equal(
    shape(
      causes(
        atSpec({
          type: 'object',
          properties: { p: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer', description: 'x' }, { type: 'string' }] } },
        }),
      ),
    ),
    [
      'properties[spec].properties[p].anyOf[0].description FieldValueForbidden',
      'properties[spec].properties[p].anyOf[0].type FieldValueForbidden',
      'properties[spec].properties[p].anyOf[1].type FieldValueForbidden',
    ],
  )
})

test('extensions: int-or-string excludes preserve-unknown-fields and embedded-resource (validation.go validateExtensions)', () => {
  assert.equal(
    causes(
      atSpec({ type: 'object', properties: { p: { 'x-kubernetes-int-or-string': true, 'x-kubernetes-preserve-unknown-fields': true } } }),
    ),
    [
      'properties[spec].properties[p].x-kubernetes-preserve-unknown-fields FieldValueInvalid: Invalid value: true: must be false if x-kubernetes-int-or-string is true',
    ],
  )
  assert.ok(
    causes(
      atSpec({ type: 'object', properties: { p: { 'x-kubernetes-int-or-string': true, 'x-kubernetes-embedded-resource': true } } }),
    ).includes(
      'properties[spec].properties[p].x-kubernetes-embedded-resource FieldValueInvalid: Invalid value: true: must be false if x-kubernetes-int-or-string is true',
    ),
  )
})

test('embedded resources (TestValidateCustomResourceDefinitionValidation "x-kubernetes-embedded-resource with pruning and empty properties", "... inside resource meta")', () => {
  assert.equal(causes(atSpec({ type: 'object', properties: { template: { type: 'object', 'x-kubernetes-embedded-resource': true } } })), [
    'properties[spec].properties[template].properties FieldValueRequired: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields',
  ])
  assert.equal(
    causes(
      atSpec({
        type: 'object',
        properties: { template: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true } },
      }),
    ),
    [],
  )
  assert.equal(
    causes(
      atSpec({
        type: 'object',
        properties: { t: { 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true } },
      }),
    ),
    ['properties[spec].properties[t].type FieldValueRequired: Required value: must be object if x-kubernetes-embedded-resource is true'],
  )
  // kind and apiVersion of an embedded resource are strings, its metadata an object
  assert.equal(
    shape(
      causes(
        atSpec({
          type: 'object',
          properties: {
            t: {
              type: 'object',
              'x-kubernetes-embedded-resource': true,
              properties: { kind: { type: 'integer' }, metadata: { type: 'string' } },
            },
          },
        }),
      ),
    ),
    [
      'properties[spec].properties[t].properties[kind].type FieldValueInvalid',
      'properties[spec].properties[t].properties[metadata].type FieldValueInvalid',
    ],
  )
  assert.equal(
    causes({
      type: 'object',
      properties: { metadata: { type: 'object', properties: { name: { type: 'string' } } }, spec: { type: 'object' } },
    }).length,
    0,
  )
  assert.equal(
    shape(
      causes({
        type: 'object',
        properties: { metadata: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true } },
      }),
    ),
    ['properties[metadata] FieldValueForbidden', 'properties[metadata].x-kubernetes-embedded-resource FieldValueForbidden'],
  )
})

test('TestValidateStructuralMetadataInvariants: metadata is an object restricting at most name and generateName', () => {
  for (const type of ['object', 'array', 'number', 'integer', 'boolean', 'string']) {
    const cs = causes({ type: 'object', properties: { metadata: { type } } })
    assert.is(cs.length === 0, type === 'object', `${type}: ${cs}`)
  }
  const objectMetaFields = [
    'name',
    'generateName',
    'namespace',
    'selfLink',
    'uid',
    'resourceVersion',
    'generation',
    'creationTimestamp',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
    'labels',
    'annotations',
    'ownerReferences',
    'finalizers',
    'managedFields',
  ]
  for (const f of objectMetaFields) {
    const cs = causes({ type: 'object', properties: { metadata: { type: 'object', properties: { [f]: { type: 'string' } } } } })
    assert.is(cs.length === 0, f === 'name' || f === 'generateName', `${f}: ${cs}`)
  }
  assert.equal(
    causes({
      type: 'object',
      properties: {
        metadata: { type: 'object', properties: { name: { type: 'string', maxLength: 10 }, generateName: { type: 'string' } } },
      },
    }),
    [],
  )
  // anything else on metadata but its type (the fuzzed fields of Structural)
  for (const extra of [
    { description: 'x' },
    { nullable: true },
    { maxProperties: 3 },
    { 'x-kubernetes-preserve-unknown-fields': true },
    { required: ['name'] },
    { additionalProperties: { type: 'string' } },
  ])
    assert.equal(
      shape(causes({ type: 'object', properties: { metadata: { type: 'object', ...extra } } })),
      ['properties[metadata] FieldValueForbidden'],
      JSON.stringify(extra),
    )
})

test('TestValidateStructuralCompleteness: a junctor at the root speaks only of fields the structure has', () => {
  // as in complete.go, only the root's junctors are checked (a junctor deeper down is not)
  const root = (s: S) => ({ type: 'object', ...s, properties: { spec: { type: 'object' }, ...s.properties } })
  // "disallowed property in valuevalidation, and in structure"
  assert.equal(causes(root({ properties: { foo: { type: 'string' } }, allOf: [{ properties: { notfoo: { minLength: 2 } } }] })), [
    `properties[notfoo] FieldValueRequired: Required value: because it is defined in ${AT}.allOf[0].properties[notfoo]`,
  ])
  // "allowed property in valuevalidation, and in structure"
  assert.equal(causes(root({ properties: { foo: { type: 'string' } }, allOf: [{ properties: { foo: { minLength: 2 } } }] })), [])
  // "allowed items in valuevalidation, and in structure" / "disallowed items in valuevalidation, and not in structure"
  assert.equal(
    causes(
      root({
        properties: { l: { type: 'array', items: { type: 'string' } } },
        allOf: [{ properties: { l: { items: { minLength: 2 } } } }],
      }),
    ),
    [],
  )
  assert.equal(
    shape(causes(root({ properties: { s: { type: 'string' } }, anyOf: [{ properties: { s: { items: { minLength: 2 } } } }] }))),
    ['properties[s].items FieldValueRequired'],
  )
  // nested junctors are followed
  assert.equal(
    shape(causes(root({ properties: { foo: { type: 'string' } }, not: { allOf: [{ properties: { bar: { minLength: 1 } } }] } }))),
    ['properties[bar] FieldValueRequired'],
  )
  // deeper junctors are not checked for completeness (complete.go starts and stays at the root's)
  assert.equal(
    causes(atSpec({ type: 'object', properties: { foo: { type: 'string' } }, allOf: [{ properties: { notfoo: { minLength: 2 } } }] })),
    [],
  )
})

test('junctors carry value validations only (validation.go validateNestedValueValidation)', () => {
  const forbiddenInJunctor: Array<[S, string]> = [
    [{ type: 'string' }, 'type FieldValueForbidden: Forbidden: must be empty to be structural'],
    [{ default: 'x' }, 'default FieldValueForbidden: Forbidden: must be undefined to be structural'],
    [{ title: 'x' }, 'title FieldValueForbidden: Forbidden: must be empty to be structural'],
    [{ description: 'x' }, 'description FieldValueForbidden: Forbidden: must be empty to be structural'],
    [{ nullable: true }, 'nullable FieldValueForbidden: Forbidden: must be false to be structural'],
    [{ additionalProperties: { maxLength: 1 } }, 'additionalProperties FieldValueForbidden: Forbidden: must be undefined to be structural'],
    [
      { 'x-kubernetes-preserve-unknown-fields': true },
      'x-kubernetes-preserve-unknown-fields FieldValueForbidden: Forbidden: must be false to be structural',
    ],
    [{ 'x-kubernetes-int-or-string': true }, 'x-kubernetes-int-or-string FieldValueForbidden: Forbidden: must be false to be structural'],
    [{ 'x-kubernetes-list-type': 'set' }, 'x-kubernetes-list-type FieldValueForbidden: Forbidden: must be undefined to be structural'],
    [
      { 'x-kubernetes-validations': [{ rule: 'true' }] },
      'x-kubernetes-validations FieldValueForbidden: Forbidden: must be empty to be structural',
    ],
  ]
  for (const [j, want] of forbiddenInJunctor)
    for (const junctor of ['allOf', 'anyOf', 'oneOf']) {
      const got = causes(atSpec({ type: 'object', properties: { a: { type: 'string' } }, [junctor]: [j] }))
      assert.ok(got.includes(`properties[spec].${junctor}[0].${want}`), `${junctor} ${JSON.stringify(j)}: ${got}`)
    }
  assert.ok(
    causes(atSpec({ type: 'object', properties: { a: { type: 'string' } }, not: { type: 'string' } })).includes(
      'properties[spec].not.type FieldValueForbidden: Forbidden: must be empty to be structural',
    ),
  )
  // "must not be specified in a nested context"
  assert.ok(
    causes({
      type: 'object',
      properties: { metadata: { type: 'object' } },
      anyOf: [{ properties: { metadata: { required: ['name'] } } }],
    }).includes('anyOf[0].properties[metadata] FieldValueForbidden: Forbidden: must not be specified in a nested context'),
  )
})

test.run()
