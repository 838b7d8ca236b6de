// Conversion of custom resources between their CRD's versions, as apiextensions-apiserver converts
// them: every stored object keeps the apiVersion it was stored in (the CRD's `storage: true` version
// at the time of its write); a write converts to the storage version before storing, a read converts
// from the stored version to the one asked for.
// Invariants:
// - `spec.conversion.strategy: None` (the default) changes only apiVersion. `Webhook` POSTs one
//   ConversionReview (v1, or v1beta1 when the CRD lists it first) per call (a list's objects in one review) to the CRD's
//   clientConfig (webhook-client.ts), within 30 s (kube-apiserver's webhook client timeout); objects
//   already in the desired version are not sent, and nothing is sent when none needs converting.
// - The answer is checked as webhook_converter.go checks it: same uid, result.status Success (else
//   its message is the error), one object per object sent, each in the desired apiVersion with the
//   same kind, name, namespace and uid. Metadata comes from the original object except labels and
//   annotations, which the webhook may change. Any failure is a 500
//   `conversion webhook for <group/version, Kind=K> ...`; it never escapes as a crash.
// - Everything is synchronous unless a webhook is called: built-in kinds and None CRDs keep the fast
//   path (a list of objects already in the wanted version is the same array).
// - The CRD is read from storage at each conversion (like webhook configurations at each write): a
//   change of strategy, webhook or storage version applies to the next request.
import { randomUUID } from 'node:crypto'
import type { Store } from './store.ts'
import type { ResourceType } from './resources.ts'
import { apiVersionOf } from './resources.ts'
import { internalError, StatusError } from './status.ts'
import { metaCauses } from './meta-validation.ts'
import { postJson, type ServiceResolver } from './webhook-client.ts'
import { TestServerError } from './errors.ts'

/** A webhook's answer that fails the conversion (the request then fails with 500, naming the webhook). */
const conversionError = (message: string) => new TestServerError(message, 'WebhookCall')

export const CRD_STORAGE_KEY = 'apiextensions.k8s.io/customresourcedefinitions'
/** kube-apiserver's webhook client timeout (setGlobalDefaults), which conversion calls get. */
export const CONVERSION_TIMEOUT_MS = 30_000

export type MaybePromise<T> = T | Promise<T>
export function isPromise<T>(v: MaybePromise<T>): v is Promise<T> {
  return typeof (v as any)?.then === 'function'
}
/** `f(v)` now when `v` is a value, after it when a promise: synchronous paths stay synchronous. */
export function then<T, R>(v: MaybePromise<T>, f: (x: T) => MaybePromise<R>): MaybePromise<R> {
  return isPromise(v) ? v.then(f) : f(v)
}

export class Conversion {
  /** How long a conversion webhook may take (the `conversionTimeoutMs` option). */
  timeoutMs = CONVERSION_TIMEOUT_MS
  /** Where a Service reference is (the `serviceResolver` option). */
  resolveService: ServiceResolver | undefined

  constructor(private readonly store: Store) {}

  /** The CRD that defines `t` (undefined for built-in kinds and control.registerKind kinds). */
  crdOf(t: ResourceType): any {
    return t.crd ? this.store.get(CRD_STORAGE_KEY, '', t.crd) : undefined
  }

  /** The apiVersion a write of `t`'s kind is stored in: its CRD's storage version, else `t`'s own. */
  storageVersion(t: ResourceType): string {
    const crd = this.crdOf(t)
    const v = (crd?.spec?.versions ?? []).find((v: any) => v?.storage === true)
    return v ? `${crd.spec.group}/${v.name}` : apiVersionOf(t)
  }

  /** Whether a stored object is in the version new writes are stored in (a no-op update keeps it). */
  inStorageVersion(t: ResourceType, stored: any): boolean {
    return stored.apiVersion === this.storageVersion(t)
  }

  /** One object in `t`'s version. */
  toType(t: ResourceType, obj: any): MaybePromise<any> {
    return then(this.convert(t, [obj], apiVersionOf(t)), (out) => out[0])
  }

  /** One object in the storage version, for a write; `internal` writes keep the stored version. */
  toStorage(t: ResourceType, obj: any, keepVersionOf?: any): MaybePromise<any> {
    const to = keepVersionOf ? keepVersionOf.apiVersion : this.storageVersion(t)
    return then(this.convert(t, [obj], to), (out) => out[0])
  }

  /**
   * A page of a list (or a deletecollection's answer) in `t`'s version. Objects a None conversion
   * would only relabel are returned as they are: the serializer sets apiVersion (and caches).
   */
  forList(t: ResourceType, objs: any[]): MaybePromise<any[]> {
    if (this.strategy(this.crdOf(t)) !== 'Webhook') return objs
    return this.convert(t, objs, apiVersionOf(t), t.listKind)
  }

  /** The objects in apiVersion `to`, in order. */
  convert(t: ResourceType, objs: any[], to: string, listKind?: string): MaybePromise<any[]> {
    if (!objs.some((o) => o.apiVersion !== to)) return objs
    const crd = this.crdOf(t)
    if (this.strategy(crd) !== 'Webhook') return objs.map((o) => (o.apiVersion === to ? o : { ...o, apiVersion: to }))
    return this.callWebhook(crd, t, objs, to, listKind)
  }

  private strategy(crd: any): string {
    return crd?.spec?.conversion?.strategy ?? 'None'
  }

