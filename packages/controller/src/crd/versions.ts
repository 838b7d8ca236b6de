// The versions of a custom kind and how its objects convert between them: controller-runtime's
// hub-and-spoke model. The storage version is the hub; every other served version (a spoke) gives
// toHub (controller-runtime's ConvertTo) and fromHub (ConvertFrom), so that N versions need 2(N-1)
// functions, not N(N-1), and a conversion between two spokes goes spoke -> hub -> spoke.
// Invariants:
// - A version declared without a schema of its own has the hub's fields: it converts by rewriting
//   apiVersion (and, when no version converts, the CRD's strategy is None: the API server does it).
// - convert() never changes its input (the functions get a copy); an object already in the desired
//   version is returned as it came (the same object).
// - The functions decide spec, status, labels and annotations: apiVersion and kind are set here, and
//   any other metadata change is a ConversionError naming the object and the fields (kube-apiserver
//   refuses such a response too; its conversion keeps the stored metadata).
// - Every failure (a function that throws or returns no object, an unknown version, group or kind) is
//   a ConversionError whose message names the object and the two versions.
import { ConfigError, ConversionError } from '../errors.ts'
import type { KubeObject } from '@statewright/k8s'
import type { CustomObject, PrinterColumn, SchemaLike } from './customobject.ts'

/** What a conversion function returns: the object in the other version (apiVersion and kind are set for it). */
export type Converted<T> = { [K in keyof T as K extends 'apiVersion' | 'kind' ? never : K]: T[K] } & { apiVersion?: string; kind?: string }

export interface VersionCommon {
  /** Served by the API server (default true). */
  served?: boolean
  /** Deprecated: the API server warns a client that uses it (deprecationWarning: what it says). */
  deprecated?: boolean
  deprecationWarning?: string
  printerColumns?: PrinterColumn[]
}

/** A version with its own schemas, converted to and from the hub (the storage version). */
export interface VersionOptions<Hub, Spec extends SchemaLike, Status extends SchemaLike | undefined> extends VersionCommon {
  spec: Spec
  status?: Status
  /** controller-runtime's ConvertTo: an object of this version as the hub's. */
  toHub: (obj: CustomObject<Spec, Status>) => Converted<Hub>
  /** controller-runtime's ConvertFrom: a hub object as this version's. */
  fromHub: (hub: Hub) => Converted<CustomObject<Spec, Status>>
}

/** A version with the hub's schemas (the same fields under another name): converted by renaming. */
export interface SameSchemaVersionOptions extends VersionCommon {
  sameSchemaAsHub: true
}

/** One version as the kind keeps it (the CRD's entry and the conversion). */
export interface VersionEntry extends VersionCommon {
  name: string
  spec: SchemaLike
  status: SchemaLike | undefined
  toHub?: (obj: any) => object
  fromHub?: (hub: any) => object
}

const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/

/** A ConfigError unless `name` is a Kubernetes version name (what kubectl sorts by priority). */
export function checkVersionName(what: string, name: unknown): void {
  if (typeof name !== 'string' || !VERSION.test(name))
    throw new ConfigError(`${what}: version must be like v1, v2beta1 or v1alpha2, not ${JSON.stringify(name)}`)
}

/** Checks a version's options; the entry the kind keeps. */
export function versionEntry(what: string, name: string, o: any, hub: { spec: SchemaLike; status: SchemaLike | undefined }): VersionEntry {
  checkVersionName(what, name)
  if (typeof o !== 'object' || o === null) throw new ConfigError(`${what}: version ${name}: give its options`)
  const common: VersionCommon = {
    ...(o.served !== undefined ? { served: !!o.served } : {}),
    ...(o.deprecated !== undefined ? { deprecated: !!o.deprecated } : {}),
    ...(o.deprecationWarning !== undefined ? { deprecationWarning: String(o.deprecationWarning) } : {}),
    ...(o.printerColumns ? { printerColumns: o.printerColumns } : {}),
  }
  if (o.sameSchemaAsHub === true) {
    if (o.spec || o.status || o.toHub || o.fromHub)
      throw new ConfigError(`${what}: version ${name}: sameSchemaAsHub takes the hub's schemas; give no spec, status, toHub or fromHub`)
    return { name, ...common, spec: hub.spec, status: hub.status }
  }
  if (!o.spec) throw new ConfigError(`${what}: version ${name}: give its spec schema (or sameSchemaAsHub: true)`)
  if (typeof o.toHub !== 'function' || typeof o.fromHub !== 'function')
    throw new ConfigError(
      `${what}: version ${name}: give both toHub and fromHub (each version converts to and from the hub, the storage version)`,
    )
  return { name, ...common, spec: o.spec, status: o.status, toHub: o.toHub, fromHub: o.fromHub }
}

