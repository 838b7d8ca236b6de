// Topology: the Gateway API graph (listeners by hostname and sectionName, rules, services), policies
// by targetRef, cycles, DOT, errors of links retried, cost per change, and a randomized test that the
// incrementally kept graph equals one built from scratch and a naive model of the links.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { DB, Table, defineIndex, setValidation } from '@statewright/statedb'
import {
  Topology,
  TopologyCycleError,
  defineTopology,
  gatewayApiTopology,
  type TopologyNode,
  type TopologyView,
} from '@statewright/topology'
import { gatewayTables, gatewayClass, gateway, route, service, policy } from './topology-fixtures.ts'

setValidation(true)

function topo(t: ReturnType<typeof gatewayTables>, name = 'topology', extra: Parameters<typeof gatewayApiTopology>[0] = {}) {
  return new Topology(
    gatewayApiTopology({
      tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes, services: t.services },
      policies: [{ kind: 'RateLimitPolicy', group: 'kuadrant.io', table: t.policies }],
      ...extra,
    }),
    { db: t.db, name },
  )
}
const locs = (ns: { locator: string }[]) => ns.map((n) => n.locator)
const L = (gw: string, l: string) => `gateway.gateway.networking.k8s.io:default/${gw}#${l}`
const R = (r: string) => `httproute.gateway.networking.k8s.io:default/${r}`
const G = (g: string) => `gateway.gateway.networking.k8s.io:default/${g}`
const GATEWAY_API = 'gateway.networking.k8s.io'

test('the Gateway API graph: class -> gateway -> listener -> route -> rule -> service; policies by targetRef', async () => {
  const t = gatewayTables()
  const top = topo(t)
  await t.db.write([t.classes, t.gateways, t.routes, t.services, t.policies], (w) => {
    t.classes.insert(w, gatewayClass('istio'))
    t.gateways.insert(
      w,
      gateway('default', 'gw-1', [
        { name: 'http', hostname: '*.example.com' },
        { name: 'other', hostname: 'other.org' },
      ]),
    )
    t.routes.insert(w, route('default', 'route-1', ['gw-1'], { hostnames: ['api.example.com'] }))
    t.routes.insert(w, route('default', 'route-2', [{ name: 'gw-1', sectionName: 'other' }]))
    t.routes.insert(w, route('default', 'route-3', ['gw-1'], { hostnames: ['nowhere.net'] }))
    t.services.insert(w, service('default', 'route-1-svc'))
    t.policies.insert(w, policy('default', 'rlp-1', { kind: 'Gateway', name: 'gw-1' }, { limits: {} }))
    t.policies.insert(w, policy('default', 'rlp-2', { kind: 'HTTPRoute', name: 'missing' }, { limits: {} }))
    t.policies.insert(w, policy('default', 'rlp-3', { kind: 'Gateway', name: 'gw-1', sectionName: 'http' }, { limits: {} }))
  })
  await top.sync()
  const v = top.view()
  assert.equal(
    locs(v.roots()),
    ['gatewayclass.gateway.networking.k8s.io:istio', R('route-3')],
    'route-3 (no hostname shared) attaches nowhere',
  )
  assert.equal(locs(v.children(G('gw-1'))), [L('gw-1', 'http'), L('gw-1', 'other')])
  // hostnames intersect: route-1 only on *.example.com; route-2 names the section "other"
  assert.equal(locs(v.children(L('gw-1', 'http'))), [R('route-1')])
  assert.equal(locs(v.children(L('gw-1', 'other'))), [R('route-2')])
  assert.equal(locs(v.parents(R('route-1'))), [L('gw-1', 'http')])
  assert.equal(locs(v.children(R('route-1'))), [`httproute.gateway.networking.k8s.io:default/route-1#rule-1`])
  assert.equal(locs(v.children(`httproute.gateway.networking.k8s.io:default/route-1#rule-1`)), ['service:default/route-1-svc'])
  assert.equal(locs(v.children(`httproute.gateway.networking.k8s.io:default/route-2#rule-1`)), [], 'an absent service is no child')
  assert.equal(locs(v.policiesOf(G('gw-1'))), ['ratelimitpolicy.kuadrant.io:default/rlp-1'])
  // a targetRef with sectionName finds the listener
  assert.equal(locs(v.policiesOf(L('gw-1', 'http'))), ['ratelimitpolicy.kuadrant.io:default/rlp-3'])
  assert.equal(
    v.unattached().map((u) => [u.policy.name, u.missing]),
    [['rlp-2', [R('missing')]]],
  )
  const paths = v.paths('gatewayclass.gateway.networking.k8s.io:istio', 'service:default/route-1-svc')
  assert.equal(
    paths.map((p) => p.map((n) => n.kind)),
    [['GatewayClass', 'Gateway', 'Listener', 'HTTPRoute', 'HTTPRouteRule', 'Service']],
  )

  // the service arrives later: linked without the rule being processed again
  await t.db.write(t.services, (w) => {
    t.services.insert(w, service('default', 'route-2-svc'))
  })
  await top.sync()
  assert.equal(locs(top.view().children(`httproute.gateway.networking.k8s.io:default/route-2#rule-1`)), ['service:default/route-2-svc'])
  // the old view still shows the old snapshot (immutable per read txn)
  assert.equal(locs(v.children(`httproute.gateway.networking.k8s.io:default/route-2#rule-1`)), [])
  // a listener's hostname change re-links routes with no work on them
  await t.db.write(t.gateways, (w) => {
    t.gateways.insert(
      w,
      gateway('default', 'gw-1', [
        { name: 'http', hostname: '*.net' },
        { name: 'other', hostname: 'other.org' },
      ]),
    )
  })
  await top.sync()
  assert.equal(locs(top.view().children(L('gw-1', 'http'))), [R('route-3')])
})

