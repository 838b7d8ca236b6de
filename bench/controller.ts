// State-of-world controller benchmarks (issue: topology controllers).
//
// 1. Topology upkeep per event at N gateways, N routes, N policies: the incremental topology (one
//    route edited, then sync) against rebuilding the whole topology per event, which is what Kuadrant's
//    policy-machinery does (it copies the state and builds the graph again on every event).
// 2. Effective-policy computation over 1 gateway x 64 listeners x 500 routes: routes linked to the
//    listeners whose hostnames they share (500 paths) against linking every route to every listener
//    (32 000 paths, most dead: kuadrant-operator#1085).
// 3. End to end on the embedded test server, with examples/ratelimit: policy events per second until
//    every status is final; and one gateway policy edit over 64 listeners x 500 routes with 500 route
//    policies until all 501 statuses are final.
// 4. API requests per policy change: this controller (watches; writes only what changed) against a
//    policy-centric baseline that lists gateways, routes, policies and ConfigMaps on every change and
//    applies every ConfigMap and every policy status again.
// 5. The docs' operator (examples/backup-operator.ts) as deployed: compiled, configured by flags;
//    cold start to /readyz and idle RSS (bench/footprint/backup-operator.ts).
// 6. The operator's path (bench/footprint/operator-path.ts): status writes against applies at 50 ms
//    latency, Events per object on the happy path, memory kept per stalled change-stream client.
import { DB } from '@statewright/statedb'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'
import { createLogger, type Manager } from '@statewright/controller'
import { Topology, gatewayApiTopology } from '@statewright/topology'
import { compute } from '../examples/ratelimit/reconcile.ts'
import { rateLimitController } from '../examples/ratelimit/main.ts'
import { RATE_LIMIT_CRDS } from '../examples/ratelimit/crds.ts'
import { gatewayTables, gateway, route, policy, gatewayClass } from '../packages/topology/test/topology-fixtures.ts'
import { median, type Result, type RunOptions } from './lib/index.ts'
import { operatorFootprint } from './footprint/backup-operator.ts'
import { operatorPath, stalledStreams } from './footprint/operator-path.ts'

const GW = 'gateway.networking.k8s.io/v1'
const topoOf = (t: ReturnType<typeof gatewayTables>, name: string, listenersByHostname = true) => {
  const def = gatewayApiTopology({
    tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes },
    services: false,
    policies: [{ kind: 'RateLimitPolicy', group: 'kuadrant.io', table: t.policies }],
  })
  if (!listenersByHostname) for (const l of def.links) if (l.from === 'Listener') l.accepts = () => true
  return new Topology(def, { db: t.db, name })
}

async function upkeep(n: number, events: number, rebuilds: number): Promise<Result[]> {
  const t = gatewayTables()
  await t.db.write([t.classes, t.gateways, t.routes, t.policies], (w) => {
    t.classes.insert(w, gatewayClass('istio'))
    for (let i = 0; i < n; i++) {
      t.gateways.insert(w, gateway('default', `gw-${i}`))
      t.routes.insert(w, route('default', `r-${i}`, [`gw-${i}`], { hostnames: [`r${i}.example.com`] }))
      t.policies.insert(
        w,
        policy('default', `p-${i}`, { kind: 'HTTPRoute', name: `r-${i}` }, { limits: { l: { rates: [{ limit: 1, window: '1s' }] } } }),
      )
    }
  })
  const inc = topoOf(t, 'inc')
  await inc.sync()
  const t0 = performance.now()
  for (let e = 0; e < events; e++) {
    const i = (e * 7919) % n
    await t.db.write(t.routes, (w) => {
      t.routes.insert(w, route('default', `r-${i}`, [`gw-${i}`], { hostnames: [`r${i}.example.com`, `e${e}.example.com`] }))
    })
    await inc.sync()
  }
  const incRate = events / ((performance.now() - t0) / 1000)
  const times: number[] = []
  for (let r = 0; r < rebuilds; r++) {
    const s = performance.now()
    const fresh = new DB()
    const copy = gatewayTables(fresh)
    const rtxn = t.db.readTxn()
    await fresh.write([copy.classes, copy.gateways, copy.routes, copy.policies], (w) => {
      for (const x of t.classes.all(rtxn)) copy.classes.insert(w, x)
      for (const x of t.gateways.all(rtxn)) copy.gateways.insert(w, x)
      for (const x of t.routes.all(rtxn)) copy.routes.insert(w, x)
      for (const x of t.policies.all(rtxn)) copy.policies.insert(w, x)
    })
    const full = topoOf(copy, `full${r}`)
    await full.sync()
    full.view().roots()
    times.push(performance.now() - s)
  }
  const rebuildRate = 1000 / median(times)
  return [
    {
      name: `topology_event_${n}`,
      unit: 'events/s',
      value: incRate,
      baseline: 'rebuild_per_event',
      baselineValue: rebuildRate,
      note: `${n} gateways, routes, policies`,
    },
  ]
}