/** The conversions of one kind (group and kind) through its hub version. */
export class KindConversion {
  private readonly byName: ReadonlyMap<string, VersionEntry>
  constructor(
    readonly group: string,
    readonly kind: string,
    readonly hub: string,
    spokes: readonly VersionEntry[],
  ) {
    this.byName = new Map(spokes.map((v) => [v.name, v]))
  }

  /** Webhook when a version converts with functions; None when every version has the hub's schemas. */
  get strategy(): 'None' | 'Webhook' {
    return [...this.byName.values()].some((v) => v.toHub) ? 'Webhook' : 'None'
  }

  get versions(): string[] {
    return [this.hub, ...this.byName.keys()]
  }

  /** `obj` in `desiredAPIVersion` through the hub (see the file's invariants). */
  convert(obj: KubeObject, desiredAPIVersion: string): KubeObject {
    const name = objectName(obj)
    const from = String(obj.apiVersion ?? '')
    const what = `${this.kind} ${name} from ${from || '(no apiVersion)'} to ${desiredAPIVersion}`
    const fromVersion = this.versionOf(from, what, 'the object is')
    if (obj.kind !== this.kind) throw new ConversionError(`${what}: the object's kind is ${JSON.stringify(obj.kind)}, not ${this.kind}`)
    const toVersion = this.versionOf(desiredAPIVersion, what, 'the desired apiVersion is')
    if (fromVersion === toVersion) return obj
    const step = (fn: ((o: any) => object) | undefined, input: KubeObject, version: string, label: string): KubeObject => {
      let out: unknown
      if (!fn) out = structuredClone(input)
      else {
        try {
          out = fn(structuredClone(input))
        } catch (err) {
          throw new ConversionError(`${what}: ${label} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err })
        }
      }
      const meta = (out as KubeObject | null)?.metadata
      if (typeof out !== 'object' || out === null || Array.isArray(out) || typeof meta !== 'object' || meta === null)
        throw new ConversionError(`${what}: ${label} returned ${out === null ? 'null' : typeof out}, not an object with metadata`)
      return { ...(out as KubeObject), apiVersion: `${this.group}/${version}`, kind: this.kind }
    }
    const hub = fromVersion === this.hub ? obj : step(this.byName.get(fromVersion)!.toHub, obj, this.hub, `${fromVersion} toHub`)
    const out = toVersion === this.hub ? hub : step(this.byName.get(toVersion)!.fromHub, hub, toVersion, `${toVersion} fromHub`)
    const changed = changedMetadata(obj.metadata, out.metadata)
    if (changed.length)
      throw new ConversionError(
        `${what}: the conversion changed metadata.${changed.join(', metadata.')}; a conversion may change labels and annotations only`,
      )
    return out
  }

  private versionOf(apiVersion: string, what: string, whose: string): string {
    const i = apiVersion.indexOf('/')
    const group = i < 0 ? '' : apiVersion.slice(0, i)
    const version = apiVersion.slice(i + 1)
    if (group !== this.group) throw new ConversionError(`${what}: ${whose} not in group ${this.group}`)
    if (version !== this.hub && !this.byName.has(version))
      throw new ConversionError(
        `${what}: ${whose} of version ${JSON.stringify(version)}, which ${this.kind} does not have (${this.versions.join(', ')})`,
      )
    return version
  }
}

/** "namespace/name" (or the uid, or "(unnamed)") for messages. */
export function objectName(obj: unknown): string {
  const m = (obj as KubeObject | undefined)?.metadata
  if (!m || typeof m !== 'object') return '(no metadata)'
  if (m.name) return m.namespace ? `${m.namespace}/${m.name}` : String(m.name)
  return m.uid ? `uid ${m.uid}` : '(unnamed)'
}

/** The metadata fields (other than labels and annotations) that differ. */
function changedMetadata(a: KubeObject['metadata'], b: KubeObject['metadata']): string[] {
  const keys = new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])
  keys.delete('labels')
  keys.delete('annotations')
  return [...keys].filter((k) => !sameJson(a?.[k], b?.[k])).sort()
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a).filter((k) => (a as any)[k] !== undefined)
  const kb = Object.keys(b).filter((k) => (b as any)[k] !== undefined)
  return ka.length === kb.length && ka.every((k) => sameJson((a as any)[k], (b as any)[k]))
}
