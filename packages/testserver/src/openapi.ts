// OpenAPI v3 documents for the served kinds: enough for kubectl's field validation (it checks that
// the PATCH operation takes `fieldValidation`, then lets the server validate) and `kubectl explain`.
// Invariants:
// - `/openapi/v3` lists one document per served group-version; each document's URL carries a hash of
//   its content, so clients that cache by hash see registrations made at run time.
// - Every kind's schema carries `x-kubernetes-group-version-kind` (how kubectl finds it); a custom
//   kind's schema is its CRD's openAPIV3Schema; a built-in kind's comes from builtin-openapi.json
//   (generated from @kubernetes/client-node's models by scripts/gen-builtin-openapi.mjs: every field
//   with its type and the first sentence of its description), with the schemas it refers to, so
//   `kubectl explain deployment.spec.template` works.
import { createHash } from 'node:crypto'
import type { Registry, ResourceType } from './resources.ts'
import { builtinOpenApi } from './builtin-openapi.ts'

/** The names of the schemas `s` refers to, transitively (added to `into`). */
function refsOf(s: unknown, into: Set<string>, all: Record<string, Record<string, unknown>>): void {
  if (Array.isArray(s)) return s.forEach((x) => refsOf(x, into, all))
  if (typeof s !== 'object' || s === null) return
  for (const [k, v] of Object.entries(s)) {
    if (k === '$ref' && typeof v === 'string') {
      const name = v.slice('#/components/schemas/'.length)
      if (!into.has(name) && all[name]) {
        into.add(name)
        refsOf(all[name], into, all)
      }
    } else refsOf(v, into, all)
  }
}

type Schema = Record<string, unknown>
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'
const ref = (name: string): Schema => ({ allOf: [{ $ref: `#/components/schemas/${name}` }] })
const str = (description: string): Schema => ({ type: 'string', description })
const strMap = (description: string): Schema => ({ type: 'object', additionalProperties: { type: 'string', default: '' }, description })

const OBJECT_META: Schema = {
  type: 'object',
  description: 'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
  properties: {
    name: str('Name must be unique within a namespace.'),
    generateName: str(
      'GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided.',
    ),
    namespace: str('Namespace defines the space within which each name must be unique.'),
    uid: str('UID is the unique in time and space value for this object, set by the server.'),
    resourceVersion: str('An opaque value that represents the internal version of this object.'),
    generation: {
      type: 'integer',
      format: 'int64',
      description: 'A sequence number representing a specific generation of the desired state.',
    },
    creationTimestamp: { type: 'string', format: 'date-time', description: 'When this object was created, set by the server.' },
    deletionTimestamp: { type: 'string', format: 'date-time', description: 'When this resource will be deleted, set by the server.' },
    labels: strMap('Map of string keys and values that can be used to organize and categorize objects.'),
    annotations: strMap('Annotations is an unstructured key value map stored with a resource.'),
    finalizers: {
      type: 'array',
      items: { type: 'string', default: '' },
      'x-kubernetes-list-type': 'set',
      description: 'Must be empty before the object is deleted from the registry.',
    },
    ownerReferences: {
      type: 'array',
      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['uid'],
      description: 'List of objects depended by this object.',
    },
    managedFields: {
      type: 'array',
      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      description: 'Maps workflow-id and version to the set of fields that are managed by that workflow.',
    },
  },
}

/** Kind-specific fields of the built-in kinds that have a small, stable schema. */
const BUILTIN_FIELDS: Record<string, { description: string; properties: Record<string, Schema> }> = {
  '/ConfigMap': {
    description: 'ConfigMap holds configuration data for pods to consume.',
    properties: {
      data: strMap("Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'."),
      binaryData: {
        type: 'object',
        additionalProperties: { type: 'string', format: 'byte' },
        description: 'BinaryData contains the binary data.',
      },
      immutable: {
        type: 'boolean',
        description: 'Immutable, if set to true, ensures that data stored in the ConfigMap cannot be updated.',
      },
    },
  },
  '/Secret': {
    description: 'Secret holds secret data of a certain type.',
    properties: {
      data: {
        type: 'object',
        additionalProperties: { type: 'string', format: 'byte' },
        description: 'Data contains the secret data, base64 encoded.',
      },
      stringData: strMap('stringData allows specifying non-binary secret data in string form. It is write-only.'),
      type: str('Used to facilitate programmatic handling of secret data.'),
      immutable: { type: 'boolean', description: 'Immutable, if set to true, ensures that data stored in the Secret cannot be updated.' },
    },
  },
  'coordination.k8s.io/Lease': {
    description: 'Lease defines a lease concept.',
    properties: {
      spec: {
        type: 'object',
        description: 'spec contains the specification of the Lease.',
        properties: {
          holderIdentity: str('holderIdentity contains the identity of the holder of a current lease.'),
          leaseDurationSeconds: {
            type: 'integer',
            format: 'int32',
            description: 'leaseDurationSeconds is a duration that candidates for a lease need to wait to force acquire it.',
          },
          acquireTime: { type: 'string', format: 'date-time', description: 'acquireTime is a time when the current lease was acquired.' },
          renewTime: {
            type: 'string',
            format: 'date-time',
            description: 'renewTime is a time when the current holder of a lease has last updated the lease.',
          },
          leaseTransitions: {
            type: 'integer',
            format: 'int32',
            description: 'leaseTransitions is the number of transitions of a lease between holders.',
          },
        },
      },
    },
  },
}

