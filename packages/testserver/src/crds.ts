// What the CRD controllers of kube-apiserver do after a CustomResourceDefinition is written, and
// what its validation checks of versions and conversion: the served versions are registered (or
// unregistered), the CRD reports NamesAccepted and Established, and `status.storedVersions` lists
// every version objects may still be stored in.
// Invariants:
// - storedVersions only grows by the current storage version; a client removes versions from it
//   through /status (what a storage migration does), and a version still listed cannot leave
//   spec.versions (422), as on a real server.
// - A CRD's conversion must be valid before it is stored: strategy None or Webhook, a webhook with
//   exactly one of url (https) and service, and conversionReviewVersions including v1 or v1beta1
//   (the ConversionReview versions this server sends, the first of them the CRD lists).
import type { Registry, ResourceType } from './resources.ts'
import type { Store } from './store.ts'
import type { AdmissionRequest } from './admission.ts'
import { typesFromCrd } from './resources.ts'
import { deepEqual } from './patch.ts'
import { invalid, type StatusCause } from './status.ts'

export const isCrdType = (t: ResourceType) => t.group === 'apiextensions.k8s.io' && t.resource === 'customresourcedefinitions'

/** Registers the kinds a CRD defines and reports it Established, as the real CRD controller does. */
export function syncCrd(store: Store, registry: Registry, t: ResourceType, crd: any): void {
  if (crd.metadata.deletionTimestamp) return
  const inputs = typesFromCrd(crd)
  for (const rt of registry.all())
    if (rt.crd === crd.metadata.name && !inputs.some((i) => i.version === rt.version)) registry.unregister(rt)
  for (const i of inputs) registry.register(i)
  const names = crd.spec?.names ?? {}
  const cond = (type: string, reason: string, message: string) => ({
    type,
    status: 'True',
    lastTransitionTime: crd.metadata.creationTimestamp,
    reason,
    message,
  })
  const stored: string[] = Array.isArray(crd.status?.storedVersions) ? [...crd.status.storedVersions] : []
  for (const v of crd.spec?.versions ?? []) if (v.storage && !stored.includes(v.name)) stored.push(v.name)
  const status = {
    ...(crd.status ?? {}),
    conditions: [
      cond('NamesAccepted', 'NoConflicts', 'no conflicts found'),
      cond('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ],
    acceptedNames: {
      plural: names.plural,
      singular: names.singular ?? String(names.kind ?? '').toLowerCase(),
      kind: names.kind,
      listKind: names.listKind ?? `${names.kind}List`,
      ...(names.shortNames ? { shortNames: names.shortNames } : {}),
    },
    storedVersions: stored,
  }
  if (deepEqual(crd.status, status)) return
  store.write(t.storageKey, (put) => put({ ...crd, status }))
}

/** A CRD is gone: its kinds are no longer served, and its objects are forgotten. */
export function crdRemoved(store: Store, registry: Registry, gone: any): void {
  for (const rt of registry.all()) if (rt.crd === gone.metadata.name) registry.unregister(rt)
  const first = typesFromCrd(gone)[0]
  if (first && !registry.all().some((rt) => rt.storageKey === `${first.group}/${first.resource}`))
    void store.drop(`${first.group}/${first.resource}`)
}

/** The CRD validation of versions and conversion (a validating admission step). */
export function crdVersionsStep(req: AdmissionRequest): void {
  if (!isCrdType(req.type)) return
  const crd = req.object
  const causes: StatusCause[] = []
  const bad = (field: string, message: string, reason = 'FieldValueInvalid') => causes.push({ reason, message, field })
  const versions: any[] = Array.isArray(crd?.spec?.versions) ? crd.spec.versions : []
  const names = versions.map((v) => v?.name)
  if (versions.length && versions.filter((v) => v?.storage === true).length !== 1)
    bad('spec.versions', 'Invalid value: must have exactly one version marked as storage version')
  const storedVersions: unknown[] = Array.isArray(crd?.status?.storedVersions) ? crd.status.storedVersions : []
  storedVersions.forEach((v, i) => {
    if (!names.includes(v)) bad(`status.storedVersions[${i}]`, `Invalid value: ${JSON.stringify(v)}: must appear in spec.versions`)
  })
  if (req.subresource !== 'status') conversionCauses(crd?.spec?.conversion, bad)
  if (causes.length) throw invalid(crd.kind ?? 'CustomResourceDefinition', 'apiextensions.k8s.io', crd?.metadata?.name ?? '', causes)
}

function conversionCauses(c: any, bad: (field: string, message: string, reason?: string) => void): void {
  if (c === undefined || c === null) return
  const strategy = c.strategy ?? 'None'
  if (strategy !== 'None' && strategy !== 'Webhook') {
    bad(
      'spec.conversion.strategy',
      `Unsupported value: ${JSON.stringify(strategy)}: supported values: "None", "Webhook"`,
      'FieldValueNotSupported',
    )
    return
  }
  if (strategy === 'None') {
    if (c.webhook !== undefined && c.webhook !== null)
      bad('spec.conversion.webhook', 'Forbidden: should not be set when strategy is not set to Webhook', 'FieldValueForbidden')
    return
  }
  const w = c.webhook
  if (!w) return bad('spec.conversion.webhook', 'Required value: required when strategy is set to Webhook', 'FieldValueRequired')
  const cc = w.clientConfig
  if (!cc) bad('spec.conversion.webhook.clientConfig', 'Required value: required when strategy is set to Webhook', 'FieldValueRequired')
  else if (!!cc.url === !!cc.service)
    bad('spec.conversion.webhook.clientConfig', 'Required value: exactly one of url or service is required', 'FieldValueRequired')
  else if (cc.url && !/^https:\/\//.test(String(cc.url)))
    bad('spec.conversion.webhook.clientConfig.url', `Invalid value: ${JSON.stringify(cc.url)}: 'https' is the only allowed URL scheme`)
  const rv = w.conversionReviewVersions
  if (!Array.isArray(rv) || rv.length === 0) bad('spec.conversion.webhook.conversionReviewVersions', 'Required value', 'FieldValueRequired')
  else if (!rv.some((v) => v === 'v1' || v === 'v1beta1'))
    bad(
      'spec.conversion.webhook.conversionReviewVersions',
      `Invalid value: []string{${rv.map((v) => JSON.stringify(v)).join(', ')}}: must include at least one of v1, v1beta1`,
    )
}
