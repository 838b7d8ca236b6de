// Kuadrant policy-machinery's Gateway API topology tests, ported (machinery/gateway_api_topology_test.go
// and controller/topology_builder_test.go): the same resources and expected links, compared as links
// walked from the roots by name, node sets, and the DOT text read back as an edge set. Each test
// names the Go test it follows.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { ROUTE_KINDS, locator, ruleName, type TopologyNode, type TopologyView } from '@statewright/topology'
import {
  assertLinks,
  buildBackendRef,
  buildComplexGatewayApiTopology,
  buildGRPCRoute,
  buildGateway,
  buildGatewayClass,
  buildHTTPRoute,
  buildService,
  buildTCPRoute,
  buildTLSRoute,
  buildTestPolicy,
  buildUDPRoute,
  dotEdges,
  edgeSet,
  gatewayApiView,
  linksFrom,
  pmName,
  type GatewayApiResources,
} from './pm-fixtures.ts'

const oneOfEach = (): GatewayApiResources => ({
  gatewayClasses: [buildGatewayClass()],
  gateways: [buildGateway()],
  httpRoutes: [buildHTTPRoute()],
  grpcRoutes: [buildGRPCRoute()],
  tcpRoutes: [buildTCPRoute()],
  tlsRoutes: [buildTLSRoute()],
  udpRoutes: [buildUDPRoute()],
  services: [buildService()],
})

/** The links' edges a map of expected links stands for, by locator (names resolved in the view). */
function expectedEdges(v: TopologyView, links: Record<string, string[]>): string[] {
  const byName = new Map(v.nodes().map((n) => [pmName(n), n.locator]))
  const loc = (name: string) => {
    const l = byName.get(name)
    assert.ok(l, `no node named ${name}`)
    return l!
  }
  return Object.entries(links)
    .flatMap(([from, tos]) => tos.map((to) => `${loc(from)} -> ${loc(to)}`))
    .sort()
}
/** The DOT holds the expected links, and each policy's edge to its existing target: nothing else. */
function assertDot(v: TopologyView, links: Record<string, string[]>, msg: string): void {
  const policyEdges = v
    .edges()
    .filter((e) => e.policy)
    .map((e) => `${e.from} -> ${e.to}`)
  assert.equal(dotEdges(v.toDot()), [...expectedEdges(v, links), ...policyEdges].sort(), msg)
  assert.equal(edgeSet(v), dotEdges(v.toDot()), msg)
}

// follows policy-machinery machinery/gateway_api_topology_test.go TestGatewayAPITopology (four subtests)
test('TestGatewayAPITopology: Gateway -> every route kind -> Service, without sections (issue 26, cause 3)', async () => {
  const cases: Array<{ name: string; res: GatewayApiResources; policies?: any[]; expected: Record<string, string[]> }> = [
    { name: 'empty', res: {}, expected: {} },
    { name: 'single node', res: { gatewayClasses: [buildGatewayClass()] }, expected: {} },
    {
      name: 'one of each kind',
      res: oneOfEach(),
      policies: [buildTestPolicy()],
      expected: {
        'my-gateway-class': ['my-gateway'],
        'my-gateway': ['my-http-route', 'my-grpc-route', 'my-tcp-route', 'my-tls-route', 'my-udp-route'],
        'my-grpc-route': ['my-service'],
        'my-http-route': ['my-service'],
        'my-tcp-route': ['my-service'],
        'my-tls-route': ['my-service'],
        'my-udp-route': ['my-service'],
      },
    },
    {
      name: 'complex topology',
      res: buildComplexGatewayApiTopology(),
      expected: {
        'gatewayclass-1': ['gateway-1', 'gateway-2', 'gateway-3'],
        'gatewayclass-2': ['gateway-4', 'gateway-5'],
        'gateway-1': ['http-route-1', 'http-route-2'],
        'gateway-2': ['http-route-2', 'http-route-3'],
        'gateway-3': ['udp-route-1', 'tls-route-1'],
        'gateway-4': ['tls-route-1', 'tcp-route-1'],
        'gateway-5': ['grpc-route-1'],
        'grpc-route-1': ['service-7'],
        'http-route-1': ['service-1', 'service-2'],
        'http-route-2': ['service-3'],
        'http-route-3': ['service-3'],
        'udp-route-1': ['service-3', 'service-4'],
        'tls-route-1': ['service-5'],
        'tcp-route-1': ['service-5', 'service-6'],
      },
    },
  ]
  for (const c of cases) {
    const v = await gatewayApiView(
      c.res,
      { expandListeners: false, expandRules: false, expandServicePorts: false, routeKinds: ROUTE_KINDS },
      c.policies,
    )
    assertLinks(linksFrom(v.targetables()), c.expected, c.name)
    assertDot(v, c.expected, c.name)
  }
  // the policy targets the Service
  const v = await gatewayApiView(oneOfEach(), { expandListeners: false, expandRules: false, routeKinds: ROUTE_KINDS }, [buildTestPolicy()])
  assert.equal(
    v.policiesOf('service:my-namespace/my-service').map((p) => p.locator),
    ['testpolicy.test:my-namespace/my-policy'],
  )
})

