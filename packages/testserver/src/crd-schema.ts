// A CustomResourceDefinition's schemas are checked as apiextensions' API validation checks them
// (pkg/apis/apiextensions/validation: ValidateCustomResourceDefinitionOpenAPISchema and its
// specStandardValidator), then must be structural (structural.ts), compile (ajv, re2.ts) and have
// rules that parse (cel.ts); otherwise the CRD is refused with 422 Invalid naming each field.
// Invariants:
// - OpenAPI features Kubernetes does not support are refused by name ($ref, id, definitions,
//   dependencies, patternProperties, additionalItems, uniqueItems, `type: null`, items as an array);
//   `properties` and `additionalProperties` are exclusive (`additionalProperties: true` aside).
// - Defaults are refused in top-level apiVersion/kind/metadata and under additionalProperties in
//   ObjectMeta; `x-kubernetes-embedded-resource` is refused inside resource meta.
// - List and map types: `x-kubernetes-list-type` (atomic|set|map) only on arrays, `set` items atomic,
//   `map` lists name existing scalar keys, once each, that are required or defaulted and not nullable;
//   `x-kubernetes-map-type` (atomic|granular) only on objects.
// - `x-kubernetes-validations`: a rule, a one-line message (a multi-line rule needs one), a known
//   reason; `oldSelf` only where old and new values correlate (not under atomic or set lists).
// - Rules are compiled only for schemas without other errors, as kube-apiserver skips CEL then.
import { forbiddenCause as forbidden, invalid, invalidCause, requiredCause as required, type StatusCause } from './status.ts'
import { compileSchema } from './schema-validation.ts'
import { compileRules } from './cel.ts'
import { structuralCauses } from './structural.ts'

type Schema = Record<string, any>
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
const child = (at: string, name: string) => `${at}.${name}`
const key = (at: string, k: string | number) => `${at}[${k}]`
const q = (v: unknown) => JSON.stringify(v ?? '')
const goStrings = (a: unknown) => `[]string{${(Array.isArray(a) ? a : []).map((x) => JSON.stringify(x)).join(', ')}}`

const notSupported = (field: string, value: unknown, allowed: string[]): StatusCause => ({
  reason: 'FieldValueNotSupported',
  message: `Unsupported value: ${q(value)}: supported values: ${allowed.map((a) => `"${a}"`).join(', ')}`,
  field,
})

const TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string']
const META_FIELDS = new Set(['metadata', 'kind', 'apiVersion'])
const REASONS = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired']

interface Ctx {
  root: boolean
  insideMeta: boolean
  /** Why defaults are refused here, if they are. */
  noDefaults?: string
  /** The highest path under which old and new values do not correlate (oldSelf refused). */
  uncorrelatable?: string
}

/** Refuses (422) a CRD whose schemas Kubernetes would refuse. */
export function checkCrdSchemas(crd: any): void {
  const causes: StatusCause[] = []
  const versions: any[] = Array.isArray(crd?.spec?.versions) ? crd.spec.versions : []
  versions.forEach((v, i) => {
    const at = `spec.versions[${i}].schema.openAPIV3Schema`
    const schema = v?.schema?.openAPIV3Schema
    if (!isObj(schema)) {
      causes.push(required(at, 'schemas are required'))
      return
    }
    const mine: StatusCause[] = []
    openApiCauses(schema, at, { root: true, insideMeta: false }, mine)
    mine.push(...structuralCauses(schema, at))
    if (mine.length === 0) {
      try {
        compileSchema(schema)
      } catch (e) {
        mine.push(invalidCause(at, '"object"', (e as Error).message))
      }
      for (const err of compileRules(schema)) mine.push({ reason: 'FieldValueInvalid', message: err.message, field: `${at}${err.at}` })
    }
    causes.push(...mine)
  })
  if (causes.length) throw invalid('CustomResourceDefinition', 'apiextensions.k8s.io', crd?.metadata?.name ?? '', causes)
}

function standard(s: Schema, at: string, ctx: Ctx, out: StatusCause[]): void {
  if (typeof s.type === 'string' && s.type !== '' && !TYPES.includes(s.type)) out.push(notSupported(child(at, 'type'), s.type, TYPES))
  if (s.default !== undefined && ctx.noDefaults !== undefined)
    out.push(forbidden(child(at, 'default'), `must not be set ${ctx.noDefaults}`))
  const unsupported: Array<[string, string]> = [
    ['id', 'id is not supported'],
    ['additionalItems', 'additionalItems is not supported'],
    ['patternProperties', 'patternProperties is not supported'],
    ['definitions', 'definitions is not supported'],
    ['dependencies', 'dependencies is not supported'],
    ['$ref', '$ref is not supported'],
  ]
  for (const [k, detail] of unsupported) if (s[k] !== undefined && s[k] !== '') out.push(forbidden(child(at, k), detail))
  if (s.type === 'null') out.push(forbidden(child(at, 'type'), 'type cannot be set to null, use nullable as an alternative'))
  if (Array.isArray(s.items)) out.push(forbidden(child(at, 'items'), 'items must be a schema object and not an array'))
  if (ctx.insideMeta && s['x-kubernetes-embedded-resource'] === true)
    out.push(forbidden(child(at, 'x-kubernetes-embedded-resource'), 'must not be used inside of resource meta'))
  if (s.uniqueItems === true)
    out.push(forbidden(child(at, 'uniqueItems'), 'uniqueItems cannot be set to true since the runtime complexity becomes quadratic'))
}

