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
import { ConfigError } from '../errors.ts'
import type { KubeObject, ResourceRef } from '@statewright/k8s'
import type { Condition } from '../conditions.ts'
import { structural } from './structural.ts'

/** A schema whose static type is known (any TypeBox schema), or a plain JSON Schema object. */
export type SchemaLike = object
/** The static type of a TypeBox schema (unknown for a plain JSON Schema). */
export type StaticOf<S> = S extends { static: infer T } ? T : unknown

export interface PrinterColumn {
  name: string
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date'
  jsonPath: string
  description?: string
  priority?: number
}

export interface CustomKindOptions<Spec extends SchemaLike, Status extends SchemaLike | undefined> {
  group: string
  /** Default "v1". */
  version?: string
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

/** The objects of a custom kind: metadata, the spec's type, the status's type with its conditions. */
export type CustomObject<Spec extends SchemaLike, Status extends SchemaLike | undefined> = KubeObject & {
  apiVersion: string
  kind: string
  spec: StaticOf<Spec>
  status?: (Status extends SchemaLike ? StaticOf<Status> : {}) & { observedGeneration?: number; conditions?: Condition[] }
}

/** A custom kind: a typed ResourceRef (watch() it) with its CRD. */
export interface CustomKind<T extends object> extends ResourceRef<T> {
  readonly group: string
  readonly version: string
  readonly plural: string
  /** The CustomResourceDefinition (apiextensions.k8s.io/v1). */
  readonly crd: KubeObject
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Declares a custom kind from schemas of its spec and status (see the file's comment). */
export function customKind<Spec extends SchemaLike, Status extends SchemaLike | undefined = undefined>(
  o: CustomKindOptions<Spec, Status>,
): CustomKind<CustomObject<Spec, Status>> {
  const what = `customKind ${o?.kind}`
  if (!o?.group || !NAME.test(o.group) || !o.group.includes('.'))
    throw new ConfigError(`${what}: group must be a domain such as "backup.example.com", not ${JSON.stringify(o?.group)}`)
  if (!/^[A-Z][A-Za-z0-9]*$/.test(o.kind ?? '')) throw new ConfigError(`customKind: kind must be CamelCase, not ${JSON.stringify(o?.kind)}`)
  const version = o.version ?? 'v1'
  const plural = o.plural ?? `${o.kind.toLowerCase()}s`
  if (!NAME.test(plural)) throw new ConfigError(`${what}: plural must be lower case, not ${JSON.stringify(plural)}`)
  const spec = structural(o.spec, `${what}: spec`)
  const statusProps: Record<string, unknown> = {}
  if (o.status !== undefined) {
    const s = structural(o.status, `${what}: status`) as { type?: string; properties?: Record<string, unknown> }
    if (s.type !== 'object') throw new ConfigError(`${what}: status must be an object schema`)
    Object.assign(statusProps, s.properties ?? {})
  }
  if (o.conditions !== false) {
    statusProps.observedGeneration ??= { type: 'integer', format: 'int64' }
    statusProps.conditions ??= CONDITIONS
  }
  const hasStatus = Object.keys(statusProps).length > 0
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
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          ...(hasStatus ? { subresources: { status: {} } } : {}),
          ...(o.printerColumns ? { additionalPrinterColumns: o.printerColumns } : {}),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: { spec, ...(hasStatus ? { status: { type: 'object', properties: statusProps } } : {}) },
            },
          },
        },
      ],
    },
  }
  return Object.freeze({
    apiVersion: `${o.group}/${version}`,
    kind: o.kind,
    resource: plural,
    namespaced: (o.scope ?? 'Namespaced') === 'Namespaced',
    group: o.group,
    version,
    plural,
    crd,
  })
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
