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
//   own configuration). A Service reference is called where the server's `serviceResolver` says
//   (webhook-client.ts, shared with conversion webhooks); without one it is a call failure.
// - matchPolicy Equivalent (the default): a webhook whose rules name the resource in another served
//   version only (a CRD's v1 for a v1beta1 write) is called with the objects converted to that
//   version, `kind`/`resource` of it and `requestKind`/`requestResource` of the request; a mutating
//   one's patch applies there and the result is converted back. `Exact` matches the named version only.
// - CREATE and UPDATE go through the write pipeline; a DELETE is admitted before it by admitDelete
//   (validating webhooks only: object null, oldObject the stored one in the request's version): a
//   DELETE of one object, each item of a deletecollection, and each delete of the garbage collector
//   (whose cascade then finishes asynchronously when a webhook matches).
import { randomUUID } from 'node:crypto'
import type { AdmissionRequest, WritePipeline } from './admission.ts'
import type { ResourceType } from './resources.ts'
import { StatusError, internalError } from './status.ts'
import { callError, postJson, type ServiceResolver, type WebhookClientConfig } from './webhook-client.ts'
import { labelSelectorMatches } from './selectors.ts'
import { jsonPatch } from './patch.ts'
import type { Store } from './store.ts'

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
  clientConfig?: WebhookClientConfig
  rules?: Rule[]
  failurePolicy?: 'Fail' | 'Ignore'
  namespaceSelector?: unknown
  objectSelector?: unknown
  sideEffects?: string
  timeoutSeconds?: number
  matchPolicy?: 'Exact' | 'Equivalent'
}

/** What the steps read of the server: the stored objects, and a namespace's labels. */
export interface WebhookSource {
  store: Store
  namespaceLabels(name: string): Record<string, string> | undefined
  /** Where a Service reference is (the server's `serviceResolver` option); none: a call failure. */
  resolveService?: ServiceResolver
  /** The same resource in its other served versions (matchPolicy Equivalent); none: Exact only. */
  equivalents?(t: ResourceType): ResourceType[]
  /** An object converted to `t`'s version (the CRD's conversion). */
  toVersion?(t: ResourceType, obj: any): any
}

/** Adds the webhook steps to the pipeline: mutating ones last among mutations, validating ones last. */
export function installWebhookAdmission(p: WritePipeline, src: WebhookSource): void {
  p.mutating.push((req) => run(req, src, MUTATING, true))
  p.validating.push((req) => run(req, src, VALIDATING, false))
}

/** An admission request of any operation (the write pipeline's are CREATE and UPDATE). */
type WebhookRequest = Omit<AdmissionRequest, 'operation'> & { operation: AdmissionRequest['operation'] | 'DELETE' }

/** Admits the DELETE of `oldObject` (the stored object): the matching validating webhooks, in order. */
export function admitDelete(src: WebhookSource, type: ResourceType, oldObject: any, dryRun: boolean): void | Promise<void> {
  const req: WebhookRequest = { type, operation: 'DELETE', object: undefined, oldObject, dryRun, fieldValidation: 'Ignore', warnings: [] }
  return run(req, src, VALIDATING, false)
}

function run(req: WebhookRequest, src: WebhookSource, storageKey: string, mutating: boolean): void | Promise<void> {
  if (req.type.group === GROUP && req.type.resource.endsWith('webhookconfigurations')) return
  if (!src.store.has(storageKey)) return
  const hooks: Array<{ w: Webhook; as: ResourceType }> = []
  for (const [, cfg] of src.store.scan(storageKey, undefined, undefined, src.store.snapshot()))
    for (const w of (cfg.webhooks ?? []) as Webhook[]) {
      const as = matches(w, req, src)
      if (as) hooks.push({ w, as })
    }
  if (hooks.length === 0) return // synchronous: plain writes stay fast
  return (async () => {
    for (const { w, as } of hooks) await call(w, req, as, mutating, src)
  })()
}