test('expandServicePorts: a backendRef with a port links its rule to that port, one without to the Service (issue 26, cause 2)', async () => {
  const t = gatewayTables()
  const top = new Topology(
    gatewayApiTopology({
      tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes, services: t.services },
      expandServicePorts: true,
      policies: [{ kind: 'BackendTLSPolicy', group: GATEWAY_API, table: t.policies }],
    }),
    { db: t.db, name: 'ports' },
  )
  await t.db.write([t.classes, t.gateways, t.routes, t.services, t.policies], (w) => {
    t.classes.insert(w, gatewayClass('istio'))
    t.gateways.insert(w, gateway('default', 'gw-1'))
    t.routes.insert(
      w,
      route('default', 'r', ['gw-1'], { rules: [{ backendRefs: [{ name: 'web', port: 8080 }] }, { backendRefs: [{ name: 'web' }] }] }),
    )
    t.services.insert(w, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        ports: [
          { name: 'http', port: 80 },
          { name: 'alt', port: 8080 },
        ],
      },
    })
    // a BackendTLSPolicy targets the Service
    t.policies.insert(w, { ...policy('default', 'tls', { kind: 'Service', name: 'web', group: '' }, {}), kind: 'BackendTLSPolicy' })
  })
  await top.sync()
  const v = top.view()
  // read by kind and section, whatever the locators' form
  const rule = (i: number) => v.nodes('HTTPRouteRule').find((n) => n.section === `rule-${i}`)!
  const named = (ns: TopologyNode[]) => ns.map((n) => `${n.kind} ${n.name}${n.section ? `#${n.section}` : ''}`)
  assert.equal(named(v.children(rule(2))), ['Service web'], 'no port: the Service, not its ports')
  assert.equal(named(v.children(rule(1))), ['ServicePort web#alt'], 'port 8080: the port of that number only')
  assert.equal(named(v.children('service:default/web')), ['ServicePort web#alt', 'ServicePort web#http'])
  assert.not.ok(locs(v.roots()).includes('service:default/web'), 'a Service some rule names without a port is no root')
  const paths = v.paths(G('gw-1'), 'service:default/web')
  assert.equal(
    paths.map((p) => p.map((n) => n.kind)),
    [['Gateway', 'Listener', 'HTTPRoute', 'HTTPRouteRule', 'Service']],
  )
  assert.equal(
    paths[0]!.flatMap((n) => locs(v.policiesOf(n))),
    ['backendtlspolicy.gateway.networking.k8s.io:default/tls'],
    'the policy on the Service lies on the gateway-to-backend path',
  )
})

