// The Gateway API objects as the topology reads them (the fields it uses), and how their references
// and hostnames resolve:
// - parentRefs default group gateway.networking.k8s.io, kind Gateway and the route's namespace;
// - a hostname pattern `*.example.com` covers its subdomains; a listener and a route share the more
//   specific of two hostnames when one covers the other; no hostname is `*`;
// - a rule is named by `rule.name`, else `rule-<i+1>` (policy-machinery's names).
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io'

/** The metadata fields the topology reads. */
export type ObjectMeta = { name: string; namespace?: string; creationTimestamp?: string; generation?: number }
export interface ParentRef {
  group?: string
  kind?: string
  namespace?: string
  name: string
  sectionName?: string
  port?: number
}
export interface BackendRef {
  group?: string
  kind?: string
  namespace?: string
  name: string
  port?: number
  weight?: number
}
export interface Listener {
  name: string
  hostname?: string
  port?: number
  protocol?: string
  allowedRoutes?: { namespaces?: { from?: 'Same' | 'All' | 'Selector' } }
}
export interface GatewayClass {
  apiVersion: string
  kind: 'GatewayClass'
  metadata: ObjectMeta
  spec?: { controllerName?: string }
}
export interface Gateway {
  apiVersion: string
  kind: 'Gateway'
  metadata: ObjectMeta
  spec?: { gatewayClassName?: string; listeners?: Listener[] }
}
/** The route kinds of the Gateway API. */
export type RouteKind = 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute' | 'UDPRoute'
export const ROUTE_KINDS: readonly RouteKind[] = ['HTTPRoute', 'GRPCRoute', 'TCPRoute', 'TLSRoute', 'UDPRoute']

/** A rule of any route kind (TCP, TLS and UDP rules have backendRefs only). */
export interface RouteRule {
  name?: string
  matches?: Array<{ path?: { type?: string; value?: string }; method?: unknown; headers?: unknown[] }>
  backendRefs?: BackendRef[]
}
/** A route of any kind (TCP and UDP routes have no hostnames). */
export interface Route {
  apiVersion: string
  kind: RouteKind
  metadata: ObjectMeta
  spec?: { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: RouteRule[] }
}
/** A core v1 Service as the topology sees it: a backend of routes. */
export interface BackendService {
  apiVersion: string
  kind: 'Service'
  metadata: ObjectMeta
  spec?: { ports?: Array<{ name?: string; port: number; protocol?: string }> }
}

/** A rule's name: `rule.name`, else `rule-<i+1>`. */
export const ruleName = (rule: RouteRule | undefined, i: number): string => rule?.name || `rule-${i + 1}`

/** Whether a hostname (a pattern, `*.example.com`) covers another. */
function covers(pattern: string, host: string): boolean {
  if (pattern === '*' || pattern === host) return true
  if (pattern.startsWith('*.')) {
    const suffix = pattern.slice(1) // ".example.com"
    return host.endsWith(suffix) && host.length > suffix.length
  }
  return false
}

/** The hostname a listener and a route hostname share (the more specific), or undefined. */
export function intersectHostnames(listener: string | undefined, route: string | undefined): string | undefined {
  const l = listener || '*'
  const r = route || '*'
  if (covers(l, r)) return r
  if (covers(r, l)) return l
  return undefined
}

/** The hostnames of a route on a listener: its own within the listener's; none given: the listener's ("*" if absent). */
export function routeHostnames(listener: Listener | undefined, route: Route): string[] {
  const hs = route.spec?.hostnames ?? []
  if (hs.length === 0) return [listener?.hostname || '*']
  const out = new Set<string>()
  for (const h of hs) {
    const x = intersectHostnames(listener?.hostname, h)
    if (x) out.add(x)
  }
  return [...out].sort()
}

/** The parentRefs of a route, defaults filled in. */
export function parentRefsOf(
  route: Route,
): Array<Required<Pick<ParentRef, 'group' | 'kind' | 'namespace' | 'name'>> & { sectionName?: string }> {
  return (route.spec?.parentRefs ?? [])
    .filter((r) => r && typeof r.name === 'string')
    .map((r) => ({
      group: r.group ?? GATEWAY_API_GROUP,
      kind: r.kind ?? 'Gateway',
      namespace: r.namespace ?? route.metadata.namespace ?? '',
      name: r.name,
      ...(r.sectionName ? { sectionName: r.sectionName } : {}),
    }))
}
