// Structural schemas, as apiextensions-apiserver's pkg/apiserver/schema (validation.go, complete.go)
// defines them: the shape a CRD version's openAPIV3Schema must have to be pruned, defaulted and
// served. A CRD that breaks one of these rules is refused (422) by crd-schema.ts.
// Invariants:
// - Every node outside a junctor (allOf/anyOf/oneOf/not) carries the structure: a type (the root,
//   each array's items, each object field), unless it is int-or-string or preserve-unknown-fields;
//   arrays have items; additionalProperties is not at the root (nor beside an embedded resource).
// - Junctors carry value validations only: no type, default, title, description, nullable,
//   additionalProperties, x-kubernetes-* extensions or rules, and no `metadata` property. The one
//   exception: `anyOf: [{type: integer}, {type: string}]` (or the same as the first allOf's anyOf),
//   the int-or-string pattern generators emit beside `x-kubernetes-int-or-string: true`.
// - Completeness: a property or items a junctor speaks of also exists in the structure.
// - `x-kubernetes-embedded-resource` is an object with properties or preserve-unknown-fields; at the
//   root and in embedded resources `kind`/`apiVersion` are strings and `metadata` an object, and at
//   the root metadata may only restrict `name` and `generateName`.
// - A pattern compiles as Go RE2 (re2.ts). Causes come sorted, as ValidateStructural sorts them.
import { forbiddenCause as forbidden, invalidCause, requiredCause as required, type StatusCause } from './status.ts'
import { isIntOrStringAnyOf } from './schema-validation.ts'
import { re2Error } from './re2.ts'

type Schema = Record<string, any>
type Level = 'root' | 'item' | 'field'
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
const child = (at: string, name: string) => (at === '' ? name : `${at}.${name}`)
const key = (at: string, k: string | number) => `${at}[${k}]`

/** The structural-schema violations of a CRD version's openAPIV3Schema at `at` (none: structural). */
export function structuralCauses(s: Schema, at: string): StatusCause[] {
  const out: StatusCause[] = []
  invariants(s, 'root', at, out)
  completeness(s, s, at, at, out)
  const text = (c: StatusCause) => `${c.field}: ${c.message}`
  return out.sort((a, b) => (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0))
}

function invariants(s: Schema, lvl: Level, at: string, out: StatusCause[]): void {
  if (s.type === 'array' && s.items === undefined) out.push(required(child(at, 'items'), 'must be specified'))
  if (isObj(s.items)) invariants(s.items, 'item', child(at, 'items'), out)
  if (isObj(s.properties))
    for (const [k, sub] of Object.entries(s.properties)) if (isObj(sub)) invariants(sub, 'field', key(child(at, 'properties'), k), out)
  if (s.additionalProperties !== undefined) {
    if (lvl === 'root') out.push(forbidden(child(at, 'additionalProperties'), 'must not be used at the root'))
    if (isObj(s.additionalProperties)) invariants(s.additionalProperties, 'field', child(at, 'additionalProperties'), out)
  }
  const intOrString = s['x-kubernetes-int-or-string'] === true
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true
  const embedded = s['x-kubernetes-embedded-resource'] === true
  if (intOrString && preserve)
    out.push(invalidCause(child(at, 'x-kubernetes-preserve-unknown-fields'), 'true', 'must be false if x-kubernetes-int-or-string is true'))
  if (intOrString && embedded)
    out.push(invalidCause(child(at, 'x-kubernetes-embedded-resource'), 'true', 'must be false if x-kubernetes-int-or-string is true'))

  const skipAnyOf = isIntOrStringAnyOf(s.anyOf)
  const skipFirstAllOfAnyOf = Array.isArray(s.allOf) && s.allOf.length > 0 && isIntOrStringAnyOf(s.allOf[0]?.anyOf)
  valueValidation(s, skipAnyOf, skipFirstAllOfAnyOf, lvl, at, out)

  const type = typeof s.type === 'string' ? s.type : ''
  if (embedded && type !== 'object') {
    if (type === '') out.push(required(child(at, 'type'), 'must be object if x-kubernetes-embedded-resource is true'))
    else out.push(invalidCause(child(at, 'type'), JSON.stringify(type), 'must be object if x-kubernetes-embedded-resource is true'))
  } else if (type === '' && !intOrString && !preserve) {
    const what = { root: 'at the root', item: 'for specified array items', field: 'for specified object fields' }[lvl]
    out.push(required(child(at, 'type'), `must not be empty ${what}`))
  }
  if (embedded && s.additionalProperties !== undefined)
    out.push(forbidden(child(at, 'additionalProperties'), 'must not be used if x-kubernetes-embedded-resource is set'))
  if (lvl === 'root' && type !== '' && type !== 'object')
    out.push(invalidCause(child(at, 'type'), JSON.stringify(type), 'must be object at the root'))

  const checkMetadata = lvl === 'root' || embedded
  const props = isObj(s.properties) ? s.properties : {}
  for (const name of ['kind', 'apiVersion'])
    if (checkMetadata && isObj(props[name]) && props[name].type !== 'string')
      out.push(invalidCause(child(key(child(at, 'properties'), name), 'type'), JSON.stringify(props[name].type ?? ''), 'must be string'))
  if (isObj(props.metadata)) metadataInvariants(props.metadata, checkMetadata, lvl, key(child(at, 'properties'), 'metadata'), out)
  if (embedded && !preserve && Object.keys(props).length === 0)
    out.push(
      required(
        child(at, 'properties'),
        'must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields',
      ),
    )
}

/** A value that is not Go's zero value (what a Structural field holds when set). */
const isSet = (v: unknown) => v !== undefined && v !== null && v !== false && v !== '' && !(Array.isArray(v) && v.length === 0)

