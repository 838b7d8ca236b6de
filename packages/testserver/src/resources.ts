// The kind registry: which resources the server serves, built-in and registered at run time.
// Invariants:
// - A resource type is identified by (group, version, plural); `key` is "group/version/plural".
// - A kind registered in several versions shares one storage table per (group, plural): each object
//   is stored once, in the version it was stored in, and converted to the version served
//   (conversion.ts: a CRD's strategy; apiVersion only for kinds without a CRD).
// - Listeners are told synchronously of every registration change, so storage and discovery never
//   see a type the other does not know.

import { crdDeprecationWarning } from './deprecation.ts'
import { MORE_BUILTIN_TYPES } from './builtin-kinds.ts'
import type { ResourceType, ResourceTypeInput } from './resource-type.ts'

export type { CustomResourceColumnDefinition, ResourceType, ResourceTypeInput, ScalePaths } from './resource-type.ts'

export function typeKey(group: string, version: string, resource: string): string {
  return `${group}/${version}/${resource}`
}
export function apiVersionOf(t: { group: string; version: string }): string {
  return t.group ? `${t.group}/${t.version}` : t.version
}

export function makeType(input: ResourceTypeInput): ResourceType {
  const group = input.group ?? ''
  const t: ResourceType = {
    group,
    version: input.version,
    resource: input.resource,
    singular: input.singular ?? input.kind.toLowerCase(),
    kind: input.kind,
    listKind: input.listKind ?? `${input.kind}List`,
    namespaced: input.namespaced ?? true,
    shortNames: input.shortNames ?? [],
    categories: input.categories ?? [],
    status: input.status ?? false,
    builtin: input.builtin ?? false,
    generation: input.generation ?? !(input.builtin ?? false),
    selectableFields: input.selectableFields ?? [],
    unconditionalUpdate: input.unconditionalUpdate ?? input.builtin ?? false,
    scale: input.scale ?? false,
    scalePaths: input.scalePaths ?? { specReplicas: '.spec.replicas', statusReplicas: '.status.replicas' },
    storageKey: `${group}/${input.resource}`,
  }
  if (input.crd) t.crd = input.crd
  if (input.printerColumns) t.printerColumns = input.printerColumns
  if (input.schema) t.schema = input.schema
  if (input.deprecationWarning !== undefined) t.deprecationWarning = input.deprecationWarning
  return t
}

const B = { builtin: true, generation: false }
export const BUILTIN_TYPES: ResourceTypeInput[] = [
  {
    ...B,
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    status: true,
    selectableFields: ['status.phase'],
  },
  { ...B, version: 'v1', resource: 'configmaps', kind: 'ConfigMap', shortNames: ['cm'] },
  { ...B, version: 'v1', resource: 'secrets', kind: 'Secret', selectableFields: ['type'] },
  { ...B, version: 'v1', resource: 'services', kind: 'Service', shortNames: ['svc'], status: true, categories: ['all'] },
  { ...B, version: 'v1', resource: 'serviceaccounts', kind: 'ServiceAccount', shortNames: ['sa'] },
  {
    ...B,
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    shortNames: ['po'],
    status: true,
    generation: true,
    categories: ['all'],
    selectableFields: [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'status.phase',
      'status.podIP',
    ],
  },
  {
    ...B,
    version: 'v1',
    resource: 'nodes',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    status: true,
    selectableFields: ['spec.unschedulable'],
  },
  {
    ...B,
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    shortNames: ['ev'],
    selectableFields: [
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
      'source',
      'type',
    ],
  },
  { ...B, group: 'events.k8s.io', version: 'v1', resource: 'events', kind: 'Event', shortNames: ['ev'] },
  { ...B, group: 'coordination.k8s.io', version: 'v1', resource: 'leases', kind: 'Lease', unconditionalUpdate: false },
  {
    ...B,
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    kind: 'Deployment',
    shortNames: ['deploy'],
    status: true,
    generation: true,
    scale: true,
    categories: ['all'],
  },
  {
    ...B,
    group: 'apps',
    version: 'v1',
    resource: 'statefulsets',
    kind: 'StatefulSet',
    shortNames: ['sts'],
    status: true,
    generation: true,
    scale: true,
    categories: ['all'],
  },
  {
    ...B,
    group: 'apps',
    version: 'v1',
    resource: 'daemonsets',
    kind: 'DaemonSet',
    shortNames: ['ds'],
    status: true,
    generation: true,
    categories: ['all'],
  },
  {
    ...B,
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    status: true,
    generation: true,
  },
  ...MORE_BUILTIN_TYPES,
]

