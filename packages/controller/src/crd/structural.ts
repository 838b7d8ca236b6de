// A JSON Schema (TypeBox's) as a structural openAPIV3Schema, the only kind a CRD may have.
// Invariants:
// - Pure: the input is never changed (TypeBox's symbol keys do not survive; nothing else is lost).
// - Rewritten, because each has one structural equivalent: `const` -> a one-value enum; a union of
//   literals of one type -> an enum; a Record (patternProperties "^(.*)$") -> additionalProperties;
//   additionalProperties false beside properties -> dropped (the server prunes unknown fields);
//   numeric exclusiveMinimum/exclusiveMaximum (JSON Schema 2019) -> minimum/maximum with the boolean
//   (OpenAPI 3.0); $id and $schema dropped.
// - Refused with a ConfigError naming the field: a node without a type (unless int-or-string or
//   preserve-unknown-fields), a type the API server does not have (null, Date, Uint8Array, a list of
//   types), an array without one `items` schema, $ref, a keyword JSONSchemaProps does not have, and
//   anyOf/oneOf/allOf/not holding anything but value validations (a union of types).
import { ConfigError } from '../errors.ts'

type Schema = Record<string, unknown>
const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)
const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean'])
const JUNCTORS = ['anyOf', 'oneOf', 'allOf', 'not'] as const
/** Keywords of apiextensions/v1 JSONSchemaProps (besides x-kubernetes-*). */
const KEYWORDS = new Set([
  'description',
  'type',
  'format',
  'title',
  'default',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'multipleOf',
  'enum',
  'maxProperties',
  'minProperties',
  'required',
  'items',
  'allOf',
  'oneOf',
  'anyOf',
  'not',
  'properties',
  'additionalProperties',
  'nullable',
  'example',
  'externalDocs',
])
const NOT_IN_JUNCTOR = ['type', 'default', 'nullable', 'additionalProperties', 'properties', 'items']

/** `schema` made structural, or a ConfigError naming the first field that cannot be (`what` first). */
export function structural(schema: unknown, what: string): Schema {
  return node(schema, what, '', false)
}

function fail(what: string, path: string, why: string): never {
  throw new ConfigError(`${what}${path}: the schema is not structural: ${why}`)
}

function node(input: unknown, what: string, path: string, inJunctor: boolean): Schema {
  if (!isObj(input)) fail(what, path, 'a schema must be an object')
  const s: Schema = {}
  for (const [k, v] of Object.entries(input)) if (k !== '$id' && k !== '$schema') s[k] = v
  if ('const' in s) {
    const c = s.const
    delete s.const
    s.enum = [c]
    s.type ??= typeof c === 'number' ? (Number.isInteger(c) ? 'integer' : 'number') : typeof c
  }
  for (const j of ['anyOf', 'oneOf'] as const) {
    const members = s[j]
    if (Array.isArray(members) && members.length && members.every((m) => isObj(m) && ('const' in m || Array.isArray(m.enum)))) {
      const values = members.flatMap((m) => ('const' in m ? [m.const] : (m.enum as unknown[])))
      const types = new Set(values.map((v) => typeof v))
      if (types.size !== 1) fail(what, path, `${j} of literals of several types: a field has one type`)
      delete s[j]
      s.enum = values
      const t = [...types][0]
      s.type ??= t === 'number' ? (values.every((v) => Number.isInteger(v)) ? 'integer' : 'number') : t
    }
  }
  if (isObj(s.patternProperties)) {
    const keys = Object.keys(s.patternProperties)
    if (keys.length !== 1 || !['^(.*)$', '^.*$', '.*'].includes(keys[0]!) || s.properties !== undefined)
      fail(what, path, 'patternProperties other than one catch-all pattern (a Record of string keys) has no CRD equivalent')
    s.additionalProperties = s.patternProperties[keys[0]!]
    delete s.patternProperties
  }
  if (s.additionalProperties === false && s.properties !== undefined) delete s.additionalProperties
  for (const [ex, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof s[ex] === 'number') {
      s[bound] = s[ex]
      s[ex] = true
    }
  }
  for (const k of Object.keys(s)) {
    if (k === '$ref') fail(what, path, '$ref is not allowed (inline the schema)')
    if (!KEYWORDS.has(k) && !k.startsWith('x-kubernetes-')) fail(what, path, `"${k}" is not a keyword a CRD schema has`)
  }
  for (const j of JUNCTORS) {
    const members = Array.isArray(s[j]) ? (s[j] as unknown[]) : s[j] === undefined ? [] : [s[j]]
    const typed = members.findIndex((m) => isObj(m) && m.type !== undefined)
    if (typed >= 0)
      fail(what, path, `${j} of typed schemas (a union of types cannot be a CRD field; ${j} may hold value validations only, not "type")`)
  }
  const open = s['x-kubernetes-int-or-string'] === true || s['x-kubernetes-preserve-unknown-fields'] === true
  if (inJunctor) {
    const bad = Object.keys(s).find((k) => NOT_IN_JUNCTOR.includes(k) || k.startsWith('x-kubernetes-'))
    if (bad)
      fail(what, path, `anyOf/oneOf/allOf/not may hold value validations only, not "${bad}" (a union of types cannot be a CRD field)`)
  } else if (s.type === undefined) {
    if (!open) fail(what, path, 'no type (give one, or x-kubernetes-preserve-unknown-fields for free-form data)')
  } else if (typeof s.type !== 'string' || !TYPES.has(s.type)) {
    fail(what, path, `type ${JSON.stringify(s.type)} is not one of ${[...TYPES].join(', ')}`)
  }
  if (isObj(s.properties)) {
    if (s.additionalProperties !== undefined) fail(what, path, 'properties and additionalProperties exclude each other')
    const props: Schema = {}
    for (const [k, v] of Object.entries(s.properties)) props[k] = node(v, what, `${path}.${k}`, inJunctor)
    s.properties = props
  }
  if (isObj(s.additionalProperties)) s.additionalProperties = node(s.additionalProperties, what, `${path}[*]`, inJunctor)
  if (s.type === 'array' && !isObj(s.items)) fail(what, path, 'an array needs one `items` schema')
  if (s.items !== undefined) {
    if (!isObj(s.items)) fail(what, path, '`items` must be one schema')
    s.items = node(s.items, what, `${path}[*]`, inJunctor)
  }
  for (const j of JUNCTORS) {
    const v = s[j]
    if (v === undefined) continue
    s[j] = Array.isArray(v) ? v.map((m, i) => node(m, what, `${path}(${j}[${i}])`, true)) : node(v, what, `${path}(${j})`, true)
  }
  return s
}