const withSections = { expandListeners: true, expandRules: true, expandServicePorts: true, routeKinds: ROUTE_KINDS } as const

// follows policy-machinery machinery/gateway_api_topology_test.go TestGatewayAPITopologyWithSectionNames (four subtests)
test('TestGatewayAPITopologyWithSectionNames: listeners, every kind of rule and service ports (issue 26, causes 1-3)', async () => {
  const renamed =
    (rk: string, ...names: string[]) =>
    (r: any) => {
      r.spec.rules = names.map((name) => ({ name, backendRefs: [buildBackendRef()] }))
      void rk
    }
  const cases: Array<{ name: string; res: GatewayApiResources; policies?: any[]; expected: Record<string, string[]> }> = [
    {
      name: 'one of each kind',
      res: oneOfEach(),
      policies: [buildTestPolicy()],
      expected: {
        'my-gateway-class': ['my-gateway'],
        'my-gateway': ['my-gateway#my-listener'],
        'my-gateway#my-listener': ['my-http-route', 'my-grpc-route', 'my-tcp-route', 'my-tls-route', 'my-udp-route'],
        'my-grpc-route': ['my-grpc-route#rule-1'],
        'my-grpc-route#rule-1': ['my-service'],
        'my-http-route': ['my-http-route#rule-1'],
        'my-http-route#rule-1': ['my-service'],
        'my-tcp-route': ['my-tcp-route#rule-1'],
        'my-tcp-route#rule-1': ['my-service'],
        'my-tls-route': ['my-tls-route#rule-1'],
        'my-tls-route#rule-1': ['my-service'],
        'my-udp-route': ['my-udp-route#rule-1'],
        'my-udp-route#rule-1': ['my-service'],
        'my-service': ['my-service#http'],
      },
    },
    {
      name: 'policies with section names',
      res: {
        gateways: [
          buildGateway((g) => {
            g.spec.listeners[0].name = 'http'
            g.spec.listeners.push({ name: 'https', port: 443, protocol: 'HTTPS' })
          }),
        ],
      },
      policies: [
        buildTestPolicy((p) => {
          p.metadata.name = 'my-policy-1'
          p.spec.targetRef = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'my-gateway', sectionName: 'http' }
        }),
        buildTestPolicy((p) => {
          p.metadata.name = 'my-policy-2'
          p.spec.targetRef = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'my-gateway', sectionName: 'https' }
        }),
      ],
      expected: { 'my-gateway': ['my-gateway#http', 'my-gateway#https'] },
    },
    {
      name: 'routes with experimental name field',
      res: {
        gatewayClasses: [buildGatewayClass()],
        gateways: [buildGateway()],
        httpRoutes: [buildHTTPRoute(renamed('HTTPRoute', 'auth-required', 'public-access'))],
        grpcRoutes: [buildGRPCRoute(renamed('GRPCRoute', 'streaming'))],
        tcpRoutes: [buildTCPRoute(renamed('TCPRoute', 'tcp-primary'))],
        tlsRoutes: [buildTLSRoute(renamed('TLSRoute', 'tls-passthrough'))],
        udpRoutes: [buildUDPRoute(renamed('UDPRoute', 'udp-main'))],
        services: [buildService()],
      },
      expected: {
        'my-gateway-class': ['my-gateway'],
        'my-gateway': ['my-gateway#my-listener'],
        'my-gateway#my-listener': ['my-http-route', 'my-grpc-route', 'my-tcp-route', 'my-tls-route', 'my-udp-route'],
        'my-http-route': ['my-http-route#auth-required', 'my-http-route#public-access'],
        'my-http-route#auth-required': ['my-service'],
        'my-http-route#public-access': ['my-service'],
        'my-grpc-route': ['my-grpc-route#streaming'],
        'my-grpc-route#streaming': ['my-service'],
        'my-tcp-route': ['my-tcp-route#tcp-primary'],
        'my-tcp-route#tcp-primary': ['my-service'],
        'my-tls-route': ['my-tls-route#tls-passthrough'],
        'my-tls-route#tls-passthrough': ['my-service'],
        'my-udp-route': ['my-udp-route#udp-main'],
        'my-udp-route#udp-main': ['my-service'],
        'my-service': ['my-service#http'],
      },
    },
    {
      name: 'complex topology',
      res: buildComplexGatewayApiTopology(),
      expected: {
        'gatewayclass-1': ['gateway-1', 'gateway-2', 'gateway-3'],
        'gatewayclass-2': ['gateway-4', 'gateway-5'],
        'gateway-1': ['gateway-1#listener-1', 'gateway-1#listener-2'],
        'gateway-2': ['gateway-2#listener-1'],
        'gateway-3': ['gateway-3#listener-1', 'gateway-3#listener-2'],
        'gateway-4': ['gateway-4#listener-1', 'gateway-4#listener-2'],
        'gateway-5': ['gateway-5#listener-1'],
        'gateway-1#listener-1': ['http-route-1'],
        'gateway-1#listener-2': ['http-route-1', 'http-route-2'],
        'gateway-2#listener-1': ['http-route-2', 'http-route-3'],
        'gateway-3#listener-1': ['udp-route-1', 'tls-route-1'],
        'gateway-3#listener-2': ['udp-route-1', 'tls-route-1'],
        'gateway-4#listener-1': ['tls-route-1', 'tcp-route-1'],
        'gateway-4#listener-2': ['tls-route-1', 'tcp-route-1'],
        'gateway-5#listener-1': ['grpc-route-1'],
        'grpc-route-1': ['grpc-route-1#rule-1'],
        'grpc-route-1#rule-1': ['service-7'],
        'http-route-1': ['http-route-1#rule-1', 'http-route-1#rule-2'],
        'http-route-2': ['http-route-2#rule-1'],
        'http-route-3': ['http-route-3#rule-1'],
        'udp-route-1': ['udp-route-1#rule-1', 'udp-route-1#rule-2'],
        'http-route-1#rule-1': ['service-1'],
        'http-route-1#rule-2': ['service-2'],
        'http-route-2#rule-1': ['service-3#port-1'],
        'http-route-3#rule-1': ['service-3#port-1'],
        'udp-route-1#rule-1': ['service-3#port-2'],
        'udp-route-1#rule-2': ['service-4#port-1'],
        'tls-route-1': ['tls-route-1#rule-1', 'tls-route-1#rule-2'],
        'tls-route-1#rule-1': ['service-5'],
        'tls-route-1#rule-2': ['service-5'],
        'tcp-route-1': ['tcp-route-1#rule-1', 'tcp-route-1#rule-2'],
        'tcp-route-1#rule-1': ['service-5', 'service-6'],
        'tcp-route-1#rule-2': ['service-6#port-1'],
        'service-1': ['service-1#port-1', 'service-1#port-2'],
        'service-2': ['service-2#port-1'],
        'service-3': ['service-3#port-1', 'service-3#port-2'],
        'service-4': ['service-4#port-1'],
        'service-5': ['service-5#port-1'],
        'service-6': ['service-6#port-1'],
        'service-7': ['service-7#port-1'],
      },
    },
  ]
  for (const c of cases) {
    const v = await gatewayApiView(c.res, withSections, c.policies)
    assertLinks(linksFrom(v.targetables()), c.expected, c.name)
    assertDot(v, c.expected, c.name)
  }
  // the section policies attach to the listeners they name, by policy-machinery's locators
  const v = await gatewayApiView(cases[1]!.res, withSections, cases[1]!.policies)
  const G = 'gateway.gateway.networking.k8s.io:my-namespace/my-gateway'
  assert.equal(
    v.nodes('Listener').map((n) => n.locator),
    [`${G}#http`, `${G}#https`],
    'a listener is named by its gateway (issue 26, cause 1)',
  )
  assert.equal(
    v.policiesOf(`${G}#http`).map((p) => p.name),
    ['my-policy-1'],
  )
  assert.equal(
    v.policiesOf(`${G}#https`).map((p) => p.name),
    ['my-policy-2'],
  )
  assert.equal(
    v
      .all()
      .children('testpolicy.test:my-namespace/my-policy-1')
      .map((n) => n.locator),
    [`${G}#http`],
  )
})