test('DOT: every node once, edges, policies dashed', async () => {
  const t = gatewayTables()
  const top = topo(t)
  await t.db.write([t.classes, t.gateways, t.routes, t.policies], (w) => {
    t.classes.insert(w, gatewayClass('istio'))
    t.gateways.insert(w, gateway('default', 'gw-1'))
    t.routes.insert(w, route('default', 'r', ['gw-1']))
    t.policies.insert(w, policy('default', 'p', { kind: 'HTTPRoute', name: 'r' }, { limits: {} }))
  })
  await top.sync()
  const dot = top.view().toDot()
  assert.ok(dot.startsWith('digraph "topology" {'))
  assert.ok(dot.includes(`"${G('gw-1')}" -> "${L('gw-1', 'http')}";`), dot)
  assert.ok(dot.includes(`"ratelimitpolicy.kuadrant.io:default/p" -> "${R('r')}" [style=dashed];`), dot)
  assert.ok(dot.includes('label="Gateway\\ndefault/gw-1"'), dot)
  assert.equal(dot.match(/\[label=/g)!.length, top.view().nodes().length)
})

test('a cycle throws TopologyCycleError naming it, unless loops are allowed', async () => {
  interface N {
    metadata: { name: string }
    next: string[]
  }
  const nodes = new Table<N>({ name: 'ns', primary: defineIndex<N, string>({ name: 'k', key: (n) => n.metadata.name, unique: true }) })
  const db = new DB({ tables: [nodes] })
  const def = (allowLoops: boolean) =>
    defineTopology({
      allowLoops,
      targetables: [{ kind: 'N', table: nodes }],
      links: [{ from: 'N', to: 'N', children: (p) => p.object.next.map((x: string) => `n:${x}`) }],
    })
  await db.write(nodes, (w) => {
    nodes.insert(w, { metadata: { name: 'a' }, next: ['b'] })
    nodes.insert(w, { metadata: { name: 'b' }, next: ['a', 'c'] })
    nodes.insert(w, { metadata: { name: 'c' }, next: [] })
  })
  const strict = new Topology(def(false), { db, name: 'strict' })
  const loose = new Topology(def(true), { db, name: 'loose' })
  await strict.sync()
  await loose.sync()
  try {
    strict.view().paths('n:a', 'n:c')
    assert.unreachable('a cycle must throw')
  } catch (err) {
    assert.instance(err, TopologyCycleError)
    assert.equal((err as Error).message, 'topology has a cycle: n:a -> n:b -> n:a (set allowLoops to allow it)')
  }
  assert.throws(() => strict.view().check(), /n:a -> n:b -> n:a/)
  assert.equal(
    loose
      .view()
      .paths('n:a', 'n:c')
      .map((p) => p.map((n) => n.name)),
    [['a', 'b', 'c']],
  )
})

test('a throwing link is an error naming the object, retried with backoff until it passes', async () => {
  const t = gatewayTables()
  let broken = true
  const def = gatewayApiTopology({
    tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes, services: t.services },
  })
  const link = def.links.find((l) => l.to === 'HTTPRoute')!
  const parents = link.parents!
  link.parents = (c) => {
    if (broken && c.name === 'bad') throw new Error('boom')
    return parents(c)
  }
  const top = new Topology(def, { db: t.db, retry: { minMs: 1, maxMs: 5 } })
  await t.db.write([t.gateways, t.routes], (w) => {
    t.gateways.insert(w, gateway('default', 'gw-1'))
    t.routes.insert(w, route('default', 'bad', ['gw-1']))
  })
  const r = await top.sync()
  assert.equal(
    top.errors().map((e) => [e.object, e.error, e.attempts]),
    [[R('bad'), `link Listener -> HTTPRoute (parents of ${R('bad')}): boom`, 1]],
  )
  assert.ok(r.nextRetryAt !== undefined)
  assert.ok(top.view().node(R('bad')), 'the object keeps its node')
  await top.sync(r.nextRetryAt! + 1)
  assert.equal(top.errors()[0]!.attempts, 2, 'retried')
  broken = false
  await top.sync(Date.now() + 1000)
  assert.equal(top.errors(), [])
  assert.equal(locs(top.view().parents(R('bad'))), [L('gw-1', 'http')])
})

