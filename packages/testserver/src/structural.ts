// A CustomResourceDefinition's schemas must be structural (apiextensions' structural-schema rules)
// and compile: otherwise the CRD is refused with 422 Invalid, as a real server refuses it, instead
// of being served with validation silently off.
// Checked here: every version has a schema (v1), the root is `type: object`, every specified field
// has a type (unless int-or-string or preserve-unknown-fields), properties and additionalProperties
// are exclusive, `items` is one schema, allOf/anyOf/oneOf/not carry value validations only (no type,
// default, nullable, additionalProperties, x-kubernetes-*), a map list names its keys, and each
// x-kubernetes-validations rule parses (cel.ts).
import { invalid, type StatusCause } from './status.ts'
import { compileSchema } from './schema-validation.ts'
import { compileRules } from './cel.ts'

type Schema = Record<string, any>
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
const NOT_IN_JUNCTOR = [
  'type',
  'default',
  'nullable',
  'additionalProperties',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-int-or-string',
]

export function checkCrdSchemas(crd: any): void {
  const causes: StatusCause[] = []
  const versions: any[] = Array.isArray(crd?.spec?.versions) ? crd.spec.versions : []
  versions.forEach((v, i) => {
    const at = `spec.versions[${i}].schema.openAPIV3Schema`
    const schema = v?.schema?.openAPIV3Schema
    if (!isObj(schema)) {
      causes.push({ reason: 'FieldValueRequired', message: 'Required value: schemas are required', field: at })
      return
    }
    if (schema.type === undefined)
      causes.push({ reason: 'FieldValueRequired', message: 'Required value: must not be empty at the root', field: `${at}.type` })
    else if (schema.type !== 'object')
      causes.push({
        reason: 'FieldValueInvalid',
        message: `Invalid value: "${schema.type}": must be object at the root`,
        field: `${at}.type`,
      })
    walk(schema, at, false, causes)
    if (causes.length) return
    try {
      compileSchema(schema)
    } catch (e) {
      causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: "object": ${(e as Error).message}`, field: at })
    }
    for (const err of compileRules(schema)) causes.push({ reason: 'FieldValueInvalid', message: err.message, field: `${at}${err.at}` })
  })
  if (causes.length) throw invalid('CustomResourceDefinition', 'apiextensions.k8s.io', crd?.metadata?.name ?? '', causes)
}

function walk(s: Schema, at: string, inJunctor: boolean, out: StatusCause[]): void {
  if (inJunctor) {
    for (const k of NOT_IN_JUNCTOR)
      if (s[k] !== undefined)
        out.push({ reason: 'FieldValueForbidden', message: 'Forbidden: must be empty to be structural', field: `${at}.${k}` })
  } else if (s.type === undefined && s['x-kubernetes-int-or-string'] !== true && s['x-kubernetes-preserve-unknown-fields'] !== true) {
    out.push({
      reason: 'FieldValueRequired',
      message: 'Required value: must not be empty for specified object fields',
      field: `${at}.type`,
    })
  }
  if (s.properties !== undefined && s.additionalProperties !== undefined && s.additionalProperties !== false)
    out.push({
      reason: 'FieldValueForbidden',
      message: 'Forbidden: additionalProperties and properties are mutual exclusive',
      field: `${at}.additionalProperties`,
    })
  if (Array.isArray(s.items))
    out.push({ reason: 'FieldValueForbidden', message: 'Forbidden: items must be a schema object and not an array', field: `${at}.items` })
  if (s['x-kubernetes-list-type'] === 'map' && !(Array.isArray(s['x-kubernetes-list-map-keys']) && s['x-kubernetes-list-map-keys'].length))
    out.push({
      reason: 'FieldValueRequired',
      message: 'Required value: must not be empty if x-kubernetes-list-type is map',
      field: `${at}.x-kubernetes-list-map-keys`,
    })
  if (isObj(s.properties))
    for (const [k, sub] of Object.entries(s.properties)) if (isObj(sub)) walk(sub, `${at}.properties[${k}]`, inJunctor, out)
  if (isObj(s.items)) walk(s.items, `${at}.items`, inJunctor, out)
  if (isObj(s.additionalProperties)) walk(s.additionalProperties, `${at}.additionalProperties`, inJunctor, out)
  for (const j of ['allOf', 'anyOf', 'oneOf'] as const)
    if (Array.isArray(s[j])) s[j].forEach((sub: unknown, i: number) => isObj(sub) && walk(sub, `${at}.${j}[${i}]`, true, out))
  if (isObj(s.not)) walk(s.not, `${at}.not`, true, out)
}