test('every kind of section is named by its object: listener, rule, service port (issue 26, cause 1)', async () => {
  const v = await gatewayApiView(oneOfEach(), withSections)
  const sections = v
    .nodes()
    .filter((n) => n.section)
    .map((n) => `${n.kind} ${n.locator}`)
  assert.equal(sections, [
    'Listener gateway.gateway.networking.k8s.io:my-namespace/my-gateway#my-listener',
    'GRPCRouteRule grpcroute.gateway.networking.k8s.io:my-namespace/my-grpc-route#rule-1',
    'HTTPRouteRule httproute.gateway.networking.k8s.io:my-namespace/my-http-route#rule-1',
    'ServicePort service:my-namespace/my-service#http',
    'TCPRouteRule tcproute.gateway.networking.k8s.io:my-namespace/my-tcp-route#rule-1',
    'TLSRouteRule tlsroute.gateway.networking.k8s.io:my-namespace/my-tls-route#rule-1',
    'UDPRouteRule udproute.gateway.networking.k8s.io:my-namespace/my-udp-route#rule-1',
  ])
  const listener = 'gateway.gateway.networking.k8s.io:my-namespace/my-gateway#my-listener'
  assert.ok(
    v.edges().some((e) => e.to === listener),
    'edges() uses the same locator',
  )
  assert.ok(v.toDot().includes(`"${listener}" [label="Listener\\nmy-namespace/my-gateway#my-listener"`), 'and the DOT')
  assert.equal(
    locator({ kind: 'Gateway', group: 'gateway.networking.k8s.io', namespace: 'my-namespace', name: 'my-gateway', section: 'my-listener' }),
    listener,
  )
})

