// The Gateway API topology: GatewayClass -> Gateway -> Listener -> HTTPRoute/GRPCRoute -> rule ->
// Service (-> port), as Kuadrant's policy-machinery builds it, with three lessons applied:
// - parentRefs default group gateway.networking.k8s.io, kind Gateway and the route's namespace;
// - a route attaches to a listener only when a parentRef names the listener (sectionName) or its
//   whole Gateway, the listener admits the route's namespace (allowedRoutes: Same by default, All),
//   and their hostnames intersect. Linking every route to every listener makes dead paths, and
//   walking them cost Kuadrant 30 minutes at 63 listeners (kuadrant-operator#1085);
// - a rule is named by `rule.name`, else `rule-<i+1>`.
// allowedRoutes.namespaces `from: Selector` is treated as All (namespace labels are not watched).
import type { Table } from '@statewright/statedb'
import {
  defineTopology,
  type LinkDefinition,
  type PolicyKind,
  type Section,
  type TargetableKind,
  type TopologyDefinition,
  type TopologyNode,
} from './define.ts'
import { locator } from './locator.ts'

export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io'

type Meta = { name: string; namespace?: string; creationTimestamp?: string; generation?: number }
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
  metadata: Meta
  spec?: { controllerName?: string }
}
export interface Gateway {
  apiVersion: string
  kind: 'Gateway'
  metadata: Meta
  spec?: { gatewayClassName?: string; listeners?: Listener[] }
}
export interface RouteRule {
  name?: string
  matches?: Array<{ path?: { type?: string; value?: string }; method?: string; headers?: unknown[] }>
  backendRefs?: BackendRef[]
}
export interface Route {
  apiVersion: string
  kind: 'HTTPRoute' | 'GRPCRoute'
  metadata: Meta
  spec?: { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: RouteRule[] }
}
export interface Service {
  apiVersion: string
  kind: 'Service'
  metadata: Meta
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

function admits(gatewayNs: string | undefined, l: Listener, routeNs: string | undefined): boolean {
  const from = l.allowedRoutes?.namespaces?.from ?? 'Same'
  return from !== 'Same' || gatewayNs === routeNs
}

export interface GatewayApiTopologyOptions {
  /** Listener nodes between Gateway and routes (default true). */
  expandListeners?: boolean
  /** Rule nodes below routes (default true). */
  expandRules?: boolean
  /** Port nodes below Services (default false). */
  expandServicePorts?: boolean
  /** Tables of the kinds (a StateOfWorldController fills in those it watches). */
  tables?: { gatewayClasses?: Table<any>; gateways?: Table<any>; httpRoutes?: Table<any>; grpcRoutes?: Table<any>; services?: Table<any> }
  /** Route kinds (default HTTPRoute only). */
  routeKinds?: Array<'HTTPRoute' | 'GRPCRoute'>
  /** Include Services (default true). */
  services?: boolean
  /** Policy kinds to attach (RateLimitPolicy...). */
  policies?: PolicyKind[]
}

/** A topology definition of the Gateway API. */
export function gatewayApiTopology(o: GatewayApiTopologyOptions = {}): TopologyDefinition {
  const listeners = o.expandListeners ?? true
  const rules = o.expandRules ?? true
  const ports = o.expandServicePorts ?? false
  const withServices = o.services ?? true
  const routeKinds = o.routeKinds ?? ['HTTPRoute']
  const t = o.tables ?? {}
  const gwLoc = (ns: string, name: string) => locator({ kind: 'Gateway', group: GATEWAY_API_GROUP, namespace: ns, name })
  const targetables: TargetableKind[] = [
    { kind: 'GatewayClass', group: GATEWAY_API_GROUP, ...(t.gatewayClasses ? { table: t.gatewayClasses } : {}) },
    {
      kind: 'Gateway',
      group: GATEWAY_API_GROUP,
      ...(t.gateways ? { table: t.gateways } : {}),
      ...(listeners
        ? { sections: (gw: Gateway): Section[] => (gw.spec?.listeners ?? []).map((l) => ({ kind: 'Listener', name: l.name, object: l })) }
        : {}),
    },
  ]
  const links: LinkDefinition[] = [
    {
      from: 'GatewayClass',
      to: 'Gateway',
      parents: (gw: TopologyNode<Gateway>) =>
        gw.object.spec?.gatewayClassName
          ? [locator({ kind: 'GatewayClass', group: GATEWAY_API_GROUP, name: gw.object.spec.gatewayClassName })]
          : [],
    },
  ]
  for (const rk of routeKinds) {
    const ruleKind = `${rk}Rule`
    targetables.push({
      kind: rk,
      group: GATEWAY_API_GROUP,
      ...((rk === 'HTTPRoute' ? t.httpRoutes : t.grpcRoutes) ? { table: rk === 'HTTPRoute' ? t.httpRoutes : t.grpcRoutes } : {}),
      ...(rules
        ? {
            sections: (r: Route): Section[] =>
              (r.spec?.rules ?? []).map((rule, i) => ({ kind: ruleKind, name: ruleName(rule, i), object: rule })),
          }
        : {}),
    })
    const gatewayRefs = (r: Route) => parentRefsOf(r).filter((p) => p.group === GATEWAY_API_GROUP && p.kind === 'Gateway')
    if (listeners) {
      links.push({
        from: 'Listener',
        to: rk,
        // a parentRef with sectionName names one listener; without, the Gateway (all its listeners)
        parents: (route: TopologyNode<Route>) =>
          gatewayRefs(route.object).map((p) =>
            p.sectionName
              ? locator({ kind: 'Listener', group: GATEWAY_API_GROUP, namespace: p.namespace, name: p.name, section: p.sectionName })
              : gwLoc(p.namespace, p.name),
          ),
        accepts: (l: TopologyNode<Listener>, route: TopologyNode<Route>) => {
          if (!admits(l.namespace, l.object, route.namespace)) return false
          if (
            !gatewayRefs(route.object).some(
              (p) => p.namespace === l.namespace && p.name === l.name && (!p.sectionName || p.sectionName === l.section),
            )
          )
            return false
          const hs = route.object.spec?.hostnames ?? []
          return hs.length === 0 || hs.some((h) => intersectHostnames(l.object.hostname, h) !== undefined)
        },
      })
    } else {
      links.push({
        from: 'Gateway',
        to: rk,
        parents: (route: TopologyNode<Route>) => [...new Set(gatewayRefs(route.object).map((p) => gwLoc(p.namespace, p.name)))],
      })
    }
    if (withServices) {
      const backendRefs = (rule: RouteRule | undefined, ns: string | undefined) =>
        (rule?.backendRefs ?? [])
          .filter((b) => b && (b.kind ?? 'Service') === 'Service' && (b.group ?? '') === '')
          .map((b) => locator({ kind: 'Service', group: '', namespace: b.namespace ?? ns ?? '', name: b.name }))
      const portOk = (from: TopologyNode, svcPort: TopologyNode<{ port: number; name?: string }>) => {
        const rs = rules ? [from.object as RouteRule] : ((from.object as Route).spec?.rules ?? [])
        return rs.some((rule) =>
          (rule?.backendRefs ?? []).some(
            (b) =>
              b.name === svcPort.name &&
              (b.namespace ?? from.namespace) === svcPort.namespace &&
              (b.port === undefined || b.port === svcPort.object.port),
          ),
        )
      }
      links.push({
        from: rules ? ruleKind : rk,
        to: ports ? 'ServicePort' : 'Service',
        children: (n: TopologyNode) => [
          ...new Set(
            rules
              ? backendRefs(n.object as RouteRule, n.namespace)
              : ((n.object as Route).spec?.rules ?? []).flatMap((rule) => backendRefs(rule, n.namespace)),
          ),
        ],
        ...(ports ? { accepts: portOk } : {}),
      })
    }
  }
  if (withServices) {
    targetables.push({
      kind: 'Service',
      group: '',
      ...(t.services ? { table: t.services } : {}),
      ...(ports
        ? {
            sections: (s: Service): Section[] =>
              (s.spec?.ports ?? []).map((p) => ({ kind: 'ServicePort', name: p.name || String(p.port), object: p })),
          }
        : {}),
    })
  }
  return defineTopology({ targetables, policies: o.policies ?? [], links })
}
