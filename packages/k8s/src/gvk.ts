// Kinds and resource paths. A kind is named by apiVersion + kind; its resource (the URL segment) and
// scope come from discovery (GET /api/v1 or /apis/<group>/<version>, cached per cluster), or are
// given explicitly to skip discovery.
import { InvalidObjectError, UnknownKindError } from './errors.ts'
import type { Cluster } from './cluster.ts'

/** A Kubernetes object as JSON (unstructured). */
export interface KubeObject {
  apiVersion?: string
  kind?: string
  metadata: {
    name?: string
    namespace?: string
    resourceVersion?: string
    uid?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    [k: string]: unknown
  }
  [k: string]: unknown
}

/**
 * A kind, by apiVersion and kind. `T` is the type of its objects (default the untyped KubeObject):
 * the typed constants of kinds.ts carry client-node's model (`ConfigMap: Kind<V1ConfigMap>`), so
 * `watch(ConfigMap)` yields a `Table<V1ConfigMap>`. `T` lives only in the type, as the parameter of
 * a method that never exists, so that a kind of one type is still accepted where another is asked
 * for explicitly (`watch<Site>({ apiVersion, kind })`: method parameters are bivariant).
 */
export interface KindRef<T extends object = KubeObject> {
  apiVersion: string
  kind: string
  /** Type only (never set): the type of the kind's objects. */
  objectType?(object: T): void
}

/** A kind with its resource: what a request needs. */
export interface ResourceRef<T extends object = KubeObject> extends KindRef<T> {
  /** Plural, lowercase: the URL segment (e.g. "configmaps"). */
  resource: string
  namespaced: boolean
}

export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/')
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) }
}

export function groupOf(apiVersion: string | undefined): string {
  return apiVersion ? splitApiVersion(apiVersion).group : ''
}

const digits = (s: string) => {
  if (s.length === 0 || (s.length > 1 && s.charCodeAt(0) === 48)) return false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 48 || c > 57) return false
  }
  return true
}

/**
 * Whether resourceVersion `a` is newer than `b`: both plain decimal numbers, as kube-apiserver's
 * are (etcd revisions); anything else is never newer (resourceVersions are opaque to clients).
 * Compared as digit strings (length, then text): no number parsing on a watch's path.
 */
export function newerResourceVersion(a: unknown, b: unknown): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || !digits(a) || !digits(b)) return false
  return a.length !== b.length ? a.length > b.length : a > b
}

/** "ConfigMap" or "Widget.example.com": a kind's name independent of its version. */
export function groupKind(r: KindRef): string {
  const g = groupOf(r.apiVersion)
  return g ? `${r.kind}.${g}` : r.kind
}

/** Finds a kind's resource by discovery (cached per cluster). A ResourceRef is returned as is. */
export async function resolveKind(cluster: Cluster, ref: KindRef | ResourceRef): Promise<ResourceRef> {
  if ('resource' in ref && typeof ref.resource === 'string' && typeof ref.namespaced === 'boolean') return ref
  const { group, version } = splitApiVersion(ref.apiVersion)
  const path = group ? `/apis/${group}/${version}` : `/api/${version}`
  let p = cluster.discoveryCache.get(path)
  if (!p) {
    p = cluster.request({ path, what: `discovery of ${ref.apiVersion}` })
    cluster.discoveryCache.set(path, p)
    p.catch(() => cluster.discoveryCache.delete(path))
  }
  let list: any
  try {
    list = await p
  } catch (err) {
    // A group/version the server does not serve at all (a CRD not installed yet) answers 404: the
    // same error as a kind missing from a served group, naming the cluster.
    if ((err as { code?: unknown } | undefined)?.code === 404)
      throw new UnknownKindError(
        `cluster ${cluster.name}: the server has no kind ${ref.kind} in ${ref.apiVersion} (it does not serve ${ref.apiVersion})`,
      )
    throw err
  }
  const found = (list?.resources ?? []).find((r: any) => r.kind === ref.kind && !String(r.name).includes('/'))
  if (!found) {
    cluster.discoveryCache.delete(path) // the kind may be registered later (a CRD)
    throw new UnknownKindError(`cluster ${cluster.name}: the server has no kind ${ref.kind} in ${ref.apiVersion}`)
  }
  return { apiVersion: ref.apiVersion, kind: ref.kind, resource: found.name, namespaced: !!found.namespaced }
}

/** The collection path (namespace optional for namespaced kinds: all namespaces). */
export function collectionPath(r: ResourceRef, namespace?: string): string {
  const { group, version } = splitApiVersion(r.apiVersion)
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`
  const ns = r.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''
  return `${base}${ns}/${r.resource}`
}

export function objectPath(r: ResourceRef, name: string, namespace?: string): string {
  if (r.namespaced && !namespace) throw new InvalidObjectError(`${r.kind} ${name}: a namespaced kind needs a namespace`)
  return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}`
}

/** "namespace/name" (cluster-scoped: "name"), the default key of reflected objects. */
export function namespacedName(obj: KubeObject): string {
  const m = obj.metadata
  // join, not `${ns}/${name}`: V8 makes a flat string, where concatenation makes a cons string
  // that the first comparison flattens into a second string, both kept (about 32 B per table key)
  return m.namespace ? [m.namespace, String(m.name)].join('/') : String(m.name)
}

/** "ConfigMap default/web": an object's identity in messages. Never includes the content. */
export function describe(obj: { kind?: string; apiVersion?: string; metadata?: { name?: string; namespace?: string } }): string {
  const g = groupOf(obj.apiVersion)
  const kind = `${obj.kind ?? '?'}${g ? '.' + g : ''}`
  const m = obj.metadata ?? {}
  return `${kind} ${m.namespace ? m.namespace + '/' : ''}${m.name ?? '?'}`
}
