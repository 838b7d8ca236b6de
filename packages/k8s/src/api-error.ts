// A failed request to an API server: ApiError (the HTTP status, the Status reason and message), the
// tests callers make of it, and how an answer or a transport failure becomes one.
// Invariants:
// - Every message names the method, the path and, when the request said, the object
//   (RequestOptions.what): "ConfigMap default/web: PUT /api/v1/...: 409 Conflict: ...".
// - The reason is the Status's `reason`, else HTTP<code>; a transport failure has code 0 and the
//   errno code as its reason (Aborted for an abort).
// - Retry-After is kept in ms when the server sent it (the Cluster pauses every request for it).
import type http from 'node:http'
import { K8sError } from './errors.ts'
import type { RequestOptions } from './cluster-options.ts'

/** A failed request: the HTTP status (0 for a transport error), the Status reason and message. */
export class ApiError extends K8sError {
  override name = 'ApiError'
  /** The HTTP status (0 for a transport error). */
  declare readonly code: number
  constructor(
    message: string,
    code: number,
    readonly reason: string,
    /** The parsed Status body, when the server sent one. */
    readonly status?: any,
    /** Retry-After, ms, when the server sent it. */
    readonly retryAfterMs?: number,
  ) {
    super(message, code)
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.code === 404
}
export function isConflict(err: unknown): boolean {
  return err instanceof ApiError && err.code === 409
}
export function isGone(err: unknown): boolean {
  return err instanceof ApiError && (err.code === 410 || err.reason === 'Expired' || err.reason === 'Gone')
}

/** The ApiError of an answer that is not 2xx: the Status's reason and message, Retry-After in ms. */
export function apiErrorOf(o: RequestOptions, code: number, headers: http.IncomingHttpHeaders, body: Buffer): ApiError {
  let status: any
  try {
    status = JSON.parse(body.toString('utf8'))
  } catch {
    status = undefined
  }
  const reason = typeof status?.reason === 'string' && status.reason ? status.reason : `HTTP${code}`
  const msg = typeof status?.message === 'string' ? status.message : body.toString('utf8').slice(0, 200)
  const ra = headers['retry-after']
  const retryAfterMs = ra !== undefined && !Number.isNaN(Number(ra)) ? Math.max(0, Number(ra) * 1000) : undefined
  const who = o.what ? `${o.what}: ` : ''
  return new ApiError(`${who}${o.method ?? 'GET'} ${o.path}: ${code} ${reason}: ${msg}`, code, reason, status, retryAfterMs)
}

/** The ApiError of a request that got no answer (code 0; reason: the errno code, Aborted or TransportError). */
export function transportError(method: string, path: string, what: string | undefined, e: Error): ApiError {
  if (e instanceof ApiError) return e
  const code = (e as NodeJS.ErrnoException).code
  const reason = e.name === 'AbortError' ? 'Aborted' : (code ?? 'TransportError')
  return new ApiError(`${what ? what + ': ' : ''}${method} ${path}: ${e.message}`, 0, reason)
}
