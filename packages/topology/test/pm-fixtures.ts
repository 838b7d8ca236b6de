// Fixtures for the tests that follow Kuadrant policy-machinery's own (machinery/test_helper.go,
// machinery/gateway_api_test_helper.go): the fruit kinds and their links, the Gateway API builders
// with policy-machinery's default objects, and the comparisons its tests make (links walked from the
// roots, by name), plus DOT read back as an edge set.
import * as assert from 'uvu/assert'
import { DB, type Table } from '@statewright/statedb'
import {
  Topology,
  defineTopology,
  gatewayApiTopology,
  locator,
  type GatewayApiTopologyOptions,
  type LinkDefinition,
  type PolicyKind,
  type TopologyCollection,
  type TopologyNode,
  type TopologyView,
} from '@statewright/topology'
import { table } from './topology-fixtures.ts'

type Obj = { apiVersion?: string; kind?: string; metadata: { name: string; namespace?: string }; [k: string]: any }

/** policy-machinery's GetName(): a section is `<object>#<section>`. */
export const pmName = (n: TopologyNode) => (n.section ? `${n.name}#${n.section}` : n.name)

/** linksFromTargetable / linksFromAll: from every root of the collection, each node's children by name. */
export function linksFrom(c: TopologyCollection): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  const visit = (n: TopologyNode) => {
    if (pmName(n) in out) return
    const children = c.children(n)
    out[pmName(n)] = children.map(pmName).sort()
    for (const ch of children) visit(ch)
  }
  for (const r of c.roots()) visit(r)
  return out
}

/** The links walked from the roots are exactly the expected ones (a node missing from `expected` has no children). */
export function assertLinks(actual: Record<string, string[]>, expected: Record<string, string[]>, msg = ''): void {
  const want = Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, [...v].sort()]))
  for (const k of Object.keys(actual)) if (!(k in want)) want[k] = []
  assert.equal(actual, want, msg)
}

/** The edges of a DOT text, as "from -> to" lines, sorted. */
export function dotEdges(dot: string): string[] {
  const out: string[] = []
  for (const m of dot.matchAll(/^\s*("(?:[^"\\]|\\.)*") -> ("(?:[^"\\]|\\.)*")/gm)) out.push(`${JSON.parse(m[1]!)} -> ${JSON.parse(m[2]!)}`)
  return out.sort()
}

/** The view's edges as "from -> to" lines (links and attachments), sorted. */
export const edgeSet = (v: TopologyView) =>
  v
    .edges()
    .map((e) => `${e.from} -> ${e.to}`)
    .sort()

// ---------- fruits (machinery/test_helper.go) ----------

export const TEST_GROUP = 'example.test'
const fruitLoc = (kind: string, name: string, ns?: string) => locator({ kind, group: TEST_GROUP, name, ...(ns ? { namespace: ns } : {}) })

export interface Fruit extends Obj {
  appleParents?: string[]
  childBananas?: string[]
  orangeParents?: string[]
  childApples?: string[]
  peachParents?: string[]
  ref?: string
}
export const fruit = (name: string, o: Partial<Fruit> & { namespace?: string } = {}): Fruit => {
  const { namespace, ...rest } = o
  return { metadata: { name, ...(namespace ? { namespace } : {}) }, ...rest }
}

/** FruitPolicy: targets Apple (cluster-scoped) or Orange (in the policy's namespace), as GetTargetRefs does. */
export const fruitPolicy = (name: string, target: { kind: string; name: string }, namespace = 'my-namespace'): Obj => ({
  apiVersion: 'test/v1',
  kind: 'FruitPolicy',
  metadata: { name, namespace },
  spec: { targetRef: { group: TEST_GROUP, ...target } },
})
const fruitPolicyKind = (t: Table<any>): PolicyKind => ({
  kind: 'FruitPolicy',
  group: 'test',
  table: t,
  targetRefs: (p: Obj) => {
    const r = p.spec.targetRef
    return [locator({ kind: r.kind, group: r.group, name: r.name, ...(r.kind === 'Orange' ? { namespace: p.metadata.namespace } : {}) })]
  },
})

