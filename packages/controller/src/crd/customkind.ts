// A custom kind declared once from a schema library that gives both a JSON Schema and a static type
// (TypeBox: its schemas *are* JSON Schema objects, so nothing is converted and the CRD says what the
// type says); from it come the TypeScript type of the kind's objects, its CustomResourceDefinition
// (structural openAPIV3Schema, status subresource, printer columns) and a typed kind for watch().
// Invariants:
// - No import of TypeBox: a schema's static type is read from the `static` member every TypeBox
//   schema type carries, so the package's types check without TypeBox installed.
// - The CRD's schema is structural, as the API server demands: TypeBox's renderings that are not
//   (a union of literals, a Record, `const`) are rewritten to their structural equivalents (an enum,
//   additionalProperties); anything else that is not structural is a ConfigError naming the field.
// - status has `observedGeneration` and `conditions` (a map list keyed by type, metav1.Condition),
//   which Manager.reconcile writes, unless `conditions: false`.
// - Versions (versions.ts): the options' schemas are the storage version's, the hub; withVersion()
//   returns a new kind with one more version (its own schemas and conversions, or the hub's schemas),
//   so each version's object type is known; the CRD lists them all, the storage version first, and
//   has spec.conversion Webhook when a version converts with functions (None when all share schemas).
import { ConfigError } from '../errors.ts'
import type { KubeObject, ResourceRef } from '@statewright/k8s'
import { structural } from './structural.ts'
import {
  KindConversion,
  checkVersionName,
  versionEntry,
  type SameSchemaVersionOptions,
  type VersionEntry,
  type VersionOptions,
} from './versions.ts'
import type { CustomObject, PrinterColumn, SchemaLike } from './customobject.ts'

export type { CustomObject, PrinterColumn, SchemaLike, StaticOf } from './customobject.ts'

export interface CustomKindOptions<Spec extends SchemaLike, Status extends SchemaLike | undefined, V extends string = string> {
  group: string
  /** The storage version, whose schemas these are (default "v1"); withVersion() adds others. */
  version?: V
  kind: string
  /** Default: the kind lower case with an "s" ("Backup" -> "backups"). */
  plural?: string
  shortNames?: string[]
  /** Default "Namespaced". */
  scope?: 'Namespaced' | 'Cluster'
  spec: Spec
  status?: Status
  /** status.observedGeneration and status.conditions (default true). */
  conditions?: boolean
  printerColumns?: PrinterColumn[]
}

/**
 * A custom kind: a typed ResourceRef of its storage version (watch() it) with its CRD. `T` is the
 * storage (hub) version's object type, `V` its name, `Vs` the other versions' object types by name.
 */