  private async callWebhook(crd: any, t: ResourceType, objs: any[], to: string, listKind: string | undefined): Promise<any[]> {
    const pending = objs.filter((o) => o.apiVersion !== to)
    const gvk = `${pending[0].apiVersion}, Kind=${listKind ?? t.kind}`
    const fail = (what: string) => internalError(`conversion webhook for ${gvk} ${what}`)
    const uid = randomUUID()
    // the first ConversionReview version the CRD lists that the server speaks (v1 and v1beta1 have one shape)
    const versions: unknown[] = crd.spec.conversion.webhook?.conversionReviewVersions ?? []
    const reviewVersion = `apiextensions.k8s.io/${versions.find((v) => v === 'v1' || v === 'v1beta1') ?? 'v1'}`
    const review = {
      apiVersion: reviewVersion,
      kind: 'ConversionReview',
      request: { uid, desiredAPIVersion: to, objects: pending },
    }
    let converted: unknown[]
    try {
      const answer = await postJson(crd.spec.conversion.webhook?.clientConfig, review, this.timeoutMs, this.resolveService)
      converted = convertedObjects(uid, answer, reviewVersion)
    } catch (e) {
      throw fail(`failed: ${(e as Error).message}`)
    }
    if (converted.length !== pending.length) throw fail(`returned ${converted.length} objects, expected ${pending.length}`)
    const list = listKind !== undefined
    const out: any[] = []
    let i = 0
    for (const original of objs) {
      if (original.apiVersion === to) {
        out.push(original)
        continue
      }
      const at = list ? `converted object at index ${i}` : `object at index 0`
      const c = converted[i] as any
      if (typeof c !== 'object' || c === null || Array.isArray(c)) throw fail(`returned invalid ${at}: not an object`)
      if (c.apiVersion !== to) throw fail(`returned invalid ${at}: invalid groupVersion (expected ${to}, received ${c.apiVersion ?? ''})`)
      if (c.kind !== original.kind) throw fail(`returned invalid ${at}: invalid kind (expected ${original.kind}, received ${c.kind ?? ''})`)
      const same = sameIdentity(original, c)
      if (same) throw fail(list ? `returned invalid ${at}: ${same}` : `returned invalid object: ${same}`)
      try {
        out.push({ ...c, metadata: restoreMeta(original.metadata, c.metadata) })
      } catch (e) {
        throw fail(
          list
            ? `returned invalid metadata in object at index ${i}: ${(e as Error).message}`
            : `returned invalid metadata: ${(e as Error).message}`,
        )
      }
      i++
    }
    return out
  }
}

/** getConvertedObjectsFromResponse (v1 and v1beta1): the checks of the review itself. */
function convertedObjects(uid: string, answer: any, reviewVersion: string): unknown[] {
  if (answer?.apiVersion !== reviewVersion || answer?.kind !== 'ConversionReview')
    throw conversionError(
      `expected webhook response of ${reviewVersion}, Kind=ConversionReview, got ${answer?.apiVersion ?? ''}, Kind=${answer?.kind ?? ''}`,
    )
  const r = answer.response
  if (typeof r !== 'object' || r === null) throw conversionError('no response provided')
  if (r.uid !== uid) throw conversionError(`expected response.uid="${uid}", got "${r.uid ?? ''}"`)
  const status = r.result?.status
  if (status !== 'Success') {
    if (r.result?.message) throw conversionError(String(r.result.message))
    throw conversionError(`response.result.status was '${status ?? ''}', not 'Success'`)
  }
  return Array.isArray(r.convertedObjects) ? r.convertedObjects : []
}

/** validateConvertedObject: what the webhook must not change (a message, or undefined). */
function sameIdentity(a: any, b: any): string | undefined {
  const am = a.metadata ?? {}
  const bm = typeof b.metadata === 'object' && b.metadata !== null ? b.metadata : {}
  if (a.kind !== b.kind) return `must have the same kind: ${a.kind} != ${b.kind}`
  for (const [field, label] of [
    ['name', 'name'],
    ['namespace', 'namespace'],
    ['uid', 'UID'],
  ] as const)
    if ((am[field] ?? '') !== (bm[field] ?? '')) return `must have the same ${label}: ${am[field] ?? ''} != ${bm[field] ?? ''}`
  return undefined
}

/** restoreObjectMeta: the original metadata, with the webhook's labels and annotations (checked). */
function restoreMeta(original: any, answered: unknown): any {
  if (answered === undefined) throw conversionError('missing metadata in converted object')
  if (typeof answered !== 'object' || answered === null || Array.isArray(answered))
    throw conversionError(`invalid metadata of type ${goType(answered)} in converted object`)
  const meta: any = { ...original }
  for (const field of ['labels', 'annotations'] as const) {
    const v = (answered as any)[field]
    if (v === undefined || v === null) {
      delete meta[field]
      continue
    }
    if (typeof v !== 'object' || Array.isArray(v))
      throw conversionError(`invalid metadata.${field} of type ${goType(v)} in converted object`)
    for (const [k, x] of Object.entries(v))
      if (typeof x !== 'string') throw conversionError(`metadata.${field}[${k}] must be a string, but is ${goType(x)} in converted object`)
    meta[field] = v
  }
  const causes = metaCauses({ labels: meta.labels, annotations: meta.annotations })
  if (causes.length) throw conversionError(causes.map((c) => `${c.field}: ${c.message}`).join(', '))
  return meta
}

function goType(v: unknown): string {
  if (v === null) return '<nil>'
  if (Array.isArray(v)) return '[]interface {}'
  return { number: 'float64', boolean: 'bool', string: 'string', object: 'map[string]interface {}' }[typeof v as string] ?? typeof v
}

/** A conversion failure as a watch's ERROR event object (a 500 Status). */
export function conversionFailure(e: unknown): StatusError {
  return e instanceof StatusError ? e : internalError((e as Error)?.message ?? String(e))
}
