// Validation of custom resources against their CRD's structural schema (OpenAPI v3 with the
// Kubernetes extensions), with ajv, and the translation of its errors into the causes a real
// kube-apiserver answers (field paths like `spec.listeners[1].port`, `Required value`,
// `Unsupported value`, `Invalid value: 800080: spec... in body should be less than or equal to 65535`).
// Why ajv: the most used JSON-Schema validator, compiled validators (fast on the hot write path),
// MIT; the OpenAPI subset a CRD may use maps onto JSON Schema draft-07 with a few rewrites below.
// Invariants:
// - The schema is converted once per CRD version (the caller caches the compiled validator).
// - Kubernetes extensions are rewritten, not ignored: int-or-string is integer|string, nullable adds
//   null, OpenAPI's boolean exclusiveMinimum/Maximum become draft-07 numbers; `x-kubernetes-list-type`
//   set/map uniqueness is checked by listErrors (ajv cannot name the duplicate key the way Kubernetes does).
// - Only the formats Kubernetes validates are checked; unknown formats pass, as on a real server.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import type { StatusCause } from './status.ts'
import { re2Engine } from './re2.ts'

type Schema = Record<string, any>
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)

const DROP = new Set(['description', 'default', 'example', 'externalDocs', 'title', 'nullable', 'x-kubernetes-validations'])

/** `anyOf: [{type: integer}, {type: string}]` exactly: the int-or-string pattern of structural schemas. */
export function isIntOrStringAnyOf(a: unknown): boolean {
  const only = (x: unknown, t: string) => isObj(x) && Object.keys(x).length === 1 && x.type === t
  return Array.isArray(a) && a.length === 2 && only(a[0], 'integer') && only(a[1], 'string')
}

/** The JSON Schema ajv compiles for a CRD's openAPIV3Schema. */
export function toJsonSchema(s: Schema, root = true): Schema {
  const out: Schema = {}
  for (const [k, v] of Object.entries(s)) {
    if (DROP.has(k) || k.startsWith('x-kubernetes-')) continue
    if (k === 'properties' && isObj(v)) {
      out.properties = {}
      for (const [name, sub] of Object.entries(v)) {
        // ObjectMeta is validated by the server itself (name, labels, sizes), not by the CRD's schema
        out.properties[name] = root && name === 'metadata' ? { type: 'object' } : isObj(sub) ? toJsonSchema(sub, false) : sub
      }
    } else if ((k === 'items' || k === 'additionalProperties' || k === 'not') && isObj(v)) out[k] = toJsonSchema(v, false)
    else if ((k === 'allOf' || k === 'anyOf' || k === 'oneOf') && Array.isArray(v))
      out[k] = v.map((x) => (isObj(x) ? toJsonSchema(x, false) : x))
    else out[k] = v
  }
  if (s['x-kubernetes-int-or-string'] === true) {
    // integer or string; the anyOf [integer, string] that generators add beside the extension (and
    // that structural.ts allows as a special case) says the same: dropped, so that a wrong type is
    // one cause, not two. Any other anyOf restricts the value further and stays.
    out.type = ['integer', 'string']
    if (isIntOrStringAnyOf(s.anyOf)) delete out.anyOf
    if (Array.isArray(s.allOf) && isIntOrStringAnyOf(s.allOf[0]?.anyOf)) out.allOf = [{}, ...out.allOf.slice(1)]
  }
  if (s.exclusiveMinimum === true && typeof s.minimum === 'number') {
    out.exclusiveMinimum = s.minimum
    delete out.minimum
  } else if (typeof s.exclusiveMinimum === 'boolean') delete out.exclusiveMinimum
  if (s.exclusiveMaximum === true && typeof s.maximum === 'number') {
    out.exclusiveMaximum = s.maximum
    delete out.maximum
  } else if (typeof s.exclusiveMaximum === 'boolean') delete out.exclusiveMaximum
  if (s.nullable === true && out.type !== undefined) {
    out.type = [out.type, 'null'].flat()
    if (Array.isArray(out.enum)) out.enum = [...out.enum, null]
  }
  return out
}