test('a change costs O(its links): one route changed among 2 000 calls its link once', async () => {
  const t = gatewayTables()
  const def = gatewayApiTopology({
    tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes, services: t.services },
  })
  let calls = 0
  for (const l of def.links) {
    if (l.parents) {
      const f = l.parents
      l.parents = (c) => {
        calls++
        return f(c)
      }
    }
    if (l.children) {
      const f = l.children
      l.children = (p) => {
        calls++
        return f(p)
      }
    }
  }
  const top = new Topology(def, { db: t.db })
  await t.db.write([t.gateways, t.routes], (w) => {
    t.gateways.insert(w, gateway('default', 'gw-1'))
    for (let i = 0; i < 2000; i++) t.routes.insert(w, route('default', `r${i}`, ['gw-1']))
  })
  await top.sync()
  calls = 0
  await t.db.write(t.routes, (w) => {
    t.routes.insert(w, route('default', 'r7', ['gw-1'], { hostnames: ['a.example.com'] }))
  })
  await top.sync()
  assert.equal(calls, 2, 'parents of the route and children of its one rule')
  calls = 0
  await t.db.write(t.gateways, (w) => {
    t.gateways.insert(w, gateway('default', 'gw-1', [{ name: 'http', hostname: '*.example.com' }, { name: 'b' }]))
  })
  await top.sync()
  assert.equal(calls, 1, 'a gateway change does not touch its 2 000 routes (only GatewayClass -> Gateway)')
  assert.equal(top.view().children(L('gw-1', 'b')).length, 2000)
})

// ---- randomized: incremental == from scratch == a naive model ----

/** The Gateway API tables' objects, copied into a new DB (to build a topology from scratch). */
async function copyOf(t: ReturnType<typeof gatewayTables>): Promise<ReturnType<typeof gatewayTables>> {
  const s = gatewayTables(new DB())
  const rtxn = t.db.readTxn()
  const pairs = [
    [t.classes, s.classes],
    [t.gateways, s.gateways],
    [t.routes, s.routes],
    [t.services, s.services],
    [t.policies, s.policies],
  ] as Array<[Table<any>, Table<any>]>
  await s.db.write(
    pairs.map(([, to]) => to),
    (w) => {
      for (const [from, to] of pairs) for (const x of from.all(rtxn)) to.insert(w, x)
    },
  )
  return s
}

type Snap = { nodes: string[]; edges: string[]; policies: string[]; unattached: string[] }
function snapshot(v: TopologyView): Snap {
  return {
    nodes: v.nodes().map((n) => `${n.locator} ${JSON.stringify(n.object)}`),
    edges: v.edges().map((e) => `${e.from} -> ${e.to}${e.policy ? ' (policy)' : ''}`),
    policies: v
      .targetables()
      .items()
      .map(
        (n) =>
          `${n.locator}: ${v
            .policiesOf(n)
            .map((p) => p.locator)
            .join(',')}`,
      ),
    unattached: v.unattached().map((u) => u.policy.locator),
  }
}