export function schemaName(t: ResourceType): string {
  if (!t.builtin) return `${t.group.split('.').reverse().join('.')}.${t.version}.${t.kind}`
  const g = t.group === '' ? 'core' : t.group.replace(/\.k8s\.io$/, '').replace(/\./g, '_')
  return `io.k8s.api.${g}.${t.version}.${t.kind}`
}

function kindSchema(t: ResourceType): Schema {
  const gvk = [{ group: t.group, version: t.version, kind: t.kind }]
  const base: Record<string, Schema> = {
    apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
    kind: str('Kind is a string value representing the REST resource this object represents.'),
    metadata: { ...ref(META), description: "Standard object's metadata." },
  }
  if (!t.builtin) {
    const s = (t.schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }) as Schema
    return {
      ...s,
      properties: { ...(s.properties as Record<string, Schema> | undefined), ...base },
      'x-kubernetes-group-version-kind': gvk,
    }
  }
  const model = builtinOpenApi().kinds[`${t.group}/${t.kind}`]
  const generated = model ? builtinOpenApi().schemas[model] : undefined
  if (generated) {
    const props = { ...(generated.properties as Record<string, Schema>) }
    // metadata is the document's ObjectMeta schema, as on a real server
    props.metadata = base.metadata!
    return { ...generated, properties: props, 'x-kubernetes-group-version-kind': gvk }
  }
  const known = BUILTIN_FIELDS[`${t.group}/${t.kind}`]
  if (known)
    return {
      type: 'object',
      description: known.description,
      properties: { ...base, ...known.properties },
      'x-kubernetes-group-version-kind': gvk,
    }
  return {
    type: 'object',
    description: `${t.kind} (fields beyond metadata are not described by this test server).`,
    properties: base,
    'x-kubernetes-preserve-unknown-fields': true,
    'x-kubernetes-group-version-kind': gvk,
  }
}

const param = (name: string, description: string): Schema => ({
  name,
  in: 'query',
  description,
  schema: { type: 'string', uniqueItems: true },
})
const WRITE_PARAMS = [
  param('dryRun', 'When present, indicates that modifications should not be persisted.'),
  param('fieldManager', 'fieldManager is a name associated with the actor or entity that is making these changes.'),
  param(
    'fieldValidation',
    'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.',
  ),
]

function paths(t: ResourceType): Record<string, Schema> {
  const prefix = t.group === '' ? `/api/${t.version}` : `/apis/${t.group}/${t.version}`
  const coll = t.namespaced ? `${prefix}/namespaces/{namespace}/${t.resource}` : `${prefix}/${t.resource}`
  const gvk = { group: t.group, version: t.version, kind: t.kind }
  const body = { content: { 'application/json': { schema: ref(schemaName(t)) } } }
  const op = (action: string, extra: Schema = {}): Schema => ({
    operationId: `${action}${t.kind}`,
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': gvk,
    responses: { '200': { description: 'OK' } },
    ...extra,
  })
  const out: Record<string, Schema> = {
    [coll]: { get: op('list'), post: op('post', { parameters: WRITE_PARAMS, requestBody: body }) },
    [`${coll}/{name}`]: {
      get: op('get'),
      put: op('put', { parameters: WRITE_PARAMS, requestBody: body }),
      delete: op('delete'),
      patch: op('patch', {
        parameters: [...WRITE_PARAMS, param('force', 'Force is going to "force" Apply requests.')],
        requestBody: {
          content: {
            'application/merge-patch+json': { schema: { type: 'object' } },
            'application/apply-patch+yaml': { schema: { type: 'object' } },
          },
        },
      }),
    },
  }
  if (t.status)
    out[`${coll}/{name}/status`] = {
      get: op('get'),
      put: op('put', { parameters: WRITE_PARAMS, requestBody: body }),
      patch: op('patch', { parameters: WRITE_PARAMS }),
    }
  return out
}

const gvPath = (group: string, version: string) => (group === '' ? `api/${version}` : `apis/${group}/${version}`)

/** The OpenAPI v3 document of one group-version (undefined when nothing is served there). */
export function openApiDocument(reg: Registry, group: string, version: string): Schema | undefined {
  const types = reg.all().filter((t) => t.group === group && t.version === version)
  if (types.length === 0) return undefined
  const schemas: Record<string, Schema> = { [META]: OBJECT_META }
  let allPaths: Record<string, Schema> = {}
  const refs = new Set<string>()
  for (const t of types.sort((a, b) => a.resource.localeCompare(b.resource))) {
    schemas[schemaName(t)] = kindSchema(t)
    if (t.builtin) refsOf(schemas[schemaName(t)], refs, builtinOpenApi().schemas)
    allPaths = { ...allPaths, ...paths(t) }
  }
  for (const name of refs) schemas[name] ??= builtinOpenApi().schemas[name]!
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.31.0-statewright' }, paths: allPaths, components: { schemas } }
}

/** `/openapi/v3`: the group-versions and the URLs of their documents. */
export function openApiIndex(reg: Registry): Schema {
  const paths: Record<string, Schema> = {}
  for (const [group, versions] of [...reg.groups()].sort()) {
    for (const v of [...versions].sort()) {
      const doc = openApiDocument(reg, group, v)
      const hash = createHash('sha256').update(JSON.stringify(doc)).digest('hex').slice(0, 32).toUpperCase()
      paths[gvPath(group, v)] = { serverRelativeURL: `/openapi/v3/${gvPath(group, v)}?hash=${hash}` }
    }
  }
  return { paths }
}