export const linkApplesToOranges: LinkDefinition = {
  from: 'Apple',
  to: 'Orange',
  parents: (o: TopologyNode<Fruit>) => (o.object.appleParents ?? []).map((a) => fruitLoc('Apple', a)),
}
export const linkOrangesToBananas: LinkDefinition = {
  from: 'Orange',
  to: 'Banana',
  children: (o: TopologyNode<Fruit>) => (o.object.childBananas ?? []).map((b) => fruitLoc('Banana', b)),
}
export const linkOrangesToPeaches: LinkDefinition = {
  from: 'Orange',
  to: 'Peach',
  parents: (p: TopologyNode<Fruit>) => (p.object.orangeParents ?? []).map((o) => fruitLoc('Orange', o, p.namespace)),
}
export const linkPeachesToApples: LinkDefinition = {
  from: 'Peach',
  to: 'Apple',
  children: (p: TopologyNode<Fruit>) => (p.object.childApples ?? []).map((a) => fruitLoc('Apple', a)),
}
export const linkPeachesToLemons: LinkDefinition = {
  from: 'Peach',
  to: 'Lemon',
  parents: (l: TopologyNode<Fruit>) => (l.object.peachParents ?? []).map((p) => fruitLoc('Peach', p, l.namespace)),
}
/** LinkInfoFrom(kind): an Info's parent is the object its `ref` locates. */
export const linkInfoFrom = (kind: string): LinkDefinition => ({
  from: kind,
  to: 'Info',
  parents: (i: TopologyNode<Fruit>) => [i.object.ref!],
})

/** A topology of fruits, infos and fruit policies (every kind in example.test, policies in test). */
export async function fruitTopology(o: {
  apples?: Fruit[]
  oranges?: Fruit[]
  bananas?: Fruit[]
  peaches?: Fruit[]
  lemons?: Fruit[]
  infos?: Fruit[]
  policies?: Obj[]
  links: LinkDefinition[]
  allowLoops?: boolean
}): Promise<TopologyView> {
  const db = new DB()
  const kinds = ['Apple', 'Orange', 'Banana', 'Peach', 'Lemon'] as const
  const objects: Record<string, Fruit[] | undefined> = {
    Apple: o.apples,
    Orange: o.oranges,
    Banana: o.bananas,
    Peach: o.peaches,
    Lemon: o.lemons,
  }
  const tables = Object.fromEntries(kinds.map((k) => [k, table<Fruit>(k.toLowerCase())]))
  const infos = table<Fruit>('infos')
  const policies = table<Obj>('fruitpolicies')
  db.register(...Object.values(tables), infos, policies)
  await db.write([...Object.values(tables), infos, policies], (w) => {
    for (const k of kinds) for (const x of objects[k] ?? []) tables[k]!.insert(w, x)
    for (const x of o.infos ?? []) infos.insert(w, x)
    for (const x of o.policies ?? []) policies.insert(w, x)
  })
  const top = new Topology(
    defineTopology({
      targetables: kinds.map((k) => ({ kind: k, group: TEST_GROUP, table: tables[k]! })),
      objects: [{ kind: 'Info', group: TEST_GROUP, table: infos }],
      policies: [fruitPolicyKind(policies)],
      links: o.links,
      ...(o.allowLoops ? { allowLoops: true } : {}),
    }),
    { db },
  )
  await top.sync()
  return top.view()
}

// ---------- Gateway API (machinery/gateway_api_test_helper.go) ----------

const GWV = 'gateway.networking.k8s.io/v1'
const NS = 'my-namespace'
type Mut<T> = (o: T) => void
const build = <T>(o: T, fs: Array<Mut<T>>): T => {
  for (const f of fs) f(o)
  return o
}