/** Listener -> route edges computed straight from the objects, in plain Maps. */
function naiveListenerEdges(gws: Map<string, ReturnType<typeof gateway>>, routes: Map<string, ReturnType<typeof route>>): string[] {
  const covers = (p: string, h: string) => p === '*' || p === h || (p.startsWith('*.') && h.endsWith(p.slice(1)))
  const out: string[] = []
  for (const gw of gws.values())
    for (const l of gw.spec!.listeners!)
      for (const r of routes.values()) {
        const named = r.spec!.parentRefs!.some((p) => p.name === gw.metadata.name && (!p.sectionName || p.sectionName === l.name))
        const hs = r.spec!.hostnames ?? []
        const meets = hs.length === 0 || hs.some((h) => covers(l.hostname || '*', h) || covers(h, l.hostname || '*'))
        if (named && meets) out.push(`${L(gw.metadata.name, l.name)} -> ${R(r.metadata.name)}`)
      }
  return out.sort()
}

test('randomized: the incremental graph equals one built from scratch and a naive model', async () => {
  const hosts = ['*.example.com', 'a.example.com', 'b.example.com', 'other.org', undefined]
  const op = fc.oneof(
    fc.record({
      t: fc.constant('gw' as const),
      i: fc.nat(3),
      ls: fc.array(fc.record({ n: fc.constantFrom('http', 'https', 'x'), h: fc.constantFrom(...hosts) }), { maxLength: 3 }),
    }),
    fc.record({
      t: fc.constant('route' as const),
      i: fc.nat(5),
      gws: fc.array(fc.record({ g: fc.nat(3), s: fc.option(fc.constantFrom('http', 'https', 'x'), { nil: undefined }) }), { maxLength: 2 }),
      hs: fc.array(fc.constantFrom('a.example.com', '*.example.com', 'other.org', 'c.net'), { maxLength: 2 }),
    }),
    fc.record({ t: fc.constant('policy' as const), i: fc.nat(3), kind: fc.constantFrom('Gateway', 'HTTPRoute'), target: fc.nat(5) }),
    fc.record({ t: fc.constant('del' as const), what: fc.constantFrom('gw', 'route', 'policy'), i: fc.nat(5) }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 }), async (batches) => {
      const t = gatewayTables()
      const inc = topo(t, 'inc')
      const gws = new Map<string, ReturnType<typeof gateway>>()
      const routes = new Map<string, ReturnType<typeof route>>()
      await t.db.write(t.classes, (w) => {
        t.classes.insert(w, gatewayClass('istio'))
      })
      for (const batch of batches) {
        await t.db.write([t.gateways, t.routes, t.policies], (w) => {
          for (const o of batch) {
            if (o.t === 'gw') {
              const ls = [...new Map(o.ls.map((l) => [l.n, { name: l.n, ...(l.h ? { hostname: l.h } : {}) }])).values()]
              const g = gateway('default', `gw-${o.i}`, ls)
              gws.set(g.metadata.name, g)
              t.gateways.insert(w, g)
            } else if (o.t === 'route') {
              const r = route(
                'default',
                `route-${o.i}`,
                o.gws.map((x) => ({ name: `gw-${x.g}`, ...(x.s ? { sectionName: x.s } : {}) })),
                { hostnames: o.hs },
              )
              routes.set(r.metadata.name, r)
              t.routes.insert(w, r)
            } else if (o.t === 'policy') {
              t.policies.insert(
                w,
                policy(
                  'default',
                  `p-${o.i}`,
                  { kind: o.kind, name: o.kind === 'Gateway' ? `gw-${o.target % 4}` : `route-${o.target}` },
                  { limits: {} },
                ),
              )
            } else {
              const name = `${o.what === 'gw' ? 'gw' : o.what === 'route' ? 'route' : 'p'}-${o.i}`
              const tab = o.what === 'gw' ? t.gateways : o.what === 'route' ? t.routes : t.policies
              const cur = tab.get(w, tab.primary.query(`default/${name}` as never))
              if (cur) tab.delete(w, cur as never)
              if (o.what === 'gw') gws.delete(name)
              if (o.what === 'route') routes.delete(name)
            }
          }
        })
        await inc.sync()
      }
      const scratch = topo(await copyOf(t), 'scratch')
      await scratch.sync()
      const a = snapshot(inc.view())
      assert.equal(a, snapshot(scratch.view()))
      const listenerEdges = a.edges.filter((e) => e.startsWith('gateway.') && e.split(' -> ')[0]!.includes('#')).sort()
      assert.equal(listenerEdges, naiveListenerEdges(gws, routes))
    }),
    { numRuns: 120 },
  )
})

