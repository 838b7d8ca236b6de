// CRD schema rules of apiextensions' API validation (ValidateCustomResourceDefinitionOpenAPISchema),
// ported from TestValidateCustomResourceDefinitionValidation (each row or test names its Go case; the
// schemas are rewritten as JSON, the checks are ours). Go's cases validate a bare schema; here each
// sits under `properties[spec]` of a valid root, as a CRD's root must itself be an object.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { loadCel } from '../src/cel.ts'
import { AT, atSpec, causes, shape, type S } from './crd-schema-helpers.ts'

test.before(() => loadCel())

test('TestValidateCustomResourceDefinitionValidation: types, roots and unsupported OpenAPI', () => {
  assert.equal(shape(causes({ type: 'array', items: { type: 'string' } })), ['type FieldValueInvalid']) // "root type having invalid value"
  assert.equal(shape(causes({ properties: { spec: { type: 'object' } } })), ['type FieldValueRequired'])
  assert.equal(shape(causes({ type: 'object', additionalProperties: { type: 'string' } })), ['additionalProperties FieldValueForbidden'])
  assert.equal(shape(causes(atSpec({ type: 'object', properties: { a: {} } }))), ['properties[spec].properties[a].type FieldValueRequired']) // "must be structural, but isn't"
  assert.equal(shape(causes(atSpec({ type: 'array' }))), ['properties[spec].items FieldValueRequired'])
  assert.equal(shape(causes(atSpec({ type: 'null' }))), [
    'properties[spec].type FieldValueForbidden',
    'properties[spec].type FieldValueNotSupported',
  ]) // "null type"
  assert.equal(shape(causes(atSpec({ type: 'foo' }))), ['properties[spec].type FieldValueNotSupported']) // "require valid types, invalid"
  assert.equal(shape(causes(atSpec({ type: 'array', items: { type: 'string' }, uniqueItems: true }))), [
    'properties[spec].uniqueItems FieldValueForbidden',
  ])
  assert.equal(shape(causes(atSpec({ type: 'object', $ref: '#/x' }))), ['properties[spec].$ref FieldValueForbidden'])
  assert.equal(shape(causes(atSpec({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false }))), [
    'properties[spec].additionalProperties FieldValueForbidden',
  ])
  assert.equal(causes(atSpec({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true })), [])
  assert.equal(shape(causes(atSpec({ type: 'object', 'x-kubernetes-preserve-unknown-fields': false }))), [
    'properties[spec].x-kubernetes-preserve-unknown-fields FieldValueInvalid',
  ]) // "x-kubernetes-preserve-unknown-field: false"
  assert.equal(shape(causes({ type: 'object', properties: { metadata: { type: 'object', default: {} } } })), [
    'properties[metadata].default FieldValueForbidden',
  ]) // "embedded metadata defaults" (top level)
})