async function wideGateway(listeners: number, routes: number): Promise<Result[]> {
  const t = gatewayTables()
  const ls = Array.from({ length: listeners }, (_, i) => ({ name: `l${i}`, hostname: `*.l${i}.example.com` }))
  await t.db.write([t.classes, t.gateways, t.routes, t.policies], (w) => {
    t.classes.insert(w, gatewayClass('istio'))
    t.gateways.insert(w, gateway('default', 'gw', ls))
    for (let i = 0; i < routes; i++)
      t.routes.insert(w, route('default', `r-${i}`, ['gw'], { hostnames: [`r${i}.l${i % listeners}.example.com`] }))
    t.policies.insert(
      w,
      policy(
        'default',
        'gw-policy',
        { kind: 'Gateway', name: 'gw' },
        { defaults: { strategy: 'merge', limits: { g: { rates: [{ limit: 100, window: '1m' }] } } } },
      ),
    )
  })
  const time = async (byHost: boolean) => {
    const top = topoOf(t, byHost ? 'host' : 'all', byHost)
    await top.sync()
    const ms: number[] = []
    let paths = 0
    for (let r = 0; r < 5; r++) {
      const s = performance.now()
      paths = compute(top.view(), { limitadorNamespace: 'kuadrant-system' }).paths.length
      ms.push(performance.now() - s)
    }
    return { ms: median(ms), paths }
  }
  const host = await time(true)
  const all = await time(false)
  return [
    {
      name: `effective_${listeners}x${routes}`,
      unit: 'ms',
      value: host.ms,
      baseline: 'every_route_on_every_listener',
      baselineValue: all.ms,
      note: `${host.paths} vs ${all.paths} paths`,
    },
  ]
}

async function cluster(): Promise<{ server: RunningTestServer; cluster: Cluster }> {
  const server = await startTestServer()
  const c = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: 'bench-user' })
  await c.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kuadrant-system' } },
  })
  for (const crd of RATE_LIMIT_CRDS)
    await c.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: crd })
  return { server, cluster: c }
}
const PATHS: Record<string, string> = {
  GatewayClass: '/apis/gateway.networking.k8s.io/v1/gatewayclasses',
  Gateway: '/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways',
  HTTPRoute: '/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes',
  RateLimitPolicy: '/apis/kuadrant.io/v1/namespaces/default/ratelimitpolicies',
}
const apply = (c: Cluster, obj: any) =>
  c.request({
    method: 'PATCH',
    path: `${PATHS[obj.kind]}/${obj.metadata.name}`,
    query: { fieldManager: 'user', force: true },
    contentType: 'application/apply-patch+yaml',
    body: obj,
  })
const rlp = (name: string, kind: string, target: string, limit: number, block: 'limits' | 'defaults' = 'limits') => ({
  apiVersion: 'kuadrant.io/v1',
  kind: 'RateLimitPolicy',
  metadata: { name, namespace: 'default' },
  spec: {
    targetRef: { group: 'gateway.networking.k8s.io', kind, name: target },
    ...(block === 'limits'
      ? { limits: { l: { rates: [{ limit, window: '1m' }] } } }
      : { defaults: { strategy: 'merge', limits: { g: { rates: [{ limit, window: '1m' }] } } } }),
  },
})

/** Resolves when every named policy's status is final for its generation (Accepted and Enforced observed). */
async function statusesFinal(
  server: RunningTestServer,
  names: string[],
  wantEnforced: (c: any) => boolean,
  timeoutMs = 120_000,
): Promise<void> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const done = names.every((n) => {
      const p = server.control.get({ apiVersion: 'kuadrant.io/v1', kind: 'RateLimitPolicy' }, n, 'default')
      const e = p?.status?.conditions?.find((c: any) => c.type === 'Enforced')
      return e && e.observedGeneration === p.metadata.generation && wantEnforced(e)
    })
    if (done) return
    if (Date.now() > end) throw new Error('statuses not final in time')
    await new Promise((r) => setTimeout(r, 5))
  }
}
const startController = async (c: Cluster) => {
  const { manager } = rateLimitController({
    cluster: c,
    handleSignals: false,
    http: false,
    logger: createLogger({ level: 'silent' }),
    limitadorNamespace: 'kuadrant-system',
  })
  await manager.start()
  return manager
}

