// Field schemas for structured merge (server-side apply, managedFields): how each list and map merges.
// Invariants:
// - A list is `atomic` (replaced whole, owned as one field), a `set` (of scalars, owned per value) or
//   a `map` (items keyed by `keys`, owned per item). A map is granular (owned per key) unless atomic.
// - metadata follows ObjectMeta's schema for every kind (finalizers a set, ownerReferences keyed by
//   uid, labels/annotations granular), whatever a CRD says about it, as on a real server.
// - Custom kinds follow their CRD's openAPIV3Schema (`x-kubernetes-list-type`,
//   `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`); a list the schema says nothing about is
//   atomic. Built-in kinds have no full schema here: their keyed lists are known by field name
//   (containers by name, conditions by type, ...), the way their Go types declare them.
import { StatusError } from './status.ts'

/** A map list's `defaults`: key fields the item schema defaults, which an item may leave out (structured-merge-diff uses the default). */
export type ListType = { type: 'atomic' } | { type: 'set' } | { type: 'map'; keys: string[]; defaults?: Record<string, unknown> }

export interface FieldSchema {
  /** The schema of a field of this map (an object's property or a map value). */
  field(name: string): FieldSchema
  /** The schema of this list's items. */
  item(): FieldSchema
  /** How this list merges; `items` lets name-deduced schemas check that every item has the key. */
  list(items: readonly unknown[]): ListType
  /** This map is replaced whole and owned as one field. */
  readonly atomicMap: boolean
  /**
   * An update that creates this object node owns the node itself (FieldsV1 `".": {}`), as
   * structured-merge-diff's comparison reports a map or pointer struct that appeared: every object
   * of a custom kind; of a built-in kind the maps and pointer structs (not the structs Go always serializes).
   */
  readonly ownedWhenCreated: boolean
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const ATOMIC: ListType = { type: 'atomic' }
const SET: ListType = { type: 'set' }

/** Merge keys of the built-in kinds' associative lists, by field name. */
export const BUILTIN_MERGE_KEYS: Record<string, string | ((items: readonly unknown[]) => string)> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  imagePullSecrets: 'name',
  conditions: 'type',
  ownerReferences: 'uid',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
  ports: (items) => (items.some((i) => isObj(i) && 'containerPort' in i) ? 'containerPort' : 'port'),
}
/** Built-in lists of scalars that merge as sets. */
export const BUILTIN_SET_LISTS = new Set(['finalizers'])
/** Built-in fields that are Go maps or pointer structs (absent until set), by field name: the common ones. */
export const BUILTIN_MAPS_AND_POINTERS = new Set([
  'labels',
  'annotations',
  'data',
  'binaryData',
  'stringData',
  'nodeSelector',
  'matchLabels',
  'limits',
  'requests',
  'rollingUpdate',
  'securityContext',
  'affinity',
  'livenessProbe',
  'readinessProbe',
  'startupProbe',
  'lifecycle',
  'sessionAffinityConfig',
])

export function builtinMergeKey(field: string, items: readonly unknown[]): string | undefined {
  const k = BUILTIN_MERGE_KEYS[field]
  return typeof k === 'function' ? k(items) : k
}

/** A built-in kind's field, its list type deduced from the field name. */
class DeducedSchema implements FieldSchema {
  readonly atomicMap = false
  readonly ownedWhenCreated: boolean
  constructor(private readonly name: string) {
    this.ownedWhenCreated = BUILTIN_MAPS_AND_POINTERS.has(name)
  }
  field(name: string): FieldSchema {
    return deduced(name)
  }
  item(): FieldSchema {
    return deduced('')
  }
  list(items: readonly unknown[]): ListType {
    if (BUILTIN_SET_LISTS.has(this.name) && items.every((x) => !isObj(x) && !Array.isArray(x))) return SET
    const key = builtinMergeKey(this.name, items)
    // a list whose items lack the key cannot be keyed: the real server would refuse it; we keep it whole
    if (key && items.every((x) => isObj(x) && x[key] !== undefined)) return { type: 'map', keys: [key] }
    return ATOMIC
  }
}
const deducedCache = new Map<string, DeducedSchema>()
function deduced(name: string): DeducedSchema {
  let s = deducedCache.get(name)
  if (!s) deducedCache.set(name, (s = new DeducedSchema(name)))
  return s
}

