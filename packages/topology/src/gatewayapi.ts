// The Gateway API topology, as Kuadrant's policy-machinery builds it:
//   GatewayClass -> Gateway -> Listener -> HTTPRoute/GRPCRoute/TCPRoute/TLSRoute/UDPRoute -> rule
//     -> Service -> ServicePort (a backendRef without a port)
//     -> ServicePort              (a backendRef with a port: the Service's port of that number)
// Listeners, each route kind's rules and Service ports are expanded or not, each on its own; what is
// not expanded links its object instead (Gateway -> route, route -> Service).
// One lesson applied that policy-machinery does not: a route attaches to a listener only when a
// parentRef names the listener (sectionName) or its whole Gateway, the listener admits the route's
// namespace (allowedRoutes: Same by default, All), and their hostnames intersect. Linking every route
// to every listener makes dead paths, and walking them cost Kuadrant 30 minutes at 63 listeners
// (kuadrant-operator#1085). allowedRoutes.namespaces `from: Selector` is treated as All (namespace
// labels are not watched).
import type { Table } from '@statewright/statedb'
import { ConfigError } from './errors.ts'
import {
  defineTopology,
  type LinkDefinition,
  type PolicyKind,
  type Section,
  type TargetableKind,
  type TopologyDefinition,
  type TopologyNode,
} from './define.ts'
import {
  GATEWAY_API_GROUP,
  ROUTE_KINDS,
  intersectHostnames,
  parentRefsOf,
  ruleName,
  type BackendRef,
  type Gateway,
  type Listener,
  type Route,
  type RouteKind,
  type RouteRule,
  type BackendService,
} from './gatewayapi-types.ts'
import { locator } from './locator.ts'

function admits(gatewayNs: string | undefined, l: Listener, routeNs: string | undefined): boolean {
  const from = l.allowedRoutes?.namespaces?.from ?? 'Same'
  return from !== 'Same' || gatewayNs === routeNs
}

export interface GatewayApiTopologyOptions {
  /** Listener nodes between Gateway and routes (default true). */
  expandListeners?: boolean
  /** Rule nodes below routes: true for every route kind (default), or the route kinds whose rules to expand. */
  expandRules?: boolean | readonly RouteKind[]
  /** Port nodes below Services (default false). */
  expandServicePorts?: boolean
  /** Tables of the kinds (a StateOfWorldController fills in those it watches). */
  tables?: {
    gatewayClasses?: Table<any>
    gateways?: Table<any>
    httpRoutes?: Table<any>
    grpcRoutes?: Table<any>
    tcpRoutes?: Table<any>
    tlsRoutes?: Table<any>
    udpRoutes?: Table<any>
    services?: Table<any>
  }
  /** Route kinds (default HTTPRoute only). */
  routeKinds?: readonly RouteKind[]
  /** Include Services (default true). */
  services?: boolean
  /** Policy kinds to attach (RateLimitPolicy...). */
  policies?: PolicyKind[]
  /** Other kinds of nodes (policy-machinery's `WithGatewayAPITopologyObjects`). */
  objects?: TargetableKind[]
  /** More links, between any kinds (policy-machinery's `WithGatewayAPITopologyLinks`). */
  links?: LinkDefinition[]
  /** Cycles are allowed (policy-machinery's `AllowTopologyLoops`). */
  allowLoops?: boolean
}

const ROUTE_TABLES: Record<RouteKind, keyof NonNullable<GatewayApiTopologyOptions['tables']>> = {
  HTTPRoute: 'httpRoutes',
  GRPCRoute: 'grpcRoutes',
  TCPRoute: 'tcpRoutes',
  TLSRoute: 'tlsRoutes',
  UDPRoute: 'udpRoutes',
}

const isServiceRef = (b: BackendRef | undefined): b is BackendRef =>
  !!b && typeof b.name === 'string' && (b.kind ?? 'Service') === 'Service' && (b.group ?? '') === ''