export interface CustomKind<T extends object, V extends string = string, Vs extends Record<string, object> = {}> extends ResourceRef<T> {
  readonly group: string
  /** The storage version (the hub the others convert through). */
  readonly storageVersion: V
  /** Every version, the storage version first. */
  readonly versions: readonly string[]
  readonly plural: string
  /** The CustomResourceDefinition (apiextensions.k8s.io/v1). */
  readonly crd: KubeObject
  /** How objects convert between the versions (undefined with one version). */
  readonly conversion: KindConversion | undefined
  /** The typed kind of one version (watch() it to read the kind in that version). */
  version<K extends V | (keyof Vs & string)>(name: K): ResourceRef<K extends keyof Vs ? Vs[K] : T>
  /** The kind with one more served version, converted to and from this kind's storage version. */
  withVersion<N extends string, Spec extends SchemaLike, Status extends SchemaLike | undefined = undefined>(
    name: N,
    o: VersionOptions<T, Spec, Status>,
  ): CustomKind<T, V, Vs & Record<N, CustomObject<Spec, Status>>>
  /** The kind with one more served version of the same schemas (renamed, not converted). */
  withVersion<N extends string>(name: N, o: SameSchemaVersionOptions): CustomKind<T, V, Vs & Record<N, T>>
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Declares a custom kind from schemas of its spec and status (see the file's comment). */
export function customKind<Spec extends SchemaLike, Status extends SchemaLike | undefined = undefined, V extends string = 'v1'>(
  o: CustomKindOptions<Spec, Status, V>,
): CustomKind<CustomObject<Spec, Status>, V> {
  const what = `customKind ${o?.kind}`
  if (!o?.group || !NAME.test(o.group) || !o.group.includes('.'))
    throw new ConfigError(`${what}: group must be a domain such as "backup.example.com", not ${JSON.stringify(o?.group)}`)
  if (!/^[A-Z][A-Za-z0-9]*$/.test(o.kind ?? '')) throw new ConfigError(`customKind: kind must be CamelCase, not ${JSON.stringify(o?.kind)}`)
  const plural = o.plural ?? `${o.kind.toLowerCase()}s`
  if (!NAME.test(plural)) throw new ConfigError(`${what}: plural must be lower case, not ${JSON.stringify(plural)}`)
  const hub: VersionEntry = {
    name: o.version ?? 'v1',
    spec: o.spec,
    status: o.status,
    ...(o.printerColumns ? { printerColumns: o.printerColumns } : {}),
  }
  checkVersionName(what, hub.name)
  return build(o, plural, hub, [])
}

function build(o: CustomKindOptions<any, any, any>, plural: string, hub: VersionEntry, spokes: VersionEntry[]): CustomKind<any, any, any> {
  const what = `customKind ${o.kind}`
  const entries = [hub, ...spokes]
  const conversion = spokes.length ? new KindConversion(o.group, o.kind, hub.name, spokes) : undefined
  const crd: KubeObject = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${o.group}` },
    spec: {
      group: o.group,
      scope: o.scope ?? 'Namespaced',
      names: {
        plural,
        singular: o.kind.toLowerCase(),
        kind: o.kind,
        listKind: `${o.kind}List`,
        ...(o.shortNames ? { shortNames: o.shortNames } : {}),
      },
      versions: entries.map((v) => crdVersion(v, v === hub, o.conditions !== false, `${what}${v === hub ? '' : ` ${v.name}`}`)),
      ...(conversion?.strategy === 'Webhook'
        ? { conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'] } } }
        : conversion
          ? { conversion: { strategy: 'None' } }
          : {}),
    },
  }
  const namespaced = (o.scope ?? 'Namespaced') === 'Namespaced'
  const refs = new Map(entries.map((v) => [v.name, { apiVersion: `${o.group}/${v.name}`, kind: o.kind, resource: plural, namespaced }]))
  const kind: CustomKind<any, any, any> = Object.freeze({
    apiVersion: `${o.group}/${hub.name}`,
    kind: o.kind,
    resource: plural,
    namespaced,
    group: o.group,
    storageVersion: hub.name,
    versions: Object.freeze(entries.map((v) => v.name)),
    plural,
    crd,
    conversion,
    version(name: string) {
      if (name === hub.name) return kind
      const ref = refs.get(name)
      if (!ref) throw new ConfigError(`${what}: no version ${JSON.stringify(name)} (it has ${entries.map((v) => v.name).join(', ')})`)
      return Object.freeze({ ...ref })
    },
    withVersion(name: string, v: unknown) {
      if (refs.has(name)) throw new ConfigError(`${what}: version ${name} is declared twice`)
      return build(o, plural, hub, [...spokes, versionEntry(what, name, v, hub)])
    },
  })
  return kind
}

/** One entry of the CRD's versions: its structural schema, status subresource and columns. */
function crdVersion(v: VersionEntry, storage: boolean, conditions: boolean, what: string): Record<string, unknown> {
  const spec = structural(v.spec, `${what}: spec`)
  const statusProps: Record<string, unknown> = {}
  if (v.status !== undefined) {
    const s = structural(v.status, `${what}: status`) as { type?: string; properties?: Record<string, unknown> }
    if (s.type !== 'object') throw new ConfigError(`${what}: status must be an object schema`)
    Object.assign(statusProps, s.properties ?? {})
  }
  if (conditions) {
    statusProps.observedGeneration ??= { type: 'integer', format: 'int64' }
    statusProps.conditions ??= CONDITIONS
  }
  const hasStatus = Object.keys(statusProps).length > 0
  return {
    name: v.name,
    served: v.served ?? true,
    storage,
    ...(v.deprecated ? { deprecated: true } : {}),
    ...(v.deprecationWarning !== undefined ? { deprecationWarning: v.deprecationWarning } : {}),
    ...(hasStatus ? { subresources: { status: {} } } : {}),
    ...(v.printerColumns ? { additionalPrinterColumns: v.printerColumns } : {}),
    schema: {
      openAPIV3Schema: {
        type: 'object',
        required: ['spec'],
        properties: { spec, ...(hasStatus ? { status: { type: 'object', properties: statusProps } } : {}) },
      },
    },
  }
}

/** metav1.Condition as a map list keyed by type (so that managers keep each other's conditions). */
const CONDITIONS = {
  type: 'array',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  items: {
    type: 'object',
    required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
    properties: {
      type: { type: 'string', maxLength: 316 },
      status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
      reason: { type: 'string', maxLength: 1024 },
      message: { type: 'string', maxLength: 32768 },
      lastTransitionTime: { type: 'string', format: 'date-time' },
      observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
    },
  },
}