test('randomized, ports expanded: rules link to the port a backendRef numbers, or to the Service without one; incremental == scratch == model', async () => {
  const PORTS = [
    { name: 'http', port: 80 },
    { name: 'alt', port: 8080 },
  ]
  const op = fc.oneof(
    fc.record({ t: fc.constant('svc' as const), i: fc.nat(2), ports: fc.subarray(PORTS) }),
    fc.record({
      t: fc.constant('route' as const),
      i: fc.nat(3),
      rules: fc.array(fc.array(fc.record({ s: fc.nat(2), port: fc.constantFrom(80, 8080, 443, undefined) }), { maxLength: 3 }), {
        minLength: 1,
        maxLength: 2,
      }),
    }),
    fc.record({ t: fc.constant('del' as const), what: fc.constantFrom('svc', 'route'), i: fc.nat(3) }),
  )
  const def = (t: ReturnType<typeof gatewayTables>, name: string) =>
    new Topology(
      gatewayApiTopology({
        tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes, services: t.services },
        expandServicePorts: true,
      }),
      { db: t.db, name },
    )
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 6 }), async (batches) => {
      const t = gatewayTables()
      const inc = def(t, 'inc')
      const svcs = new Map<string, Array<{ name: string; port: number }>>()
      const routes = new Map<string, Array<Array<{ name: string; port?: number }>>>()
      await t.db.write(t.gateways, (w) => {
        t.gateways.insert(w, gateway('default', 'gw-1'))
      })
      for (const batch of batches) {
        await t.db.write([t.routes, t.services], (w) => {
          for (const o of batch) {
            if (o.t === 'svc') {
              svcs.set(`svc-${o.i}`, o.ports)
              t.services.insert(w, {
                apiVersion: 'v1',
                kind: 'Service',
                metadata: { name: `svc-${o.i}`, namespace: 'default' },
                spec: { ports: o.ports },
              })
            } else if (o.t === 'route') {
              const rules = o.rules.map((refs) =>
                refs.map((b) => ({ name: `svc-${b.s}`, ...(b.port !== undefined ? { port: b.port } : {}) })),
              )
              routes.set(`r-${o.i}`, rules)
              t.routes.insert(w, route('default', `r-${o.i}`, ['gw-1'], { rules: rules.map((backendRefs) => ({ backendRefs })) }))
            } else {
              const name = `${o.what === 'svc' ? 'svc' : 'r'}-${o.i}`
              const tab = (o.what === 'svc' ? t.services : t.routes) as Table<any>
              const cur = tab.get(w, tab.primary.query(`default/${name}` as never))
              if (cur) tab.delete(w, cur)
              if (o.what === 'svc') svcs.delete(name)
              else routes.delete(name)
            }
          }
        })
        await inc.sync()
      }
      const scratch = def(await copyOf(t), 'scratch')
      await scratch.sync()
      const a = snapshot(inc.view())
      assert.equal(a, snapshot(scratch.view()))
      // the model: a rule's backends, in plain Maps
      const want = new Set<string>()
      for (const [r, rules] of routes)
        rules.forEach((refs, i) => {
          for (const b of refs) {
            const ports = svcs.get(b.name)
            if (!ports) continue
            const svc = `service:default/${b.name}`
            if (b.port === undefined) want.add(`${R(r)}#rule-${i + 1} -> ${svc}`)
            else for (const p of ports) if (p.port === b.port) want.add(`${R(r)}#rule-${i + 1} -> ${svc}#${p.name}`)
          }
        })
      assert.equal(
        a.edges.filter((e) => e.split(' -> ')[0]!.includes('#rule-')),
        [...want].sort(),
      )
    }),
    { numRuns: 100 },
  )
})

test.run()