/** TestValidateCustomResourceDefinitionValidation's list-type and map-type rows, by case name. */
const LIST_MAP_CASES: Array<[string, S, string[]]> = [
  ['invalid type with list type extension set', { type: 'object', 'x-kubernetes-list-type': 'set' }, ['type FieldValueInvalid']],
  [
    'unset type with list type extension set',
    { 'x-kubernetes-list-type': 'set', 'x-kubernetes-preserve-unknown-fields': true },
    ['type FieldValueRequired'],
  ],
  [
    'invalid list type extension',
    { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'invalid' },
    ['x-kubernetes-list-type FieldValueNotSupported'],
  ],
  [
    'invalid list type extension with list map keys extension non-empty',
    { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set', 'x-kubernetes-list-map-keys': ['key'] },
    ['x-kubernetes-list-type FieldValueInvalid'],
  ],
  [
    'unset list type extension with list map keys extension non-empty',
    { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-map-keys': ['key'] },
    ['x-kubernetes-list-type FieldValueRequired'],
  ],
  [
    'empty list map keys extension with list type extension map',
    { type: 'array', 'x-kubernetes-list-type': 'map' },
    ['items FieldValueRequired', 'items FieldValueRequired', 'x-kubernetes-list-map-keys FieldValueRequired'],
  ],
  [
    'non object item with list type extension map',
    { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['key'], items: { type: 'string' } },
    ['items.type FieldValueInvalid'],
  ],
  [
    'items with key missing from properties with list type extension map',
    { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['key'], items: { type: 'object' } },
    ['x-kubernetes-list-map-keys FieldValueInvalid'],
  ],
  [
    'items with non scalar key property type with list type extension map',
    {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['key'],
      items: { type: 'object', required: ['key'], properties: { key: { type: 'object' } } },
    },
    ['items.properties[key].type FieldValueInvalid'],
  ],
  [
    'duplicate map keys with list type extension map',
    {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['key', 'key'],
      items: { type: 'object', required: ['key'], properties: { key: { type: 'string' } } },
    },
    ['x-kubernetes-list-map-keys FieldValueInvalid'],
  ],
  [
    'allowed schema with list type extension map',
    {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['keyA', 'keyB'],
      items: { type: 'object', required: ['keyA', 'keyB'], properties: { keyA: { type: 'string' }, keyB: { type: 'integer' } } },
    },
    [],
  ],
  [
    'allowed list-type atomic with non-atomic items',
    { type: 'array', 'x-kubernetes-list-type': 'atomic', items: { type: 'object', properties: { foo: { type: 'string' } } } },
    [],
  ],
  [
    'allowed list-type set with atomic map items',
    {
      type: 'array',
      'x-kubernetes-list-type': 'set',
      items: { type: 'object', 'x-kubernetes-map-type': 'atomic', properties: { foo: { type: 'string' } } },
    },
    [],
  ],
  [
    'invalid list-type set with non-atomic map items',
    {
      type: 'array',
      'x-kubernetes-list-type': 'set',
      items: { type: 'object', 'x-kubernetes-map-type': 'granular', properties: { foo: { type: 'string' } } },
    },
    ['items.x-kubernetes-map-type FieldValueInvalid'],
  ],
  [
    'invalid list-type set with unspecified map-type for map items',
    { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'object', properties: { foo: { type: 'string' } } } },
    ['items.x-kubernetes-map-type FieldValueInvalid'],
  ],
  [
    'allowed list-type set with unspecified list-type in list items',
    { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'array', items: { type: 'string' } } },
    [],
  ],
  [
    'invalid list-type set with with non-atomic list items',
    {
      type: 'array',
      'x-kubernetes-list-type': 'set',
      items: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
    },
    ['items.x-kubernetes-list-type FieldValueInvalid'],
  ],
  [
    'invalid type with map type extension (granular)',
    { type: 'array', items: { type: 'string' }, 'x-kubernetes-map-type': 'granular' },
    ['type FieldValueInvalid'],
  ],
  [
    'unset type with map type extension (atomic)',
    { 'x-kubernetes-map-type': 'atomic', 'x-kubernetes-preserve-unknown-fields': true },
    ['type FieldValueRequired'],
  ],
  ['invalid map type', { type: 'object', 'x-kubernetes-map-type': 'badMapType' }, ['x-kubernetes-map-type FieldValueNotSupported']],
  [
    'invalid map with non-required key and no default',
    {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['key'],
      items: { type: 'object', properties: { key: { type: 'string' } } },
    },
    ['items.properties[key].default FieldValueRequired'],
  ],
  [
    'allowed map with non-required key and default',
    {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['key'],
      items: { type: 'object', properties: { key: { type: 'string', default: 'stuff' } } },
    },
    [],
  ],
  [
    'invalid map with nullable key',
    {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['key'],
      items: { type: 'object', required: ['key'], properties: { key: { type: 'string', nullable: true } } },
    },
    ['items.properties[key].nullable FieldValueForbidden'],
  ],
  [
    'invalid map with nullable items',
    {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['key'],
      items: { type: 'object', nullable: true, required: ['key'], properties: { key: { type: 'string' } } },
    },
    ['items.nullable FieldValueForbidden'],
  ],
  [
    'invalid set with nullable items',
    { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string', nullable: true } },
    ['items.nullable FieldValueForbidden'],
  ],
  ['allowed set with non-nullable items', { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } }, []],
]