function metadataInvariants(m: Schema, checkMetadata: boolean, lvl: Level, at: string, out: StatusCause[]): void {
  if (checkMetadata && m.type !== 'object') out.push(invalidCause(child(at, 'type'), JSON.stringify(m.type ?? ''), 'must be object'))
  if (lvl !== 'root') return
  // at the root, metadata may say `type` (checked above), carry a `default` (refused by crd-schema.ts)
  // and restrict name and generateName; nothing else: ObjectMeta is the server's, not the CRD's
  const props = isObj(m.properties) ? Object.keys(m.properties) : []
  const restrictsOthers = props.some((p) => p !== 'name' && p !== 'generateName')
  const others = Object.entries(m).some(([k, v]) => k !== 'type' && k !== 'default' && k !== 'properties' && isSet(v))
  if (restrictsOthers || others)
    out.push(forbidden(at, 'must not specify anything other than name and generateName, but metadata is implicitly specified'))
}

function valueValidation(v: Schema, skipAnyOf: boolean, skipFirstAllOfAnyOf: boolean, lvl: Level, at: string, out: StatusCause[]): void {
  if (!skipAnyOf && Array.isArray(v.anyOf))
    v.anyOf.forEach((x: unknown, i: number) => isObj(x) && nested(x, false, lvl, key(child(at, 'anyOf'), i), out))
  if (Array.isArray(v.allOf))
    v.allOf.forEach((x: unknown, i: number) => isObj(x) && nested(x, skipFirstAllOfAnyOf && i === 0, lvl, key(child(at, 'allOf'), i), out))
  if (Array.isArray(v.oneOf)) v.oneOf.forEach((x: unknown, i: number) => isObj(x) && nested(x, false, lvl, key(child(at, 'oneOf'), i), out))
  if (isObj(v.not)) nested(v.not, false, lvl, child(at, 'not'), out)
  if (typeof v.pattern === 'string' && v.pattern !== '') {
    const err = re2Error(v.pattern)
    if (err)
      out.push(invalidCause(child(at, 'pattern'), JSON.stringify(v.pattern), `must be a valid regular expression, but isn't: ${err}`))
  }
}

/** What a junctor may not carry, with the word Go uses for each. */
const NESTED_FORBIDDEN: Array<[string, (v: unknown) => boolean, string]> = [
  ['type', isSet, 'must be empty to be structural'],
  ['additionalProperties', (v) => v !== undefined, 'must be undefined to be structural'],
  ['default', (v) => v !== undefined, 'must be undefined to be structural'],
  ['title', isSet, 'must be empty to be structural'],
  ['description', isSet, 'must be empty to be structural'],
  ['nullable', (v) => v === true, 'must be false to be structural'],
  ['x-kubernetes-preserve-unknown-fields', (v) => v === true, 'must be false to be structural'],
  ['x-kubernetes-embedded-resource', (v) => v === true, 'must be false to be structural'],
  ['x-kubernetes-int-or-string', (v) => v === true, 'must be false to be structural'],
  ['x-kubernetes-list-map-keys', isSet, 'must be empty to be structural'],
  ['x-kubernetes-list-type', (v) => v !== undefined && v !== null, 'must be undefined to be structural'],
  ['x-kubernetes-map-type', (v) => v !== undefined && v !== null, 'must be undefined to be structural'],
  ['x-kubernetes-validations', isSet, 'must be empty to be structural'],
]

function nested(v: Schema, skipAnyOf: boolean, lvl: Level, at: string, out: StatusCause[]): void {
  valueValidation(v, skipAnyOf, false, lvl, at, out)
  if (isObj(v.items)) nested(v.items, false, lvl, child(at, 'items'), out)
  if (isObj(v.properties))
    for (const [k, sub] of Object.entries(v.properties)) if (isObj(sub)) nested(sub, false, 'field', key(child(at, 'properties'), k), out)
  for (const [k, set, detail] of NESTED_FORBIDDEN) if (set(v[k])) out.push(forbidden(child(at, k), detail))
  if (isObj(v.properties) && v.properties.metadata !== undefined)
    out.push(forbidden(key(child(at, 'properties'), 'metadata'), 'must not be specified in a nested context'))
}

// complete.go: every property or items a junctor validates is also in the structure at that node.
function completeness(v: Schema, s: Schema | undefined, sAt: string, vAt: string, out: StatusCause[]): void {
  if (s === undefined) {
    out.push(required(sAt, `because it is defined in ${vAt}`))
    return
  }
  if (isObj(v.not)) nestedCompleteness(v.not, s, sAt, child(vAt, 'not'), out)
  for (const j of ['allOf', 'anyOf', 'oneOf'])
    if (Array.isArray(v[j])) v[j].forEach((x: unknown, i: number) => isObj(x) && nestedCompleteness(x, s, sAt, key(child(vAt, j), i), out))
}

function nestedCompleteness(v: Schema, s: Schema | undefined, sAt: string, vAt: string, out: StatusCause[]): void {
  if (s === undefined) {
    out.push(required(sAt, `because it is defined in ${vAt}`))
    return
  }
  completeness(v, s, sAt, vAt, out)
  if (isObj(v.items)) nestedCompleteness(v.items, isObj(s.items) ? s.items : undefined, child(sAt, 'items'), child(vAt, 'items'), out)
  if (isObj(v.properties))
    for (const [k, sub] of Object.entries(v.properties)) {
      if (!isObj(sub)) continue
      const sProp = isObj(s.properties) && isObj(s.properties[k]) ? s.properties[k] : undefined
      const sPath = key(child(sAt, 'properties'), k)
      const vPath = key(child(vAt, 'properties'), k)
      if (!sProp) out.push(required(sPath, `because it is defined in ${vPath}`))
      else nestedCompleteness(sub, sProp, sPath, vPath, out)
    }
}