export type RegistryListener = (change: 'added' | 'removed', t: ResourceType) => void

export class Registry {
  private readonly types = new Map<string, ResourceType>()
  private readonly listeners: RegistryListener[] = []

  constructor(builtins = BUILTIN_TYPES) {
    for (const b of builtins) this.register(b)
  }
  onChange(l: RegistryListener): void {
    this.listeners.push(l)
  }

  register(input: ResourceTypeInput | ResourceType): ResourceType {
    const t = 'storageKey' in input ? input : makeType(input)
    const key = typeKey(t.group, t.version, t.resource)
    const old = this.types.get(key)
    if (old) this.unregister(old)
    this.types.set(key, t)
    for (const l of this.listeners) l('added', t)
    return t
  }
  unregister(t: ResourceType): void {
    const key = typeKey(t.group, t.version, t.resource)
    if (this.types.get(key) !== t) return
    this.types.delete(key)
    for (const l of this.listeners) l('removed', t)
  }
  get(group: string, version: string, resource: string): ResourceType | undefined {
    return this.types.get(typeKey(group, version, resource))
  }
  /** Finds a type by group + kind (any version), preferring `version` when given. */
  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/', 2) as [string, string]) : ['', apiVersion]
    for (const t of this.types.values()) if (t.group === group && t.version === version && t.kind === kind) return t
    return undefined
  }
  all(): ResourceType[] {
    return [...this.types.values()]
  }
  /** Other types sharing storage with `t` (the same kind in other versions). */
  siblings(t: ResourceType): ResourceType[] {
    return this.all().filter((o) => o.storageKey === t.storageKey)
  }
  groups(): Map<string, string[]> {
    const m = new Map<string, string[]>()
    for (const t of this.types.values()) {
      const vs = m.get(t.group) ?? []
      if (!vs.includes(t.version)) vs.push(t.version)
      m.set(t.group, vs)
    }
    return m
  }
}

/** The resource types a CustomResourceDefinition object defines (one per served version). */
export function typesFromCrd(crd: any): ResourceTypeInput[] {
  const spec = crd?.spec ?? {}
  const names = spec.names ?? {}
  const out: ResourceTypeInput[] = []
  for (const v of spec.versions ?? []) {
    if (v.served === false) continue
    const input: ResourceTypeInput = {
      group: spec.group,
      version: v.name,
      resource: names.plural,
      kind: names.kind,
      singular: names.singular ?? String(names.kind ?? '').toLowerCase(),
      listKind: names.listKind ?? `${names.kind}List`,
      namespaced: spec.scope !== 'Cluster',
      shortNames: names.shortNames ?? [],
      categories: names.categories ?? [],
      status: !!v.subresources?.status,
      scale: !!v.subresources?.scale,
      scalePaths: {
        specReplicas: v.subresources?.scale?.specReplicasPath ?? '.spec.replicas',
        statusReplicas: v.subresources?.scale?.statusReplicasPath ?? '.status.replicas',
        ...(v.subresources?.scale?.labelSelectorPath ? { selector: v.subresources.scale.labelSelectorPath } : {}),
      },
      builtin: false,
      generation: true,
      selectableFields: (v.selectableFields ?? []).map((f: any) => String(f.jsonPath ?? '').replace(/^\./, '')),
      crd: crd.metadata?.name,
    }
    if (Array.isArray(v.additionalPrinterColumns)) input.printerColumns = v.additionalPrinterColumns
    const schema = v.schema?.openAPIV3Schema ?? spec.validation?.openAPIV3Schema
    if (schema) input.schema = schema
    const warning = crdDeprecationWarning(v, spec)
    if (warning !== undefined) input.deprecationWarning = warning
    out.push(input)
  }
  return out
}