function openApiCauses(s: Schema, at: string, ctx: Ctx, out: StatusCause[]): void {
  standard(s, at, ctx, out)
  const props = isObj(s.properties) ? s.properties : {}
  const sub: Ctx = { ...ctx, root: false }
  if (s.additionalProperties !== undefined) {
    if (Object.keys(props).length > 0 && s.additionalProperties !== true)
      out.push(forbidden(child(at, 'additionalProperties'), 'additionalProperties and properties are mutual exclusive'))
    if (isObj(s.additionalProperties)) {
      const c = ctx.insideMeta ? { ...sub, noDefaults: 'inside additionalProperties applying to object metadata' } : sub
      openApiCauses(s.additionalProperties, child(at, 'additionalProperties'), c, out)
    }
  }
  const mapType = s['x-kubernetes-map-type']
  for (const [name, p] of Object.entries(props)) {
    if (!isObj(p)) continue
    let c: Ctx = sub
    if (mapType !== undefined && mapType !== 'granular' && mapType !== 'atomic') c = { ...c, uncorrelatable: c.uncorrelatable ?? at }
    if ((ctx.root || s['x-kubernetes-embedded-resource'] === true) && META_FIELDS.has(name)) {
      c = { ...c, insideMeta: true }
      if (ctx.root) c = { ...c, noDefaults: `in top-level ${name}` }
    }
    openApiCauses(p, key(child(at, 'properties'), name), c, out)
  }
  if (isObj(s.not)) openApiCauses(s.not, child(at, 'not'), sub, out)
  for (const j of ['allOf', 'oneOf', 'anyOf'])
    if (Array.isArray(s[j])) s[j].forEach((x: unknown, i: number) => isObj(x) && openApiCauses(x, key(child(at, j), i), sub, out))
  if (isObj(s.items)) {
    const c = s['x-kubernetes-list-type'] !== 'map' ? { ...sub, uncorrelatable: sub.uncorrelatable ?? at } : sub
    openApiCauses(s.items, child(at, 'items'), c, out)
  }
  if (s['x-kubernetes-preserve-unknown-fields'] === false)
    out.push(invalidCause(child(at, 'x-kubernetes-preserve-unknown-fields'), 'false', 'must be true or undefined'))
  mapAndListTypes(s, at, out)
  validationRules(s, at, ctx, out)
}

