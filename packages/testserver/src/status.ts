// Kubernetes `Status` objects and the errors that carry them.
// Invariants: every error a handler throws is a StatusError whose `status.code` is the HTTP status sent;
// messages, reasons and `details` follow what a real kube-apiserver answers, because clients
// (client-go, @kubernetes/client-node, kubectl) branch on `reason` and `code`, not on messages.
import { TestServerError } from './errors.ts'

export interface StatusCause {
  reason?: string
  message?: string
  field?: string
}
export interface StatusDetails {
  name?: string
  group?: string
  kind?: string
  uid?: string
  causes?: StatusCause[]
  retryAfterSeconds?: number
}
export interface Status {
  kind: 'Status'
  apiVersion: 'v1'
  metadata: Record<string, unknown>
  status: 'Failure' | 'Success'
  message?: string
  reason?: string
  details?: StatusDetails
  code: number
}

/** Identifies the resource in `details` the way the real server does: plural resource name + group. */
export interface ResourceRef {
  resource: string
  group: string
}

/** What a handler answers: `code` is the HTTP status, `status` the Kubernetes Status sent. */
export class StatusError extends TestServerError {
  override name = 'StatusError'
  declare readonly code: number
  readonly status: Status
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Record<string, string>
  constructor(code: number, reason: string, message: string, details?: StatusDetails, headers: Record<string, string> = {}) {
    super(message, code)
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }
    if (details) this.status.details = details
    this.headers = headers
  }
}

function qualified(ref: ResourceRef): string {
  return ref.group ? `${ref.resource}.${ref.group}` : ref.resource
}
function details(ref: ResourceRef, name: string, extra: Partial<StatusDetails> = {}): StatusDetails {
  const d: StatusDetails = { name, kind: ref.resource, ...extra }
  if (ref.group) d.group = ref.group
  return d
}

export function notFound(ref: ResourceRef, name: string): StatusError {
  return new StatusError(404, 'NotFound', `${qualified(ref)} "${name}" not found`, details(ref, name))
}
export function alreadyExists(ref: ResourceRef, name: string, beingDeleted = false): StatusError {
  const msg = `${beingDeleted ? 'object is being deleted: ' : ''}${qualified(ref)} "${name}" already exists`
  return new StatusError(409, 'AlreadyExists', msg, details(ref, name))
}
export function conflict(
  ref: ResourceRef,
  name: string,
  why = 'the object has been modified; please apply your changes to the latest version and try again',
): StatusError {
  return new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(ref)} "${name}": ${why}`, details(ref, name))
}
export function invalid(kind: string, group: string, name: string, causes: StatusCause[]): StatusError {
  // as apimachinery's ToAggregate: several errors are listed in brackets
  const each = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message))
  const what = each.length === 1 ? each[0] : `[${each.join(', ')}]`
  const d: StatusDetails = { name, kind, causes }
  if (group) d.group = group
  return new StatusError(422, 'Invalid', `${kind}${group ? '.' + group : ''} "${name}" is invalid: ${what}`, d)
}
export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message)
}
export function methodNotAllowed(message = 'the server does not allow this method on the requested resource'): StatusError {
  return new StatusError(405, 'MethodNotAllowed', message)
}
export function unsupportedMediaType(contentType: string): StatusError {
  return new StatusError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got ${contentType})`,
  )
}
export function expired(message: string): StatusError {
  return new StatusError(410, 'Expired', message)
}
/**
 * 504 Timeout "Too large resource version" (cause ResourceVersionTooLarge, retry after 1 s): a read
 * at a version the server does not have yet, as apiserver's storage.NewTooLargeResourceVersionError.
 */
export function tooLargeResourceVersion(requested: number, current: number): StatusError {
  return new StatusError(504, 'Timeout', `Too large resource version: ${requested}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  })
}
export function gone(message: string): StatusError {
  return new StatusError(410, 'Gone', message)
}
export function unauthorized(): StatusError {
  return new StatusError(401, 'Unauthorized', 'Unauthorized')
}
export function tooManyRequests(retryAfterSeconds: number): StatusError {
  return new StatusError(
    429,
    'TooManyRequests',
    'The server has received too many requests and has asked us to try again later',
    { retryAfterSeconds },
    { 'Retry-After': String(retryAfterSeconds) },
  )
}
export function internalError(message: string): StatusError {
  return new StatusError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] })
}
export function serviceUnavailable(message = 'the server is currently unable to handle the request'): StatusError {
  return new StatusError(503, 'ServiceUnavailable', message)
}
export function pathNotFound(): StatusError {
  return new StatusError(404, 'NotFound', 'the server could not find the requested resource', {})
}
/** A Status of success, sent e.g. for a DELETE that removed the object at once. */
export function success(ref: ResourceRef, name: string, uid?: string): Status {
  const d = details(ref, name)
  if (uid) d.uid = uid
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: d, code: 200 }
}
/** Turns any thrown value into an StatusError (unexpected exceptions become 500 InternalError). */
export function toApiError(err: unknown): StatusError {
  if (err instanceof StatusError) return err
  return internalError(err instanceof Error ? err.message : String(err))
}

/** The causes of a field error, in apimachinery's field.Error wording (Required, Forbidden, Invalid value). */
export const requiredCause = (field: string, detail: string): StatusCause => ({
  reason: 'FieldValueRequired',
  message: `Required value: ${detail}`,
  field,
})
export const forbiddenCause = (field: string, detail: string): StatusCause => ({
  reason: 'FieldValueForbidden',
  message: `Forbidden: ${detail}`,
  field,
})
export const invalidCause = (field: string, value: string, detail: string): StatusCause => ({
  reason: 'FieldValueInvalid',
  message: `Invalid value: ${value}: ${detail}`,
  field,
})
