// Admission webhooks, called as kube-apiserver calls them: the stored Mutating- and
// ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1) are read at each write, and every
// webhook whose rules, namespaceSelector and objectSelector match gets an AdmissionReview v1 over
// HTTPS (verified against its caBundle), within timeoutSeconds (default 10). So a webhook is tested
// end to end without a cluster.
// Invariants:
// - Mutating webhooks run in the mutating phase (configurations by name, webhooks in order), each
//   seeing the object as the ones before left it (a JSONPatch response is applied); validating ones
//   run after every mutation and built-in validation step already registered before them.
// - A denial is the request's error, as kube-apiserver words it: `admission webhook "<name>" denied
//   the request: <message>`, with the response's code (at least 400).
// - A webhook that cannot be called, times out, or answers garbage (not 200, not an AdmissionReview,
//   another uid) fails the request with 500 `failed calling webhook "<name>": <why>` under
//   failurePolicy Fail (the default), and is skipped under Ignore.
// - A dry-run request reaches only webhooks whose sideEffects are None or NoneOnDryRun; any other
//   matching webhook makes it fail with 400, as the real server does.
// - Webhook configurations themselves are never sent to webhooks (a broken webhook cannot lock its
//   own configuration). Only clientConfig.url is called: a Service reference is a call failure.
// - Only CREATE and UPDATE reach the pipeline (DELETE has no admission here yet).
import { TestServerError } from './errors.ts'
import { request } from 'node:https'
import { randomUUID } from 'node:crypto'
import type { AdmissionRequest, WritePipeline } from './admission.ts'
import { StatusError, internalError } from './status.ts'
import { labelSelectorMatches } from './selectors.ts'
import { jsonPatch } from './patch.ts'
import type { Store } from './store.ts'

/** A webhook call that failed (no answer, not an AdmissionReview): turned into the 500 a real server answers. */
class WebhookCallError extends TestServerError {
  override name = 'WebhookCallError'
  constructor(message: string) {
    super(message, 'Internal')
  }
}

const GROUP = 'admissionregistration.k8s.io'
const MUTATING = `${GROUP}/mutatingwebhookconfigurations`
const VALIDATING = `${GROUP}/validatingwebhookconfigurations`

interface Rule {
  operations?: string[]
  apiGroups?: string[]
  apiVersions?: string[]
  resources?: string[]
  scope?: string
}
interface Webhook {
  name: string
  clientConfig?: { url?: string; caBundle?: string; service?: { namespace?: string; name?: string } }
  rules?: Rule[]
  failurePolicy?: 'Fail' | 'Ignore'
  namespaceSelector?: unknown
  objectSelector?: unknown
  sideEffects?: string
  timeoutSeconds?: number
}

/** What the steps read of the server: the stored objects, and a namespace's labels. */
export interface WebhookSource {
  store: Store
  namespaceLabels(name: string): Record<string, string> | undefined
}

/** Adds the webhook steps to the pipeline: mutating ones last among mutations, validating ones last. */
export function installWebhookAdmission(p: WritePipeline, src: WebhookSource): void {
  p.mutating.push((req) => run(req, src, MUTATING, true))
  p.validating.push((req) => run(req, src, VALIDATING, false))
}

function run(req: AdmissionRequest, src: WebhookSource, storageKey: string, mutating: boolean): void | Promise<void> {
  if (req.type.group === GROUP && req.type.resource.endsWith('webhookconfigurations')) return
  if (!src.store.has(storageKey)) return
  const hooks: Webhook[] = []
  for (const [, cfg] of src.store.scan(storageKey, undefined, undefined, src.store.snapshot()))
    for (const w of (cfg.webhooks ?? []) as Webhook[]) if (matches(w, req, src)) hooks.push(w)
  if (hooks.length === 0) return // synchronous: plain writes stay fast
  return (async () => {
    for (const w of hooks) await call(w, req, mutating)
  })()
}

function matches(w: Webhook, req: AdmissionRequest, src: WebhookSource): boolean {
  const t = req.type
  const resource = req.subresource ? `${t.resource}/${req.subresource}` : t.resource
  const any = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v)
  const ruleOk = (w.rules ?? []).some(
    (r) =>
      any(r.operations, req.operation) &&
      any(r.apiGroups, t.group) &&
      any(r.apiVersions, t.version) &&
      (r.resources ?? []).some((x) => x === '*/*' || x === resource || (x === '*' && !req.subresource) || x === `${t.resource}/*`) &&
      (r.scope === undefined || r.scope === '*' || r.scope === (t.namespaced ? 'Namespaced' : 'Cluster')),
  )
  if (!ruleOk) return false
  const obj = req.object ?? req.oldObject
  if (w.objectSelector && !labelSelectorMatches(w.objectSelector, obj?.metadata?.labels)) return false
  if (w.namespaceSelector && t.namespaced) {
    const ns = obj?.metadata?.namespace
    if (!labelSelectorMatches(w.namespaceSelector, ns ? src.namespaceLabels(ns) : undefined)) return false
  }
  return true
}