function mapAndListTypes(s: Schema, at: string, out: StatusCause[]): void {
  const mapType = s['x-kubernetes-map-type']
  const listType = s['x-kubernetes-list-type']
  const type = typeof s.type === 'string' ? s.type : ''
  const items = isObj(s.items) ? s.items : undefined
  if (mapType !== undefined && type !== 'object') {
    if (type === '') out.push(required(child(at, 'type'), 'must be object if x-kubernetes-map-type is specified'))
    else out.push(invalidCause(child(at, 'type'), q(type), 'must be object if x-kubernetes-map-type is specified'))
  }
  if (mapType !== undefined && mapType !== 'atomic' && mapType !== 'granular')
    out.push(notSupported(child(at, 'x-kubernetes-map-type'), mapType, ['atomic', 'granular']))
  if (listType !== undefined && type !== 'array') {
    if (type === '') out.push(required(child(at, 'type'), 'must be array if x-kubernetes-list-type is specified'))
    else out.push(invalidCause(child(at, 'type'), q(type), 'must be array if x-kubernetes-list-type is specified'))
  } else if (listType === 'set' && items) {
    const atItems = child(at, 'items')
    const setDetail = 'must be atomic as item of a list with x-kubernetes-list-type=set'
    if (items.type === 'array' && items['x-kubernetes-list-type'] !== undefined && items['x-kubernetes-list-type'] !== 'atomic')
      out.push(invalidCause(child(atItems, 'x-kubernetes-list-type'), q(items['x-kubernetes-list-type']), setDetail))
    if (items.type === 'object' && items['x-kubernetes-map-type'] !== 'atomic')
      out.push(
        invalidCause(
          child(atItems, 'x-kubernetes-map-type'),
          items['x-kubernetes-list-type'] ? q(items['x-kubernetes-list-type']) : 'null',
          setDetail,
        ),
      )
  }
  if (listType !== undefined && !['atomic', 'set', 'map'].includes(listType))
    out.push(notSupported(child(at, 'x-kubernetes-list-type'), listType, ['atomic', 'set', 'map']))
  const keys: unknown[] = Array.isArray(s['x-kubernetes-list-map-keys']) ? s['x-kubernetes-list-map-keys'] : []
  if (keys.length > 0) {
    if (listType === undefined)
      out.push(required(child(at, 'x-kubernetes-list-type'), 'must be map if x-kubernetes-list-map-keys is non-empty'))
    else if (listType !== 'map')
      out.push(invalidCause(child(at, 'x-kubernetes-list-type'), q(listType), 'must be map if x-kubernetes-list-map-keys is non-empty'))
  }
  if (listType === 'map') {
    if (keys.length === 0) out.push(required(child(at, 'x-kubernetes-list-map-keys'), 'must not be empty if x-kubernetes-list-type is map'))
    if (s.items === undefined) out.push(required(child(at, 'items'), 'must have a schema if x-kubernetes-list-type is map'))
    else if (!items)
      out.push(invalidCause(child(at, 'items'), '"array"', 'must only have a single schema if x-kubernetes-list-type is map'))
    else if (items.type !== 'object')
      out.push(
        invalidCause(child(child(at, 'items'), 'type'), q(items.type), "must be object if parent array's x-kubernetes-list-type is map"),
      )
    else {
      const seen = new Set<unknown>()
      for (const k of keys) {
        const p = isObj(items.properties) ? items.properties[String(k)] : undefined
        if (!isObj(p))
          out.push(invalidCause(child(at, 'x-kubernetes-list-map-keys'), goStrings(keys), 'entries must all be names of item properties'))
        else if (p.type === 'array' || p.type === 'object')
          out.push(
            invalidCause(
              child(key(child(child(at, 'items'), 'properties'), String(k)), 'type'),
              q(items.type),
              "must be a scalar type if parent array's x-kubernetes-list-type is map",
            ),
          )
        if (seen.has(k))
          out.push(invalidCause(child(at, 'x-kubernetes-list-map-keys'), goStrings(keys), 'must not contain duplicate entries'))
        seen.add(k)
      }
    }
  }
  // validateMapListKeysMapSet (on create)
  if ((listType === 'set' || listType === 'map') && items) {
    if (items.nullable === true)
      out.push(forbidden(child(child(at, 'items'), 'nullable'), `cannot be nullable when x-kubernetes-list-type is ${listType}`))
    if (listType === 'map') {
      const req = new Set(Array.isArray(items.required) ? items.required : [])
      for (const k of keys) {
        const p = isObj(items.properties) ? items.properties[String(k)] : undefined
        if (!isObj(p)) continue
        const at2 = key(child(child(at, 'items'), 'properties'), String(k))
        if (!req.has(k) && p.default === undefined)
          out.push(
            required(
              child(at2, 'default'),
              'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property',
            ),
          )
        if (p.nullable === true)
          out.push(forbidden(child(at2, 'nullable'), 'this property is in x-kubernetes-list-map-keys, so it cannot be nullable'))
      }
    }
  }
}

function validationRules(s: Schema, at: string, ctx: Ctx, out: StatusCause[]): void {
  const rules: unknown[] = Array.isArray(s['x-kubernetes-validations']) ? s['x-kubernetes-validations'] : []
  rules.forEach((r, i) => {
    const ra = key(child(at, 'x-kubernetes-validations'), i)
    const rule = isObj(r) && typeof r.rule === 'string' ? r.rule : ''
    const message = isObj(r) && typeof r.message === 'string' ? r.message : ''
    if (rule.trim() === '') out.push(required(child(ra, 'rule'), 'rule is not specified'))
    else if (message.length > 0 && message.trim() === '')
      out.push(invalidCause(child(ra, 'message'), q(message), 'must be non-empty if specified'))
    else if (/[\n\r]/.test(message.trim())) out.push(invalidCause(child(ra, 'message'), q(message), 'must not contain line breaks'))
    else if (/[\n\r]/.test(rule.trim()) && message.trim() === '')
      out.push(required(child(ra, 'message'), 'message must be specified if rule contains line breaks'))
    if (!isObj(r)) return
    if (typeof r.messageExpression === 'string' && r.messageExpression.length > 0 && r.messageExpression.trim() === '')
      out.push(required(child(ra, 'messageExpression'), 'messageExpression must be non-empty if specified'))
    if (r.reason !== undefined && !REASONS.includes(r.reason)) out.push(notSupported(child(ra, 'reason'), r.reason, REASONS))
    if (typeof r.fieldPath === 'string') {
      if (r.fieldPath.length > 0 && r.fieldPath.trim() === '')
        out.push(invalidCause(child(ra, 'fieldPath'), q(r.fieldPath), 'must be non-empty if specified'))
      if (/[\n\r]/.test(r.fieldPath)) out.push(invalidCause(child(ra, 'fieldPath'), q(r.fieldPath), 'must not contain line breaks'))
    }
    const usesOldSelf = /\boldSelf\b/.test(rule)
    if (usesOldSelf && ctx.uncorrelatable !== undefined)
      out.push(
        invalidCause(
          child(ra, 'rule'),
          q(rule),
          `oldSelf cannot be used on the uncorrelatable portion of the schema within ${ctx.uncorrelatable}`,
        ),
      )
    else if (!usesOldSelf && r.optionalOldSelf !== undefined)
      out.push(invalidCause(child(ra, 'optionalOldSelf'), String(r.optionalOldSelf), 'may not be set if oldSelf is not used in rule'))
  })
}