const RFC1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
let ajvInstance: Ajv | undefined
function ajv(): Ajv {
  if (ajvInstance) return ajvInstance
  // patterns are Go RE2 and run on an RE2 engine (re2.ts)
  const a = new Ajv({ strict: false, allErrors: true, logger: false, validateSchema: false, code: { regExp: re2Engine } })
  const any = () => true
  const formats: Record<string, (s: string) => boolean> = {
    // the formats Kubernetes validates (k8s.io/kube-openapi/pkg/validation/strfmt); others pass
    hostname: (s) => s.length <= 253 && RFC1123.test(s),
    ipv4: (s) => /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/.test(s),
    ipv6: (s) => /^[0-9a-fA-F:.]+$/.test(s) && s.includes(':'),
    cidr: (s) => /^[0-9a-fA-F:.]+\/\d{1,3}$/.test(s),
    mac: (s) => /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/.test(s),
    uuid: (s) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(s),
    byte: (s) => /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0,
    date: (s) => /^\d{4}-\d{2}-\d{2}$/.test(s),
    'date-time': (s) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}/.test(s),
    datetime: (s) => !Number.isNaN(Date.parse(s)),
    duration: (s) => /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d|w))+$/.test(s),
    email: (s) => /^[^@\s]+@[^@\s]+$/.test(s),
    uri: (s) => {
      try {
        new URL(s)
        return true
      } catch {
        return false
      }
    },
  }
  for (const [name, fn] of Object.entries(formats)) a.addFormat(name, { type: 'string', validate: fn })
  for (const name of ['int32', 'int64', 'float', 'double', 'password', 'url', 'quantity']) a.addFormat(name, { validate: any })
  ajvInstance = a
  return a
}

const compiled = new WeakMap<object, ValidateFunction>()
/**
 * A CRD version's compiled validator, compiled once per schema object: the CRD's creation compiles
 * it (a schema ajv cannot compile refuses the CRD) and the kinds it registers share that object, so
 * their writes reuse it. ajv forgets the schema at once (its cache would keep every CRD a test
 * process ever saw); the function stays valid.
 */
export function compileSchema(openAPIV3Schema: Schema): ValidateFunction {
  let v = compiled.get(openAPIV3Schema)
  if (!v) {
    const js = toJsonSchema(openAPIV3Schema)
    v = ajv().compile(js)
    ajv().removeSchema(js)
    compiled.set(openAPIV3Schema, v)
  }
  return v
}

/** "/spec/listeners/0/port" → "spec.listeners[0].port" */
export function fieldPathOf(pointer: string): string {
  let out = ''
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (/^\d+$/.test(seg)) out += `[${seg}]`
    else out += out === '' ? seg : /^[A-Za-z0-9_-]+$/.test(seg) ? `.${seg}` : `[${seg}]`
  }
  return out
}

/** How Kubernetes prints a value in `Invalid value: ...` */
export function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (v === null) return 'null'
  return Array.isArray(v) ? '"array"' : '"object"'
}
const jsonType = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v)

function valueAt(obj: any, pointer: string): unknown {
  let v = obj
  for (const raw of pointer.split('/').slice(1)) v = v?.[raw.replace(/~1/g, '/').replace(/~0/g, '~')]
  return v
}