export const buildBackendRef = (...fs: Array<Mut<any>>) => build<any>({ name: 'my-service' }, fs)
export const buildGatewayClass = (...fs: Array<Mut<any>>) =>
  build<any>(
    { apiVersion: GWV, kind: 'GatewayClass', metadata: { name: 'my-gateway-class' }, spec: { controllerName: 'my-gateway-controller' } },
    fs,
  )
export const buildGateway = (...fs: Array<Mut<any>>) =>
  build<any>(
    {
      apiVersion: GWV,
      kind: 'Gateway',
      metadata: { name: 'my-gateway', namespace: NS },
      spec: { gatewayClassName: 'my-gateway-class', listeners: [{ name: 'my-listener', port: 80, protocol: 'HTTP' }] },
    },
    fs,
  )
const buildRoute =
  (kind: string, name: string) =>
  (...fs: Array<Mut<any>>) =>
    build<any>(
      {
        apiVersion: GWV,
        kind,
        metadata: { name, namespace: NS },
        spec: { parentRefs: [{ name: 'my-gateway' }], rules: [{ backendRefs: [buildBackendRef()] }] },
      },
      fs,
    )
export const buildHTTPRoute = buildRoute('HTTPRoute', 'my-http-route')
export const buildGRPCRoute = buildRoute('GRPCRoute', 'my-grpc-route')
export const buildTCPRoute = buildRoute('TCPRoute', 'my-tcp-route')
export const buildTLSRoute = buildRoute('TLSRoute', 'my-tls-route')
export const buildUDPRoute = buildRoute('UDPRoute', 'my-udp-route')
export const buildService = (...fs: Array<Mut<any>>) =>
  build<any>(
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'my-service', namespace: NS },
      spec: { ports: [{ name: 'http', port: 80 }], selector: { app: 'my-app' } },
    },
    fs,
  )
/** TestPolicy: one targetRef (LocalPolicyTargetReferenceWithSectionName) in the policy's namespace. */
export const buildTestPolicy = (...fs: Array<Mut<any>>) =>
  build<any>(
    {
      apiVersion: 'test/v1',
      kind: 'TestPolicy',
      metadata: { name: 'my-policy', namespace: NS },
      spec: { targetRef: { group: '', kind: 'Service', name: 'my-service' } },
    },
    fs,
  )

export interface GatewayApiResources {
  gatewayClasses?: any[]
  gateways?: any[]
  httpRoutes?: any[]
  grpcRoutes?: any[]
  tcpRoutes?: any[]
  tlsRoutes?: any[]
  udpRoutes?: any[]
  services?: any[]
}

