// Gateway API objects and tables for the topology tests.
import { DB, Table, defineIndex } from '@statewright/statedb'
import type { Gateway, GatewayClass, Listener, Route, BackendService } from '@statewright/topology'

export const GW = 'gateway.networking.k8s.io/v1'
type Obj = { metadata: { name: string; namespace?: string } }
const key = (o: Obj) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`
export const table = <T extends Obj>(name: string) =>
  new Table<T>({ name, primary: defineIndex<T, string>({ name: 'key', key, unique: true }) })

export function gatewayTables(db = new DB()) {
  const t = {
    db,
    classes: table<GatewayClass>('gatewayclasses'),
    gateways: table<Gateway>('gateways'),
    routes: table<Route>('httproutes'),
    services: table<BackendService>('services'),
    policies: table<any>('ratelimitpolicies'),
  }
  db.register(t.classes, t.gateways, t.routes, t.services, t.policies)
  return t
}

export const gatewayClass = (name: string): GatewayClass => ({
  apiVersion: GW,
  kind: 'GatewayClass',
  metadata: { name },
  spec: { controllerName: 'example.com/gw' },
})
export const gateway = (
  ns: string,
  name: string,
  listeners: Listener[] = [{ name: 'http', hostname: '*.example.com', port: 80, protocol: 'HTTP' }],
  cls = 'istio',
): Gateway => ({ apiVersion: GW, kind: 'Gateway', metadata: { name, namespace: ns }, spec: { gatewayClassName: cls, listeners } })
export const route = (
  ns: string,
  name: string,
  parents: Array<string | { name: string; sectionName?: string; namespace?: string }>,
  o: { hostnames?: string[]; rules?: Route['spec'] extends infer S ? (S extends { rules?: infer R } ? R : never) : never } = {},
): Route => ({
  apiVersion: GW,
  kind: 'HTTPRoute',
  metadata: { name, namespace: ns },
  spec: {
    parentRefs: parents.map((p) => (typeof p === 'string' ? { name: p } : p)),
    ...(o.hostnames ? { hostnames: o.hostnames } : {}),
    rules: o.rules ?? [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: `${name}-svc`, port: 80 }] }],
  },
})
export const service = (ns: string, name: string): BackendService => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: ns },
  spec: { ports: [{ name: 'http', port: 80 }] },
})
export const policy = (
  ns: string,
  name: string,
  target: { kind: string; name: string; group?: string; sectionName?: string },
  body: Record<string, unknown>,
  created = '2026-01-01T00:00:00Z',
) => ({
  apiVersion: 'kuadrant.io/v1',
  kind: 'RateLimitPolicy',
  metadata: { name, namespace: ns, creationTimestamp: created, generation: 1 },
  spec: { targetRef: { group: 'gateway.networking.k8s.io', ...target }, ...body },
})