test('rules are expanded per route kind (issue 26, cause 3)', async () => {
  const v = await gatewayApiView(oneOfEach(), {
    expandListeners: false,
    expandRules: ['TCPRoute', 'GRPCRoute'],
    routeKinds: ['HTTPRoute', 'GRPCRoute', 'TCPRoute', 'TLSRoute', 'UDPRoute'],
  })
  // the links as edges() lists them, by name
  const links: Record<string, string[]> = {}
  const nameOf = new Map(v.nodes().map((n) => [n.locator, pmName(n)]))
  for (const e of v.edges()) if (!e.policy) (links[nameOf.get(e.from)!] ??= []).push(nameOf.get(e.to)!)
  assertLinks(links, {
    'my-gateway-class': ['my-gateway'],
    'my-gateway': ['my-http-route', 'my-grpc-route', 'my-tcp-route', 'my-tls-route', 'my-udp-route'],
    'my-grpc-route': ['my-grpc-route#rule-1'],
    'my-grpc-route#rule-1': ['my-service'],
    'my-http-route': ['my-service'],
    'my-tcp-route': ['my-tcp-route#rule-1'],
    'my-tcp-route#rule-1': ['my-service'],
    'my-tls-route': ['my-service'],
    'my-udp-route': ['my-service'],
  })
})

// follows policy-machinery machinery/gateway_api_topology_test.go TestRouteRuleNameHandling (five subtests)
test('TestRouteRuleNameHandling: the name field when present, else rule-<n>', async () => {
  const named =
    (...names: Array<string | undefined>) =>
    (r: any) => {
      r.spec.rules = names.map((name) => ({ ...(name ? { name } : {}), backendRefs: [buildBackendRef()] }))
    }
  const rulesOf = async (res: GatewayApiResources, kind: string) =>
    (await gatewayApiView(res, withSections)).nodes(kind).map((n: TopologyNode) => n.section)
  assert.equal(
    await rulesOf({ httpRoutes: [buildHTTPRoute(named('custom-name'))] }, 'HTTPRouteRule'),
    ['custom-name'],
    'HTTPRouteRule with explicit name',
  )
  assert.equal(await rulesOf({ httpRoutes: [buildHTTPRoute()] }, 'HTTPRouteRule'), ['rule-1'], 'HTTPRouteRule without explicit name')
  assert.equal(await rulesOf({ grpcRoutes: [buildGRPCRoute(named('streaming-rule'))] }, 'GRPCRouteRule'), ['streaming-rule'])
  assert.equal(await rulesOf({ tcpRoutes: [buildTCPRoute(named('tcp-main'))] }, 'TCPRouteRule'), ['tcp-main'])
  const mixed = (await gatewayApiView({ httpRoutes: [buildHTTPRoute(named('first', undefined, 'third'))] }, withSections)).nodes(
    'HTTPRouteRule',
  )
  assert.equal(
    mixed.map((n) => n.section),
    ['first', 'rule-2', 'third'],
    'multiple rules with mixed naming',
  )
  assert.equal([ruleName({ name: 'x' }, 0), ruleName({}, 1), ruleName(undefined, 2)], ['x', 'rule-2', 'rule-3'])
})