/** ajv's errors as Kubernetes causes (deduplicated; anyOf/oneOf branch noise is folded into one cause). */
export function causesOf(errors: ErrorObject[], obj: unknown): StatusCause[] {
  const out: StatusCause[] = []
  const seen = new Set<string>()
  const inBranch = new Set(errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.schemaPath))
  for (const e of errors) {
    // errors of the alternatives of a failed anyOf/oneOf: the anyOf/oneOf error itself says it
    if ([...inBranch].some((p) => e.schemaPath !== p && e.schemaPath.startsWith(p + '/'))) continue
    const field = fieldPathOf(e.instancePath)
    const v = valueAt(obj, e.instancePath)
    const p = e.params as Record<string, any>
    let c: StatusCause
    switch (e.keyword) {
      case 'required': {
        const f = field ? `${field}.${p.missingProperty}` : String(p.missingProperty)
        c = { reason: 'FieldValueRequired', message: 'Required value', field: f }
        break
      }
      case 'type':
        c = {
          reason: 'FieldValueTypeInvalid',
          message: `Invalid value: "${jsonType(v)}": ${field} in body must be of type ${[p.type].flat().join(',')}: "${jsonType(v)}"`,
          field,
        }
        break
      case 'enum':
        c = {
          reason: 'FieldValueNotSupported',
          message: `Unsupported value: ${goValue(v)}: supported values: ${(p.allowedValues as unknown[]).map((x) => JSON.stringify(x)).join(', ')}`,
          field,
        }
        break
      case 'pattern':
        c = { reason: 'FieldValueInvalid', message: `Invalid value: ${goValue(v)}: ${field} in body should match '${p.pattern}'`, field }
        break
      case 'maxLength':
        c = { reason: 'FieldValueTooLong', message: `Too long: may not be more than ${p.limit} bytes`, field }
        break
      case 'minLength':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${goValue(v)}: ${field} in body should be at least ${p.limit} chars long`,
          field,
        }
        break
      case 'maxItems':
        c = {
          reason: 'FieldValueTooMany',
          message: `Too many: ${Array.isArray(v) ? v.length : '?'}: must have at most ${p.limit} items`,
          field,
        }
        break
      case 'minItems':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${Array.isArray(v) ? v.length : 0}: ${field} in body should have at least ${p.limit} items`,
          field,
        }
        break
      case 'maximum':
      case 'exclusiveMaximum':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${goValue(v)}: ${field} in body should be less than ${e.keyword === 'maximum' ? 'or equal to ' : ''}${p.limit}`,
          field,
        }
        break
      case 'minimum':
      case 'exclusiveMinimum':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${goValue(v)}: ${field} in body should be greater than ${e.keyword === 'minimum' ? 'or equal to ' : ''}${p.limit}`,
          field,
        }
        break
      case 'maxProperties':
        c = {
          reason: 'FieldValueTooMany',
          message: `Too many: ${isObj(v) ? Object.keys(v).length : '?'}: must have at most ${p.limit} items`,
          field,
        }
        break
      case 'minProperties':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${isObj(v) ? Object.keys(v).length : 0}: ${field} in body should have at least ${p.limit} properties`,
          field,
        }
        break
      case 'format':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${goValue(v)}: ${field} in body must be of type ${p.format}: ${goValue(v)}`,
          field,
        }
        break
      case 'oneOf':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${goValue(v)}: ${field} in body must validate one and only one schema (oneOf)`,
          field,
        }
        break
      case 'anyOf':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${goValue(v)}: ${field} in body must validate at least one schema (anyOf)`,
          field,
        }
        break
      case 'not':
        c = {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${goValue(v)}: ${field} in body must not validate the schema (not)`,
          field,
        }
        break
      default:
        c = { reason: 'FieldValueInvalid', message: `Invalid value: ${goValue(v)}: ${field} in body ${e.message ?? 'is invalid'}`, field }
    }
    const key = `${c.field}|${c.message}`
    if (!seen.has(key)) {
      seen.add(key)
      out.push(c)
    }
  }
  return out
}

/** `x-kubernetes-list-type: set|map`: duplicates are `Duplicate value` at the later item, as Kubernetes reports them. */
export function listErrors(v: any, s: Schema | undefined, at: string, out: StatusCause[]): void {
  if (s === undefined || v === null || v === undefined) return
  if (Array.isArray(v)) {
    const lt = s['x-kubernetes-list-type']
    if (lt === 'set' || lt === 'map') {
      const keys: string[] = Array.isArray(s['x-kubernetes-list-map-keys']) ? s['x-kubernetes-list-map-keys'] : []
      const seen = new Set<string>()
      v.forEach((item, i) => {
        const id = lt === 'set' ? JSON.stringify(item) : JSON.stringify(keys.map((k) => item?.[k]))
        if (seen.has(id)) {
          const shown =
            lt === 'set' ? goValue(item) : `map[string]interface {}{${keys.map((k) => `"${k}":${JSON.stringify(item?.[k])}`).join(', ')}}`
          out.push({ reason: 'FieldValueDuplicate', message: `Duplicate value: ${shown}`, field: `${at}[${i}]` })
        }
        seen.add(id)
      })
    }
    if (isObj(s.items)) v.forEach((item, i) => listErrors(item, s.items, `${at}[${i}]`, out))
    return
  }
  if (!isObj(v)) return
  const props = isObj(s.properties) ? s.properties : undefined
  const add = isObj(s.additionalProperties) ? s.additionalProperties : undefined
  for (const [k, val] of Object.entries(v)) {
    const sub = props?.[k] ?? add
    if (sub) listErrors(val, sub, at === '' ? k : `${at}.${k}`, out)
  }
}
