// Discovery documents, computed from the registry on each request (registrations change at run time,
// and clients cache anyway). Shapes follow the real server's legacy (non-aggregated) discovery,
// which every client falls back to when it gets plain application/json.
import type { Registry, ResourceType } from './resources.ts'

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']

export function versionInfo(): Record<string, string> {
  return {
    major: '1',
    minor: '31',
    gitVersion: 'v1.31.0-statewright',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.22.0',
    compiler: 'gc',
    platform: `${process.platform}/${process.arch}`,
  }
}

export function coreVersions(host: string): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: host }] }
}

function sortVersions(vs: string[]): string[] {
  // Kubernetes version priority: GA > beta > alpha, higher numbers first
  const rank = (v: string) => {
    const m = v.match(/^v(\d+)(?:(alpha|beta)(\d+))?$/)
    if (!m) return [-1, 0, 0]
    return [m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1, Number(m[1]), Number(m[3] ?? 0)]
  }
  return [...vs].sort((a, b) => {
    const ra = rank(a),
      rb = rank(b)
    for (let i = 0; i < 3; i++) if (ra[i] !== rb[i]) return rb[i]! - ra[i]!
    return a.localeCompare(b)
  })
}

export function apiGroup(reg: Registry, group: string): Record<string, unknown> | undefined {
  const vs = reg.groups().get(group)
  if (!vs || !group) return undefined
  const versions = sortVersions(vs).map((v) => ({ groupVersion: `${group}/${v}`, version: v }))
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions, preferredVersion: versions[0] }
}

export function apiGroupList(reg: Registry): Record<string, unknown> {
  const groups = [...reg.groups().keys()]
    .filter((g) => g !== '')
    .sort()
    .map((g) => {
      const { kind, apiVersion, ...rest } = apiGroup(reg, g)!
      return rest
    })
  return { kind: 'APIGroupList', apiVersion: 'v1', groups }
}

function resourceEntry(t: ResourceType): Record<string, unknown> {
  const e: Record<string, unknown> = {
    name: t.resource,
    singularName: t.singular,
    namespaced: t.namespaced,
    kind: t.kind,
    verbs: VERBS,
    storageVersionHash: Buffer.from(t.storageKey).toString('base64').slice(0, 12),
  }
  if (t.shortNames.length) e.shortNames = t.shortNames
  if (t.categories.length) e.categories = t.categories
  return e
}

export function resourceList(reg: Registry, group: string, version: string): Record<string, unknown> | undefined {
  const types = reg
    .all()
    .filter((t) => t.group === group && t.version === version)
    .sort((a, b) => a.resource.localeCompare(b.resource))
  if (types.length === 0) return undefined
  const resources: Record<string, unknown>[] = []
  for (const t of types) {
    resources.push(resourceEntry(t))
    if (t.status)
      resources.push({
        name: `${t.resource}/status`,
        singularName: '',
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: ['get', 'patch', 'update'],
      })
    if (t.scale)
      resources.push({
        name: `${t.resource}/scale`,
        singularName: '',
        namespaced: t.namespaced,
        group: 'autoscaling',
        version: 'v1',
        kind: 'Scale',
        verbs: ['get', 'patch', 'update'],
      })
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources }
}