// the controller's builder: listeners, HTTP and GRPC rules and service ports expanded
const builderOptions = {
  expandListeners: true,
  expandRules: true,
  expandServicePorts: true,
  routeKinds: ['HTTPRoute', 'GRPCRoute'],
} as const
const countByKind = (v: TopologyView) => {
  const out: Record<string, number> = {}
  for (const n of v.targetables().items()) out[n.kind] = (out[n.kind] ?? 0) + 1
  return out
}

// follows policy-machinery controller/topology_builder_test.go TestGatewayAPITopologyBuilder (seven subtests)
test('TestGatewayAPITopologyBuilder: kinds counted in Targetables()', async () => {
  const named = (name: string, ns?: string) => (o: any) => {
    o.metadata.name = name
    if (ns) o.metadata.namespace = ns
  }
  const cases: Array<{ name: string; res: GatewayApiResources; gateways: number; http: number; grpc: number; services: number }> = [
    { name: 'empty store', res: {}, gateways: 0, http: 0, grpc: 0, services: 0 },
    { name: 'gateway only', res: { gateways: [buildGateway()] }, gateways: 1, http: 0, grpc: 0, services: 0 },
    { name: 'httproute only', res: { httpRoutes: [buildHTTPRoute()] }, gateways: 0, http: 1, grpc: 0, services: 0 },
    { name: 'grpcroute only', res: { grpcRoutes: [buildGRPCRoute()] }, gateways: 0, http: 0, grpc: 1, services: 0 },
    { name: 'service only', res: { services: [buildService()] }, gateways: 0, http: 0, grpc: 0, services: 1 },
    {
      name: 'mixed resources',
      res: { gateways: [buildGateway()], httpRoutes: [buildHTTPRoute()], grpcRoutes: [buildGRPCRoute()], services: [buildService()] },
      gateways: 1,
      http: 1,
      grpc: 1,
      services: 1,
    },
    {
      name: 'multiple grpcroutes',
      res: {
        grpcRoutes: [
          buildGRPCRoute(named('grpcroute-1')),
          buildGRPCRoute(named('grpcroute-2')),
          buildGRPCRoute(named('grpcroute-3', 'app')),
        ],
      },
      gateways: 0,
      http: 0,
      grpc: 3,
      services: 0,
    },
  ]
  for (const c of cases) {
    const n = countByKind(await gatewayApiView(c.res, builderOptions))
    assert.equal([n.Gateway ?? 0, n.HTTPRoute ?? 0, n.GRPCRoute ?? 0, n.Service ?? 0], [c.gateways, c.http, c.grpc, c.services], c.name)
  }
})

// follows policy-machinery controller/topology_builder_test.go TestGatewayAPITopologyBuilder_GRPCRouteWithMultipleRules
test('TestGatewayAPITopologyBuilder_GRPCRouteWithMultipleRules: two rules, two GRPCRouteRules', async () => {
  const route = buildGRPCRoute((r) => {
    r.spec.rules = [
      { matches: [{ method: { service: 'example.Service', method: 'Echo' } }], backendRefs: [buildBackendRef()] },
      { matches: [{ method: { service: 'example.Service', method: 'Stream' } }], backendRefs: [buildBackendRef()] },
    ]
  })
  const n = countByKind(await gatewayApiView({ grpcRoutes: [route] }, builderOptions))
  assert.is(n.GRPCRoute, 1)
  assert.is(n.GRPCRouteRule, 2)
})

test.run()