/** Whether a rule names `t` (with the request's operation and subresource). */
function ruleMatches(rules: Rule[] | undefined, req: WebhookRequest, t: ResourceType): boolean {
  const resource = req.subresource ? `${t.resource}/${req.subresource}` : t.resource
  const any = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v)
  return (rules ?? []).some(
    (r) =>
      any(r.operations, req.operation) &&
      any(r.apiGroups, t.group) &&
      any(r.apiVersions, t.version) &&
      (r.resources ?? []).some((x) => x === '*/*' || x === resource || (x === '*' && !req.subresource) || x === `${t.resource}/*`) &&
      (r.scope === undefined || r.scope === '*' || r.scope === (t.namespaced ? 'Namespaced' : 'Cluster')),
  )
}

/**
 * The version a webhook sees the request in: the request's own when a rule names it, else (under
 * matchPolicy Equivalent, the default) the first other served version of the same resource a rule
 * names, as kube-apiserver's generic webhook dispatcher picks it; undefined when it does not match.
 */
function matches(w: Webhook, req: WebhookRequest, src: WebhookSource): ResourceType | undefined {
  const t = req.type
  let as: ResourceType | undefined = ruleMatches(w.rules, req, t) ? t : undefined
  if (!as && w.matchPolicy !== 'Exact') as = src.equivalents?.(t).find((o) => ruleMatches(w.rules, req, o))
  if (!as) return undefined
  const obj = req.object ?? req.oldObject
  if (w.objectSelector && !labelSelectorMatches(w.objectSelector, obj?.metadata?.labels)) return undefined
  if (w.namespaceSelector && t.namespaced) {
    const ns = obj?.metadata?.namespace
    if (!labelSelectorMatches(w.namespaceSelector, ns ? src.namespaceLabels(ns) : undefined)) return undefined
  }
  return as
}

async function call(w: Webhook, req: WebhookRequest, as: ResourceType, mutating: boolean, src: WebhookSource): Promise<void> {
  if (req.dryRun && w.sideEffects !== 'None' && w.sideEffects !== 'NoneOnDryRun')
    throw new StatusError(400, 'BadRequest', `admission webhook "${w.name}" does not support dry run`)
  const t = req.type
  // an equivalent version: the webhook sees the objects converted to it, kind and resource its own,
  // requestKind and requestResource the request's
  const convert = (o: any, to: ResourceType) => (o && to !== t && src.toVersion ? src.toVersion(to, o) : o)
  const object = await convert(req.object, as)
  const oldObject = await convert(req.oldObject, as)
  const uid = randomUUID()
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: as.group, version: as.version, kind: as.kind },
      resource: { group: as.group, version: as.version, resource: as.resource },
      ...(req.subresource ? { subResource: req.subresource } : {}),
      requestKind: { group: t.group, version: t.version, kind: t.kind },
      requestResource: { group: t.group, version: t.version, resource: t.resource },
      ...(req.subresource ? { requestSubResource: req.subresource } : {}),
      name: req.object?.metadata?.name ?? req.oldObject?.metadata?.name,
      ...(t.namespaced ? { namespace: req.object?.metadata?.namespace } : {}),
      operation: req.operation,
      userInfo: { username: 'system:admin', groups: ['system:masters', 'system:authenticated'] },
      object: object ?? null,
      oldObject: oldObject ?? null,
      dryRun: req.dryRun,
      options: { apiVersion: 'meta.k8s.io/v1', kind: `${req.operation[0]}${req.operation.slice(1).toLowerCase()}Options` },
    },
  }
  let response: any
  try {
    response = await post(w, review, src.resolveService)
    if (response?.apiVersion !== 'admission.k8s.io/v1' || response?.kind !== 'AdmissionReview' || typeof response.response !== 'object')
      throw callError('the answer is not an admission.k8s.io/v1 AdmissionReview')
    if (response.response.uid !== uid) throw callError(`the answer's response.uid is not the request's (${uid})`)
    if (typeof response.response.allowed !== 'boolean') throw callError('the answer has no response.allowed')
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
    // the patch is against what the webhook saw; the result goes back to the request's version
    const patched = jsonPatch(object, ops)
    req.object = as === t || !src.toVersion ? patched : await src.toVersion(t, patched)
  }
}

function post(w: Webhook, body: unknown, resolve: ServiceResolver | undefined): Promise<any> {
  const timeoutMs = Math.min(Math.max(w.timeoutSeconds ?? 10, 1), 30) * 1000
  return postJson(w.clientConfig, body, timeoutMs, resolve, ' (timeoutSeconds)')
}