async function call(w: Webhook, req: AdmissionRequest, mutating: boolean): Promise<void> {
  if (req.dryRun && w.sideEffects !== 'None' && w.sideEffects !== 'NoneOnDryRun')
    throw new StatusError(400, 'BadRequest', `admission webhook "${w.name}" does not support dry run`)
  const t = req.type
  const uid = randomUUID()
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: t.group, version: t.version, kind: t.kind },
      resource: { group: t.group, version: t.version, resource: t.resource },
      ...(req.subresource ? { subResource: req.subresource } : {}),
      requestKind: { group: t.group, version: t.version, kind: t.kind },
      requestResource: { group: t.group, version: t.version, resource: t.resource },
      name: req.object?.metadata?.name ?? req.oldObject?.metadata?.name,
      ...(t.namespaced ? { namespace: req.object?.metadata?.namespace } : {}),
      operation: req.operation,
      userInfo: { username: 'system:admin', groups: ['system:masters', 'system:authenticated'] },
      object: req.object,
      oldObject: req.oldObject ?? null,
      dryRun: req.dryRun,
      options: { apiVersion: 'meta.k8s.io/v1', kind: req.operation === 'CREATE' ? 'CreateOptions' : 'UpdateOptions' },
    },
  }
  let response: any
  try {
    response = await post(w, review)
    if (response?.apiVersion !== 'admission.k8s.io/v1' || response?.kind !== 'AdmissionReview' || typeof response.response !== 'object')
      throw new WebhookCallError('the answer is not an admission.k8s.io/v1 AdmissionReview')
    if (response.response.uid !== uid) throw new WebhookCallError(`the answer's response.uid is not the request's (${uid})`)
    if (typeof response.response.allowed !== 'boolean') throw new WebhookCallError('the answer has no response.allowed')
  } catch (err) {
    if (w.failurePolicy === 'Ignore') return
    throw internalError(`failed calling webhook "${w.name}": ${(err as Error).message}`)
  }
  const r = response.response
  for (const warning of r.warnings ?? []) if (typeof warning === 'string') req.warnings.push(warning)
  if (!r.allowed) {
    const s = r.status ?? {}
    const code = typeof s.code === 'number' && s.code >= 400 ? s.code : 400
    const denied = `admission webhook "${w.name}" denied the request`
    throw new StatusError(code, s.reason || 'BadRequest', s.message ? `${denied}: ${s.message}` : `${denied} without explanation`)
  }
  if (mutating && r.patch !== undefined) {
    if (r.patchType !== 'JSONPatch') {
      if (w.failurePolicy === 'Ignore') return
      throw internalError(`failed calling webhook "${w.name}": patchType must be JSONPatch, not ${JSON.stringify(r.patchType)}`)
    }
    const ops = JSON.parse(Buffer.from(String(r.patch), 'base64').toString('utf8'))
    req.object = jsonPatch(req.object, ops)
  }
}

function post(w: Webhook, body: unknown): Promise<any> {
  const url = w.clientConfig?.url
  if (!url) {
    const s = w.clientConfig?.service
    return Promise.reject(new WebhookCallError(`the test server calls clientConfig.url only, not Service ${s?.namespace}/${s?.name}`))
  }
  const u = new URL(url)
  if (u.protocol !== 'https:') return Promise.reject(new WebhookCallError(`${url}: a webhook is called over https`))
  const ca = w.clientConfig?.caBundle ? Buffer.from(w.clientConfig.caBundle, 'base64').toString('utf8') : undefined
  const timeoutMs = Math.min(Math.max(w.timeoutSeconds ?? 10, 1), 30) * 1000
  const data = JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const r = request(
      u,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
        ...(ca ? { ca } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new WebhookCallError(`the webhook answered HTTP ${res.statusCode}`))
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
          } catch {
            reject(new WebhookCallError('the answer is not JSON'))
          }
        })
      },
    )
    r.on('error', (e: Error) =>
      reject(
        e.name === 'AbortError' || e.name === 'TimeoutError'
          ? new WebhookCallError(`no answer within ${timeoutMs / 1000} s (timeoutSeconds)`)
          : e,
      ),
    )
    r.end(data)
  })
}