export async function endToEnd(policies: number, listeners: number, routes: number): Promise<Result[]> {
  const out: Result[] = []
  const { server, cluster: c } = await cluster()
  let m: Manager | undefined
  try {
    await apply(c, { apiVersion: GW, kind: 'GatewayClass', metadata: { name: 'istio' }, spec: { controllerName: 'x' } })
    await apply(c, {
      apiVersion: GW,
      kind: 'Gateway',
      metadata: { name: 'gw', namespace: 'default' },
      spec: {
        gatewayClassName: 'istio',
        listeners: Array.from({ length: listeners }, (_, i) => ({ name: `l${i}`, hostname: `*.l${i}.example.com` })),
      },
    })
    for (let i = 0; i < routes; i++)
      await apply(c, {
        apiVersion: GW,
        kind: 'HTTPRoute',
        metadata: { name: `r-${i}`, namespace: 'default' },
        spec: {
          parentRefs: [{ name: 'gw' }],
          hostnames: [`r${i}.l${i % listeners}.example.com`],
          rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }] }],
        },
      })
    const own = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
    m = await startController(own)
    // events/s: route policies created, until every status is final
    const names = Array.from({ length: policies }, (_, i) => `p-${i}`)
    let t0 = performance.now()
    await Promise.all(names.map((n, i) => apply(c, rlp(n, 'HTTPRoute', `r-${i % routes}`, 10))))
    await statusesFinal(server, names, (e) => e.status === 'True')
    out.push({
      name: `policy_events_end_to_end_${policies}`,
      unit: 'events/s',
      value: policies / ((performance.now() - t0) / 1000),
      note: `${listeners} listeners, ${routes} routes, test server`,
    })
    // a gateway policy edit: every route policy's status final again (it becomes partially... no: merge defaults add)
    await apply(c, rlp('gw-policy', 'Gateway', 'gw', 100, 'defaults'))
    await statusesFinal(server, ['gw-policy'], (e) => e.status === 'True')
    t0 = performance.now()
    server.control.clearRequestLog()
    await apply(c, rlp('gw-policy', 'Gateway', 'gw', 200, 'defaults'))
    await statusesFinal(server, ['gw-policy', ...names], (e) => e.status === 'True')
    const limitsHave200 = () =>
      (
        JSON.parse(
          server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'limitador-limits', 'kuadrant-system').data['limits.json'],
        ) as any[]
      ).some((l) => l.maxValue === 200)
    while (!limitsHave200()) await new Promise((r) => setTimeout(r, 5))
    out.push({
      name: `gateway_policy_edit_${listeners}x${routes}`,
      unit: 'ms',
      value: performance.now() - t0,
      note: `until ${policies + 1} statuses final and Limitador updated`,
    })
    const ours = server.control
      .requestLog()
      .filter((e) => !e.watch && e.userAgent !== 'bench-user' && !/\/events|\/leases/.test(e.path)).length
    await m.stop()
    m = undefined
    await own.close()
    // the policy-centric baseline: list everything, recompute, apply every ConfigMap and status
    server.control.clearRequestLog()
    await policyCentricPass(c)
    const baseline = server.control.requestLog().filter((e) => !e.watch && e.userAgent === 'bench-user').length
    out.push({
      name: 'api_requests_per_policy_change',
      unit: 'requests',
      value: ours,
      baseline: 'policy_centric_relist',
      baselineValue: baseline,
      note: `${routes} routes, ${policies + 1} policies`,
    })
  } finally {
    await m?.stop()
    await c.close()
    await server.stop()
  }
  return out
}

/** What a policy-centric controller does on one policy change: list, recompute, write everything. */
async function policyCentricPass(c: Cluster): Promise<void> {
  const t = gatewayTables()
  const list = async (kind: string) => ((await c.request({ path: PATHS[kind]! })) as { items: KubeObject[] }).items
  const [classes, gws, routes, pols] = await Promise.all([
    list('GatewayClass'),
    list('Gateway'),
    list('HTTPRoute'),
    list('RateLimitPolicy'),
  ])
  await c.request({ path: '/api/v1/namespaces/kuadrant-system/configmaps' })
  await t.db.write([t.classes, t.gateways, t.routes, t.policies], (w) => {
    for (const x of classes) t.classes.insert(w, x as never)
    for (const x of gws) t.gateways.insert(w, x as never)
    for (const x of routes) t.routes.insert(w, x as never)
    for (const x of pols) t.policies.insert(w, x)
  })
  const top = topoOf(t, 'baseline')
  await top.sync()
  const run = compute(top.view(), { limitadorNamespace: 'kuadrant-system' })
  for (const obj of run.objects)
    await c.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${obj.metadata.namespace}/configmaps/${obj.metadata.name}`,
      query: { fieldManager: 'baseline', force: true },
      contentType: 'application/apply-patch+yaml',
      body: obj,
    })
  for (const p of pols)
    await c.request({
      method: 'PATCH',
      path: `${PATHS.RateLimitPolicy}/${p.metadata.name}/status`,
      query: { fieldManager: 'baseline', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: p.apiVersion,
        kind: p.kind,
        metadata: { name: p.metadata.name, namespace: 'default' },
        status: (p as { status?: unknown }).status ?? {},
      },
    })
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const q = opts.quick
  return [
    ...(await stalledStreams(q)), // first: its memory reading wants nothing else's garbage around
    ...(await upkeep(q ? 1000 : 10_000, q ? 200 : 1000, q ? 2 : 3)),
    ...(await wideGateway(64, 500)),
    ...(await endToEnd(q ? 100 : 500, 64, 500)),
    ...(await operatorFootprint(q)),
    ...(await operatorPath(q)),
  ]
}