/** BuildComplexGatewayAPITopology: 2 classes, 5 gateways, 3 HTTP, 1 GRPC, 1 TCP, 1 TLS, 1 UDP route, 7 services. */
export function buildComplexGatewayApiTopology(): GatewayApiResources {
  const name = (n: string) => (o: any) => {
    o.metadata.name = n
  }
  const listeners =
    (...names: string[]) =>
    (g: any) => {
      g.spec.listeners = names.map((n, i) => ({ name: n, port: i === 0 ? 80 : 443, protocol: i === 0 ? 'HTTP' : 'HTTPS' }))
    }
  const cls = (c: string) => (g: any) => {
    g.spec.gatewayClassName = c
  }
  const ports =
    (...ps: Array<[string, number]>) =>
    (s: any) => {
      s.spec.ports = ps.map(([n, p]) => ({ name: n, port: p }))
    }
  const rules =
    (...rs: Array<Array<{ name: string; port?: number }>>) =>
    (r: any) => {
      r.spec.rules = rs.map((refs) => ({ backendRefs: refs.map((b) => buildBackendRef((x) => Object.assign(x, b))) }))
    }
  const parents =
    (...ps: Array<{ name: string; sectionName?: string }>) =>
    (r: any) => {
      r.spec.parentRefs = ps
    }
  return {
    gatewayClasses: [buildGatewayClass(name('gatewayclass-1')), buildGatewayClass(name('gatewayclass-2'))],
    gateways: [
      buildGateway(name('gateway-1'), cls('gatewayclass-1'), listeners('listener-1', 'listener-2')),
      buildGateway(name('gateway-2'), cls('gatewayclass-1'), listeners('listener-1')),
      buildGateway(name('gateway-3'), cls('gatewayclass-1'), listeners('listener-1', 'listener-2')),
      buildGateway(name('gateway-4'), cls('gatewayclass-2'), listeners('listener-1', 'listener-2')),
      buildGateway(name('gateway-5'), cls('gatewayclass-2'), listeners('listener-1')),
    ],
    httpRoutes: [
      buildHTTPRoute(name('http-route-1'), parents({ name: 'gateway-1' }), rules([{ name: 'service-1' }], [{ name: 'service-2' }])),
      buildHTTPRoute(
        name('http-route-2'),
        parents({ name: 'gateway-1', sectionName: 'listener-2' }, { name: 'gateway-2', sectionName: 'listener-1' }),
        rules([{ name: 'service-3', port: 80 }]),
      ),
      buildHTTPRoute(name('http-route-3'), parents({ name: 'gateway-2' }), rules([{ name: 'service-3', port: 80 }])),
    ],
    services: [
      buildService(name('service-1'), ports(['port-1', 80], ['port-2', 443])),
      buildService(name('service-2'), ports(['port-1', 80])),
      buildService(name('service-3'), ports(['port-1', 80], ['port-2', 443])),
      buildService(name('service-4'), ports(['port-1', 80])),
      buildService(name('service-5'), ports(['port-1', 80])),
      buildService(name('service-6'), ports(['port-1', 80])),
      buildService(name('service-7'), ports(['port-1', 80])),
    ],
    grpcRoutes: [buildGRPCRoute(name('grpc-route-1'), parents({ name: 'gateway-5' }), rules([{ name: 'service-7' }]))],
    tcpRoutes: [
      buildTCPRoute(
        name('tcp-route-1'),
        parents({ name: 'gateway-4' }),
        rules([{ name: 'service-5' }, { name: 'service-6' }], [{ name: 'service-6', port: 80 }]),
      ),
    ],
    tlsRoutes: [
      buildTLSRoute(
        name('tls-route-1'),
        parents({ name: 'gateway-3' }, { name: 'gateway-4' }),
        rules([{ name: 'service-5' }], [{ name: 'service-5' }]),
      ),
    ],
    udpRoutes: [
      buildUDPRoute(
        name('udp-route-1'),
        parents({ name: 'gateway-3' }),
        rules([{ name: 'service-3', port: 443 }], [{ name: 'service-4', port: 80 }]),
      ),
    ],
  }
}

/** A Gateway API topology of the resources (and TestPolicies), synced, as a view. */
export async function gatewayApiView(
  res: GatewayApiResources,
  options: Omit<GatewayApiTopologyOptions, 'tables' | 'policies'>,
  policies: any[] = [],
  policyKind: Omit<PolicyKind, 'table'> = { kind: 'TestPolicy', group: 'test' },
): Promise<TopologyView> {
  const db = new DB()
  const t = {
    gatewayClasses: table<any>('gatewayclasses'),
    gateways: table<any>('gateways'),
    httpRoutes: table<any>('httproutes'),
    grpcRoutes: table<any>('grpcroutes'),
    tcpRoutes: table<any>('tcproutes'),
    tlsRoutes: table<any>('tlsroutes'),
    udpRoutes: table<any>('udproutes'),
    services: table<any>('services'),
  }
  const pt = table<any>('testpolicies')
  db.register(...Object.values(t), pt)
  await db.write([...Object.values(t), pt], (w) => {
    for (const [k, tab] of Object.entries(t)) for (const x of (res as Record<string, any[] | undefined>)[k] ?? []) tab.insert(w, x)
    for (const p of policies) pt.insert(w, p)
  })
  const top = new Topology(gatewayApiTopology({ ...options, tables: t, policies: [{ ...policyKind, table: pt }] }), { db })
  await top.sync()
  return top.view()
}