test('TestValidateCustomResourceDefinitionValidation: x-kubernetes-list-type, list-map-keys and map-type', () => {
  for (const [name, schema, want] of LIST_MAP_CASES) {
    const got = shape(causes(atSpec(schema))).map((c) => c.replace(/^properties\[spec\]\.?/, ''))
    assert.equal(got.sort(), [...want].sort(), name)
  }
})

test('TestValidateCustomResourceDefinitionValidation: x-kubernetes-validations placement and form', () => {
  const rules = (r: S[]) => atSpec({ type: 'object', properties: { a: { type: 'string' } }, 'x-kubernetes-validations': r })
  assert.equal(causes(rules([{ rule: 'self.a != "x"' }])), []) // "valid x-kubernetes-validations for object"
  assert.equal(shape(causes(rules([{ rule: '' }]))), ['properties[spec].x-kubernetes-validations[0].rule FieldValueRequired']) // "rule is empty or not specified"
  assert.equal(shape(causes(rules([{ rule: 'true &&\ntrue' }]))), [
    'properties[spec].x-kubernetes-validations[0].message FieldValueRequired',
  ]) // "multiline rule with message"
  assert.equal(causes(rules([{ rule: 'true &&\ntrue', message: 'm' }])), [])
  assert.equal(shape(causes(rules([{ rule: 'true', message: ' ' }]))), [
    'properties[spec].x-kubernetes-validations[0].message FieldValueInvalid',
  ]) // "invalid and required messages"
  assert.equal(shape(causes(rules([{ rule: 'true', reason: 'Nope' }]))), [
    'properties[spec].x-kubernetes-validations[0].reason FieldValueNotSupported',
  ])
  // "forbid transition rule on element of list of type atomic" / "allow transition rule on element of list of type map"
  const listOf = (lt: S, rule = 'self == oldSelf') =>
    atSpec({
      type: 'object',
      properties: {
        l: {
          type: 'array',
          ...lt,
          items: { type: 'object', required: ['k'], properties: { k: { type: 'string' } }, 'x-kubernetes-validations': [{ rule }] },
        },
      },
    })
  assert.equal(causes(listOf({ 'x-kubernetes-list-type': 'atomic' })), [
    `properties[spec].properties[l].items.x-kubernetes-validations[0].rule FieldValueInvalid: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within ${AT}.properties[spec].properties[l]`,
  ])
  assert.equal(shape(causes(listOf({})))[0], 'properties[spec].properties[l].items.x-kubernetes-validations[0].rule FieldValueInvalid') // "... list defaulting to type atomic"
  assert.equal(causes(listOf({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['k'] })), [])
  assert.equal(causes(listOf({}, 'self.k != ""')), [])
  // "forbid setting optionalOldSelf to true if oldSelf is not used"
  assert.equal(shape(causes(rules([{ rule: 'true', optionalOldSelf: true }]))), [
    'properties[spec].x-kubernetes-validations[0].optionalOldSelf FieldValueInvalid',
  ])
})

test('patterns must compile as Go RE2 (validation.go validateValueValidation), also inside junctors', () => {
  assert.equal(causes(atSpec({ type: 'string', pattern: '^((?i)january|february)$' })), [])
  assert.equal(causes(atSpec({ type: 'string', pattern: '(a)\\1' })), [
    'properties[spec].pattern FieldValueInvalid: Invalid value: "(a)\\\\1": must be a valid regular expression, but isn\'t: error parsing regexp: invalid escape sequence: `\\1`',
  ])
  assert.equal(shape(causes(atSpec({ type: 'string', allOf: [{ pattern: '(?=x)' }] }))), [
    'properties[spec].allOf[0].pattern FieldValueInvalid',
  ])
})

test.run()
