// Shared test helpers: a client for a running server, bounded waits, ApiException checks.
import * as k8s from '@kubernetes/client-node'
import * as assert from 'uvu/assert'
import { startTestServer, type RunningTestServer, type TestServerOptions } from '../src/index.ts'
import { setValidation } from '@statewright/statedb'

export { waitFor } from '../../../test/lib/wait.ts'

// statedb's validation mode deep-freezes stored objects: any mutation of a stored object by the
// server throws in tests instead of corrupting state silently.
setValidation(true)

export interface Env {
  server: RunningTestServer
  kc: k8s.KubeConfig
  core: k8s.CoreV1Api
  objs: k8s.KubernetesObjectApi
}

export async function env(opts: TestServerOptions = {}): Promise<Env> {
  const server = await startTestServer(opts)
  const kc = new k8s.KubeConfig()
  kc.loadFromString(server.kubeconfig)
  return { server, kc, core: kc.makeApiClient(k8s.CoreV1Api), objs: k8s.KubernetesObjectApi.makeApiClient(kc) }
}

/** Awaits a promise that must reject with an ApiException of `code` (and `reason` from the body). */
export async function rejects(p: Promise<unknown>, code: number, reason?: string): Promise<any> {
  try {
    await p
  } catch (e: any) {
    assert.is(e.code, code, `expected HTTP ${code}, got ${e.code}: ${e.body ?? e.message}`)
    const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body
    if (reason) assert.is(body?.reason, reason)
    return body
  }
  assert.unreachable(`expected HTTP ${code}`)
}

export interface Recorded {
  type: string
  object: any
}
/** Starts a client-node Watch and records its events; `done` resolves with the error (or null). */
export async function watchAll(kc: k8s.KubeConfig, path: string, query: Record<string, string | number | boolean | undefined> = {}) {
  const events: Recorded[] = []
  let resolveDone!: (e: any) => void
  const done = new Promise<any>((r) => (resolveDone = r))
  const ctrl = await new k8s.Watch(kc).watch(
    path,
    query,
    (type, object) => events.push({ type, object }),
    (err) => resolveDone(err),
  )
  return { events, done, abort: () => ctrl.abort() }
}

export const cm = (name: string, data: Record<string, string> = {}, labels?: Record<string, string>, namespace = 'default') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, ...(labels ? { labels } : {}) },
  data,
})

export { k8s }

export interface RawResponse {
  status: number
  body: any
  headers: Headers
}
/** One request over plain HTTP(S) with the server's token; a JSON body is sent as JSON unless a string. */
export async function http(
  e: { server: RunningTestServer },
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<RawResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${e.server.token}` }
  if (body !== undefined) headers['content-type'] = contentType
  const res = await fetch(`${e.server.url}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  })
  const text = await res.text()
  let parsed: any = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body: parsed, headers: res.headers }
}