type JSONSchemaProps = Record<string, any>

/** A custom kind's field, from its CRD's structural schema. */
class OpenApiSchema implements FieldSchema {
  readonly atomicMap: boolean
  readonly ownedWhenCreated = true
  constructor(
    private readonly s: JSONSchemaProps | undefined,
    private readonly at: string,
  ) {
    this.atomicMap = s?.['x-kubernetes-map-type'] === 'atomic'
  }
  field(name: string): FieldSchema {
    const s = this.s
    const sub = s?.properties?.[name] ?? (isObj(s?.additionalProperties) ? s.additionalProperties : undefined)
    return new OpenApiSchema(sub, `${this.at}.${name}`)
  }
  item(): FieldSchema {
    return new OpenApiSchema(isObj(this.s?.items) ? this.s.items : undefined, `${this.at}[]`)
  }
  list(items: readonly unknown[]): ListType {
    const t = this.s?.['x-kubernetes-list-type']
    if (t === 'set') return SET
    if (t !== 'map') return ATOMIC
    const keys: string[] = Array.isArray(this.s?.['x-kubernetes-list-map-keys']) ? this.s['x-kubernetes-list-map-keys'] : []
    const props = isObj(this.s?.items) && isObj(this.s.items.properties) ? this.s.items.properties : {}
    let defaults: Record<string, unknown> | undefined
    for (const k of keys) if (isObj(props[k]) && props[k].default !== undefined) (defaults ??= {})[k] = props[k].default
    for (const [i, x] of items.entries()) {
      const missing = keys.find((k) => !isObj(x) || (x[k] === undefined && defaults?.[k] === undefined))
      if (missing !== undefined) {
        throw new StatusError(
          422,
          'Invalid',
          `${this.at}: element ${i}: associative list with keys has an element that omits key field "${missing}" (and doesn't have default value)`,
        )
      }
    }
    return defaults ? { type: 'map', keys, defaults } : { type: 'map', keys }
  }
}

/** ObjectMeta's fields; every other name is deduced (labels and annotations are granular maps). */
class ObjectMetaSchema implements FieldSchema {
  readonly atomicMap = false
  readonly ownedWhenCreated = false // metadata itself is never a managed field
  field(name: string): FieldSchema {
    return deduced(name)
  }
  item(): FieldSchema {
    return deduced('')
  }
  list(): ListType {
    return ATOMIC
  }
}
const OBJECT_META = new ObjectMetaSchema()

/** The root of an object: metadata is ObjectMeta, the rest follows `rest`. */
class RootSchema implements FieldSchema {
  readonly atomicMap = false
  readonly ownedWhenCreated = false
  constructor(private readonly rest: FieldSchema) {}
  field(name: string): FieldSchema {
    return name === 'metadata' ? OBJECT_META : this.rest.field(name)
  }
  item(): FieldSchema {
    return this.rest.item()
  }
  list(items: readonly unknown[]): ListType {
    return this.rest.list(items)
  }
}

export const BUILTIN_SCHEMA: FieldSchema = new RootSchema(deduced(''))

/** The schema of a custom kind from its CRD version's `schema.openAPIV3Schema` (none: every list atomic). */
export function crdSchema(openAPIV3Schema: JSONSchemaProps | undefined): FieldSchema {
  return new RootSchema(new OpenApiSchema(openAPIV3Schema ?? {}, ''))
}

const schemaCache = new WeakMap<object, FieldSchema>()
/** The field schema of a resource type: built-in by field names, custom from its openAPIV3Schema. */
export function fieldSchemaOf(t: { builtin: boolean; schema?: JSONSchemaProps }): FieldSchema {
  if (t.builtin) return BUILTIN_SCHEMA
  let s = schemaCache.get(t)
  if (!s) schemaCache.set(t, (s = crdSchema(t.schema)))
  return s
}
