// How the server calls a webhook (admission: webhooks.ts; CRD conversion: conversion.ts), as
// kube-apiserver's webhook client manager does: a JSON POST over HTTPS, the answer verified against
// the configuration's caBundle, to `clientConfig.url` or to a Service reference resolved by the
// server's `serviceResolver` option (kube-apiserver's ServiceResolver).
// Invariants:
// - Only https is called; a Service is verified as `<name>.<namespace>.svc` (the name kube-apiserver
//   checks the serving certificate against), whatever address the resolver gives.
// - Every failure (no route, TLS, timeout, not 200, not JSON) rejects with a TestServerError
//   'WebhookCall' whose message says what went wrong; callers prefix it with the webhook they called.
import { request } from 'node:https'
import { TestServerError } from './errors.ts'

/** A webhook's clientConfig (admissionregistration/v1 and apiextensions/v1 share this shape). */
export interface WebhookClientConfig {
  url?: string
  caBundle?: string
  service?: { namespace?: string; name?: string; port?: number; path?: string }
}

/**
 * Resolves a Service reference to the base URL that reaches it (`https://127.0.0.1:8443`); the
 * reference's `path` is appended. Where kube-apiserver asks the cluster's endpoints, a test server
 * has no network of Services: a test says where its webhook listens.
 */
export type ServiceResolver = (namespace: string, name: string, port: number) => string | URL

export const callError = (message: string) => new TestServerError(message, 'WebhookCall')

/** Where a call goes: the URL, and the name the serving certificate must carry (a Service's). */
function target(cc: WebhookClientConfig | undefined, resolve: ServiceResolver | undefined): { url: URL; servername?: string } {
  if (cc?.url) return { url: new URL(cc.url) }
  const s = cc?.service
  if (!s?.name || !s.namespace) throw callError('the clientConfig has neither url nor service')
  const port = s.port ?? 443
  if (!resolve)
    throw callError(
      `clientConfig.service ${s.namespace}/${s.name}:${port} cannot be reached: give the test server a serviceResolver option to say where it listens`,
    )
  const base = new URL(String(resolve(s.namespace, s.name, port)))
  const url = new URL((s.path ?? '').replace(/^\/?/, '/'), base)
  return { url, servername: `${s.name}.${s.namespace}.svc` }
}

/** POSTs `body` as JSON and resolves with the parsed answer; rejects with a 'WebhookCall' error. */
export function postJson(
  cc: WebhookClientConfig | undefined,
  body: unknown,
  timeoutMs: number,
  resolve: ServiceResolver | undefined,
  timeoutNote = '',
): Promise<any> {
  let where: { url: URL; servername?: string }
  try {
    where = target(cc, resolve)
  } catch (e) {
    return Promise.reject(e instanceof TestServerError ? e : callError(`the Service could not be resolved: ${(e as Error).message}`))
  }
  const { url, servername } = where
  if (url.protocol !== 'https:') return Promise.reject(callError(`${url.href}: a webhook is called over https`))
  const ca = cc?.caBundle ? Buffer.from(cc.caBundle, 'base64').toString('utf8') : undefined
  const data = JSON.stringify(body)
  return new Promise((resolvePromise, reject) => {
    const r = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
        ...(ca ? { ca } : {}),
        ...(servername ? { servername } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(callError(`the webhook answered HTTP ${res.statusCode}`))
          try {
            resolvePromise(JSON.parse(Buffer.concat(chunks).toString('utf8')))
          } catch {
            reject(callError('the answer is not JSON'))
          }
        })
      },
    )
    r.on('error', (e: Error) =>
      reject(
        e.name === 'AbortError' || e.name === 'TimeoutError'
          ? callError(`no answer within ${timeoutMs / 1000} s${timeoutNote}`)
          : callError(`${url.href}: ${e.message}`),
      ),
    )
    r.end(data)
  })
}