/** A topology definition of the Gateway API. */
export function gatewayApiTopology(o: GatewayApiTopologyOptions = {}): TopologyDefinition {
  const listeners = o.expandListeners ?? true
  const ports = o.expandServicePorts ?? false
  const withServices = o.services ?? true
  const routeKinds = o.routeKinds ?? ['HTTPRoute']
  for (const rk of routeKinds)
    if (!ROUTE_KINDS.includes(rk)) throw new ConfigError(`gatewayApiTopology: routeKinds: "${rk}" is not one of ${ROUTE_KINDS.join(', ')}`)
  const expand = (rk: RouteKind) => (Array.isArray(o.expandRules) ? o.expandRules.includes(rk) : (o.expandRules ?? true) !== false)
  const t = o.tables ?? {}
  const gwLoc = (ns: string, name: string, section?: string) =>
    locator({ kind: 'Gateway', group: GATEWAY_API_GROUP, namespace: ns, name, ...(section ? { section } : {}) })
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
  const gatewayRefs = (r: Route) => parentRefsOf(r).filter((p) => p.group === GATEWAY_API_GROUP && p.kind === 'Gateway')
  for (const rk of routeKinds) {
    const rules = expand(rk)
    const ruleKind = `${rk}Rule`
    const table = t[ROUTE_TABLES[rk]]
    targetables.push({
      kind: rk,
      group: GATEWAY_API_GROUP,
      ...(table ? { table } : {}),
      ...(rules
        ? {
            sections: (r: Route): Section[] =>
              (r.spec?.rules ?? []).map((rule, i) => ({ kind: ruleKind, name: ruleName(rule, i), object: rule })),
          }
        : {}),
    })
    if (listeners) {
      links.push({
        from: 'Listener',
        to: rk,
        // a parentRef with sectionName names one listener; without, the Gateway (all its listeners)
        parents: (route: TopologyNode<Route>) => gatewayRefs(route.object).map((p) => gwLoc(p.namespace, p.name, p.sectionName)),
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
    if (withServices) links.push(...serviceLinks(rules ? ruleKind : rk, rules, ports))
  }
  if (withServices) {
    targetables.push({
      kind: 'Service',
      group: '',
      ...(t.services ? { table: t.services } : {}),
      ...(ports
        ? {
            sections: (s: BackendService): Section[] =>
              (s.spec?.ports ?? []).map((p) => ({ kind: 'ServicePort', name: p.name || String(p.port), object: p })),
          }
        : {}),
    })
  }
  return defineTopology({
    targetables,
    policies: o.policies ?? [],
    ...(o.objects ? { objects: o.objects } : {}),
    links: [...links, ...(o.links ?? [])],
    ...(o.allowLoops ? { allowLoops: true } : {}),
  })
}

/**
 * The links from a route (or a rule) to its backends, as policy-machinery's: without ports expanded,
 * to every Service a backendRef names; with ports expanded, to the port a backendRef names by number,
 * and to the Service for a backendRef without a port.
 */
function serviceLinks(from: string, rules: boolean, ports: boolean): LinkDefinition[] {
  const rulesOf = (n: TopologyNode): RouteRule[] => (rules ? [n.object as RouteRule] : ((n.object as Route).spec?.rules ?? []))
  const refs = (n: TopologyNode, withPort: boolean | undefined) =>
    rulesOf(n)
      .flatMap((rule) => rule?.backendRefs ?? [])
      .filter(isServiceRef)
      .filter((b) => withPort === undefined || (b.port !== undefined) === withPort)
  const serviceLocs = (n: TopologyNode, withPort: boolean | undefined) => [
    ...new Set(
      refs(n, withPort).map((b) => locator({ kind: 'Service', group: '', namespace: b.namespace ?? n.namespace ?? '', name: b.name })),
    ),
  ]
  if (!ports) return [{ from, to: 'Service', children: (n: TopologyNode) => serviceLocs(n, undefined) }]
  return [
    { from, to: 'Service', children: (n: TopologyNode) => serviceLocs(n, false) },
    {
      from,
      to: 'ServicePort',
      // the Service's locator stands for its ports; accepts keeps the one of the backendRef's number
      children: (n: TopologyNode) => serviceLocs(n, true),
      accepts: (n: TopologyNode, port: TopologyNode<{ port: number }>) =>
        refs(n, true).some((b) => b.name === port.name && (b.namespace ?? n.namespace) === port.namespace && b.port === port.object.port),
    },
  ]
}
