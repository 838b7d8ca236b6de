// URL routing: maps a request path to a discovery document or to (resource type, namespace, name,
// subresource). Invariant: routing depends only on the path and the registry, never on the method,
// so every verb of a resource resolves to the same target.
import type { Registry, ResourceType } from './resources.ts'

export type Route =
  | { kind: 'discovery'; doc: 'api' | 'apis' | 'version' | 'health' }
  | { kind: 'group'; group: string }
  | { kind: 'resources'; group: string; version: string }
  | { kind: 'openapi'; group?: string; version?: string }
  | { kind: 'object'; type: ResourceType; namespace?: string; name?: string; subresource?: string }
  | { kind: 'unknown' }

export function route(reg: Registry, path: string): Route {
  const segs = path
    .split('/')
    .filter((s) => s !== '')
    .map(decodeURIComponent)
  if (segs.length === 1 && segs[0] === 'version') return { kind: 'discovery', doc: 'version' }
  if (segs.length === 1 && (segs[0] === 'healthz' || segs[0] === 'livez' || segs[0] === 'readyz'))
    return { kind: 'discovery', doc: 'health' }
  if (segs[0] === 'openapi' && segs[1] === 'v3') {
    if (segs.length === 2) return { kind: 'openapi' }
    if (segs[2] === 'api' && segs.length === 4) return { kind: 'openapi', group: '', version: segs[3]! }
    if (segs[2] === 'apis' && segs.length === 5) return { kind: 'openapi', group: segs[3]!, version: segs[4]! }
    return { kind: 'unknown' }
  }
  let group: string, version: string | undefined, rest: string[]
  if (segs[0] === 'api') {
    if (segs.length === 1) return { kind: 'discovery', doc: 'api' }
    group = ''
    version = segs[1]
    rest = segs.slice(2)
  } else if (segs[0] === 'apis') {
    if (segs.length === 1) return { kind: 'discovery', doc: 'apis' }
    group = segs[1]!
    if (segs.length === 2) return { kind: 'group', group }
    version = segs[2]
    rest = segs.slice(3)
  } else return { kind: 'unknown' }
  if (!version) return { kind: 'unknown' }
  if (rest.length === 0) return { kind: 'resources', group, version }
  // /namespaces/{ns}/{resource}/... when {resource} is a namespaced type of this group/version
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const t = reg.get(group, version, rest[2]!)
    if (t?.namespaced) return target(t, rest[1]!, rest.slice(3))
  }
  const t = reg.get(group, version, rest[0]!)
  if (!t) return { kind: 'unknown' }
  return target(t, undefined, rest.slice(1))
}

function target(type: ResourceType, namespace: string | undefined, rest: string[]): Route {
  if (rest.length > 2) return { kind: 'unknown' }
  const r: Route = { kind: 'object', type }
  if (namespace !== undefined) r.namespace = namespace
  if (rest[0] !== undefined) r.name = rest[0]
  if (rest[1] !== undefined) {
    if (!((rest[1] === 'status' && type.status) || (rest[1] === 'scale' && type.scale))) return { kind: 'unknown' }
    r.subresource = rest[1]
  }
  return r
}
