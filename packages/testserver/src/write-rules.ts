// What every write shares: its options and its answer, the admission request it makes, and the rules
// a written object is held to, the way a real apiserver's generic registry checks a
// decoded body: its kind, apiVersion, namespace and name agree with the request; its name is a
// lowercase RFC 1123 subdomain; its metadata is valid; the defaults every decoded body gets.
// Invariants:
// - generation bumps only when something outside metadata and status changes (specChanged);
// - a write equal to the stored object but for managedFields timestamps is a no-op
//   (sameIgnoringTimes): it keeps the version and emits no event.
import type { ResourceType } from './resources.ts'
import type { AdmissionRequest, FieldValidation, Operation } from './admission.ts'
import { apiVersionOf } from './resources.ts'
import { badRequest, invalid } from './status.ts'
import { deepEqual } from './patch.ts'
import { metaCauses } from './meta-validation.ts'
import { NS_TYPE_KEY } from './namespaces.ts'

export interface WriteOpts {
  manager: string
  subresource?: string
  dryRun?: boolean
  /** `fieldValidation` of the request (default Warn, as on a real server). */
  fieldValidation?: FieldValidation
  /**
   * false: skip the admission pipeline (the garbage collector's metadata-only patches, which stay
   * synchronous so cascades finish within the request that causes them).
   */
  admit?: boolean
}
/** What a write answers: the object and the warnings for the client's `Warning` headers. */
export interface Written {
  object: any
  warnings: string[]
}
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/

/** The body agrees with the request: an object, of its kind and apiVersion, namespace and name. */
export function checkBody(t: ResourceType, ns: string, body: any, urlName?: string): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the request body must be a JSON object')
  if (body.kind !== undefined && body.kind !== t.kind)
    throw badRequest(`the kind of the provided object (${body.kind}) does not match the kind of the request (${t.kind})`)
  if (body.apiVersion !== undefined && body.apiVersion !== apiVersionOf(t))
    throw badRequest(`the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersionOf(t)})`)
  const m = body.metadata ?? {}
  if (t.namespaced && m.namespace !== undefined && m.namespace !== '' && m.namespace !== ns) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
  }
  if (urlName !== undefined && m.name !== undefined && m.name !== urlName) {
    throw badRequest(`the name of the object (${m.name}) does not match the name on the URL (${urlName})`)
  }
}

/** The name is a lowercase RFC 1123 subdomain (a CRD's: plural.group), labels an object, metadata valid. */
export function validateObject(t: ResourceType, obj: any): void {
  const name = obj.metadata?.name
  if (typeof name !== 'string' || name === '')
    throw invalid(t.kind, t.group, '', [
      { reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' },
    ])
  if (name.length > 253 || !NAME.test(name)) {
    throw invalid(t.kind, t.group, name, [
      {
        reason: 'FieldValueInvalid',
        message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
        field: 'metadata.name',
      },
    ])
  }
  const labels = obj.metadata?.labels
  if (labels !== undefined && (typeof labels !== 'object' || labels === null || Array.isArray(labels)))
    throw invalid(t.kind, t.group, name, [
      { reason: 'FieldValueInvalid', message: 'Invalid value: label values must be strings', field: 'metadata.labels' },
    ])
  const metaErrors = metaCauses(obj.metadata)
  if (metaErrors.length) throw invalid(t.kind, t.group, name, metaErrors)
  if (t.crd === undefined && t.resource === 'customresourcedefinitions') {
    const s = obj.spec ?? {}
    if (name !== `${s.names?.plural}.${s.group}`) {
      throw invalid(t.kind, t.group, name, [
        {
          reason: 'FieldValueInvalid',
          message: `Invalid value: "${name}": must be spec.names.plural+"."+spec.group`,
          field: 'metadata.name',
        },
      ])
    }
  }
}

/** The defaults every decoded body of a create gets (a Namespace its finalizer and phase, a Secret its type). */
export function withDefaults(t: ResourceType, obj: any): any {
  if (t.storageKey === NS_TYPE_KEY)
    return { ...obj, spec: { finalizers: ['kubernetes'], ...(obj.spec ?? {}) }, status: { phase: 'Active' } }
  if (t.resource === 'secrets' && t.group === '' && obj.type === undefined) return { ...obj, type: 'Opaque' }
  return obj
}

/** Generation bumps when something outside metadata and status changed. */
export function specChanged(a: any, b: any): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  for (const k of keys) {
    if (k === 'metadata' || k === 'status' || k === 'apiVersion' || k === 'kind') continue
    if (!deepEqual(a[k], b[k])) return true
  }
  return false
}
/** Equal except for managedFields timestamps: such a write is a no-op on a real server. */
export function sameIgnoringTimes(a: any, b: any): boolean {
  const strip = (o: any) => ({
    ...o,
    metadata: { ...o.metadata, managedFields: (o.metadata.managedFields ?? []).map((e: any) => ({ ...e, time: undefined })) },
  })
  return deepEqual(strip(a), strip(b))
}

/** The admission request of a create or update (admission.ts). */
export function admissionRequest(
  t: ResourceType,
  operation: Operation,
  object: any,
  oldObject: any,
  o: Pick<WriteOpts, 'dryRun' | 'fieldValidation' | 'subresource'>,
): AdmissionRequest {
  const req: AdmissionRequest = {
    type: t,
    operation,
    object,
    dryRun: !!o.dryRun,
    fieldValidation: o.fieldValidation ?? 'Warn',
    warnings: [],
  }
  if (oldObject !== undefined) req.oldObject = oldObject
  if (o.subresource) req.subresource = o.subresource
  return req
}
