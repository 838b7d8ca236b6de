// examples/ratelimit as a contract, on the test server: seed 001's narrative (rlp-2 narrows rlp-1;
// rlp-3 on a route of two gateways creates gw-2's ConfigMaps; overrides; deletions and edits), bad
// input as Accepted False naming the field, convergence under 5xx and watch resets, and nothing
// rewritten after convergence, also across a restart (stable resourceVersions).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { createLogger, waitForConvergence, type Manager } from '@statewright/controller'
import { rateLimitController } from '../examples/ratelimit/main.ts'
import { RATE_LIMIT_CRDS } from '../examples/ratelimit/crds.ts'

const GW = 'gateway.networking.k8s.io/v1'
const apply = (c: Cluster, obj: any) => {
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion]
  const plural = (
    { GatewayClass: 'gatewayclasses', Gateway: 'gateways', HTTPRoute: 'httproutes', RateLimitPolicy: 'ratelimitpolicies' } as Record<
      string,
      string
    >
  )[obj.kind]
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`
  const ns = obj.metadata.namespace ? `/namespaces/${obj.metadata.namespace}` : ''
  return c.request({
    method: 'PATCH',
    path: `${base}${ns}/${plural}/${obj.metadata.name}`,
    query: { fieldManager: 'user', force: true },
    contentType: 'application/apply-patch+yaml',
    body: obj,
  })
}
const del = (c: Cluster, kind: string, name: string) =>
  c.request({
    method: 'DELETE',
    path: `/apis/${kind === 'RateLimitPolicy' ? 'kuadrant.io' : 'gateway.networking.k8s.io'}/v1/namespaces/default/${kind === 'RateLimitPolicy' ? 'ratelimitpolicies' : `${kind.toLowerCase()}s`}/${name}`,
  })
const gateway = (name: string, hostname: string) => ({
  apiVersion: GW,
  kind: 'Gateway',
  metadata: { name, namespace: 'default' },
  spec: { gatewayClassName: 'istio', listeners: [{ name: 'http', hostname, port: 80, protocol: 'HTTP' }] },
})
const route = (name: string, gws: string[], host: string, path = '/') => ({
  apiVersion: GW,
  kind: 'HTTPRoute',
  metadata: { name, namespace: 'default' },
  spec: {
    parentRefs: gws.map((g) => ({ name: g })),
    hostnames: [host],
    rules: [{ matches: [{ path: { type: 'PathPrefix', value: path } }], backendRefs: [{ name: 'svc', port: 80 }] }],
  },
})
const rlp = (name: string, kind: string, target: string, body: Record<string, unknown>, group = 'gateway.networking.k8s.io') => ({
  apiVersion: 'kuadrant.io/v1',
  kind: 'RateLimitPolicy',
  metadata: { name, namespace: 'default' },
  spec: { targetRef: { group, kind, name: target }, ...body },
})
const limit = (n: number, window: string) => ({ rates: [{ limit: n, window }] })

async function setup() {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  await cluster.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kuadrant-system' } },
  })
  for (const crd of RATE_LIMIT_CRDS)
    await cluster.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: crd })
  await apply(cluster, {
    apiVersion: GW,
    kind: 'GatewayClass',
    metadata: { name: 'istio' },
    spec: { controllerName: 'istio.io/gateway-controller' },
  })
  await apply(cluster, gateway('gw-1', '*.example.com'))
  await apply(cluster, gateway('gw-2', '*.example.com'))
  await apply(cluster, route('route-1', ['gw-1'], 'one.example.com', '/one'))
  await apply(cluster, route('route-2', ['gw-1'], 'two.example.com'))
  await apply(cluster, route('route-3', ['gw-1', 'gw-2'], 'three.example.com'))
  await apply(cluster, route('route-4', ['gw-2'], 'four.example.com'))
  return { server, cluster }
}
const start = async (cluster: Cluster) => {
  const { manager } = rateLimitController({
    cluster,
    handleSignals: false,
    http: { port: 0 },
    logger: createLogger({ level: (process.env.LOG_LEVEL as any) ?? 'silent' }),
    retry: { minMs: 20, maxMs: 200 },
    limitadorNamespace: 'kuadrant-system',
  })
  await manager.start()
  return manager
}
const cm = (s: RunningTestServer, ns: string, name: string) => s.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, name, ns)
const limits = (s: RunningTestServer) => JSON.parse(cm(s, 'kuadrant-system', 'limitador-limits').data['limits.json'])
const config = (s: RunningTestServer, gw: string) => {
  const c = cm(s, 'default', `kuadrant-${gw}`)
  return c && JSON.parse(c.data['config.json'])
}
const cond = (s: RunningTestServer, name: string, type: string) => {
  const p = s.control.get({ apiVersion: 'kuadrant.io/v1', kind: 'RateLimitPolicy' }, name, 'default')
  const c = p?.status?.conditions?.find((x: any) => x.type === type)
  return c && `${c.status} ${c.reason}: ${c.message}`
}
const converge = (m: Manager) => waitForConvergence(m, { timeoutMs: 20_000 })
/** The policy's status.observedGeneration and each condition's, with its metadata.generation. */
const generations = (s: RunningTestServer, name: string) => {
  const p = s.control.get({ apiVersion: 'kuadrant.io/v1', kind: 'RateLimitPolicy' }, name, 'default')
  return {
    generation: p.metadata.generation,
    status: p.status?.observedGeneration,
    conditions: (p.status?.conditions ?? []).map((c: any) => c.observedGeneration),
  }
}

test('seed 001: policies on gateways and routes become limits and per-gateway configs, with Kuadrant conditions', async () => {
  const { server, cluster } = await setup()
  let m = await start(cluster)
  try {
    await converge(m)
    assert.equal(limits(server), [], "Limitador's ConfigMap exists, empty, without policies")
    assert.is(config(server, 'gw-1'), undefined)

    // rlp-1 on gw-1: every route of gw-1
    await apply(cluster, rlp('rlp-1', 'Gateway', 'gw-1', { limits: { global: limit(100, '1m') } }))
    await converge(m)
    assert.equal(
      limits(server).map((l: any) => `${l.namespace} ${l.id} ${l.maxValue}/${l.seconds}s`),
      [
        'default/route-1 default/rlp-1/global 100/60s',
        'default/route-2 default/rlp-1/global 100/60s',
        'default/route-3 default/rlp-1/global 100/60s',
      ],
    )
    assert.equal(config(server, 'gw-1'), {
      gateway: 'default/gw-1',
      actionSets: [
        {
          hostname: 'one.example.com',
          listener: 'http',
          route: 'default/route-1',
          rule: 'rule-1',
          matches: ['PathPrefix:/one'],
          scope: 'default/route-1',
          limits: ['default/rlp-1/global'],
        },
        {
          hostname: 'three.example.com',
          listener: 'http',
          route: 'default/route-3',
          rule: 'rule-1',
          matches: ['PathPrefix:/'],
          scope: 'default/route-3',
          limits: ['default/rlp-1/global'],
        },
        {
          hostname: 'two.example.com',
          listener: 'http',
          route: 'default/route-2',
          rule: 'rule-1',
          matches: ['PathPrefix:/'],
          scope: 'default/route-2',
          limits: ['default/rlp-1/global'],
        },
      ],
    })
    assert.equal(JSON.parse(cm(server, 'default', 'kuadrant-ratelimiting-gw-1').data['cluster.json']), {
      gateway: 'default/gw-1',
      service: 'ratelimit-service',
      endpoint: 'limitador-limitador.kuadrant-system.svc.cluster.local:8081',
    })
    assert.is(cm(server, 'default', 'kuadrant-gw-1').metadata.labels['statewright.io/owner'], 'kuadrant-ratelimit')
    assert.is(cond(server, 'rlp-1', 'Accepted'), 'True Accepted: RateLimitPolicy has been accepted')
    assert.is(cond(server, 'rlp-1', 'Enforced'), 'True Enforced: RateLimitPolicy has been successfully enforced')
    assert.equal(
      generations(server, 'rlp-1'),
      { generation: 1, status: 1, conditions: [1, 1] },
      'status.observedGeneration as in Kuadrant, beside each condition',
    )
    assert.is(cm(server, 'default', 'kuadrant-gw-2'), undefined, 'no policy reaches gw-2')

    // rlp-2 on route-1 narrows rlp-1 there
    await apply(cluster, rlp('rlp-2', 'HTTPRoute', 'route-1', { limits: { narrow: limit(10, '1s') } }))
    await converge(m)
    assert.equal(
      limits(server)
        .filter((l: any) => l.namespace === 'default/route-1')
        .map((l: any) => l.id),
      ['default/rlp-2/narrow'],
    )
    assert.is(cond(server, 'rlp-1', 'Enforced'), 'True Enforced: RateLimitPolicy has been partially enforced')
    assert.is(cond(server, 'rlp-2', 'Enforced'), 'True Enforced: RateLimitPolicy has been successfully enforced')

    // inspection: the topology with each policy's status, and a route's effective policy
    const graphs = (await (await fetch(`${m.url}/topology`)).json()) as {
      graphs: Array<{ component: string; graph: { nodes: Array<{ id: string; status?: string; effective?: unknown }> } }>
    }
    const nodes = graphs.graphs.find((g) => g.component === 'state-of-world ratelimit')!.graph.nodes
    assert.is(nodes.find((n) => n.id === 'ratelimitpolicy.kuadrant.io:default/rlp-1')?.status, 'PartiallyEnforced')
    assert.is(nodes.find((n) => n.id === 'ratelimitpolicy.kuadrant.io:default/rlp-2')?.status, 'Enforced')
    assert.equal(nodes.find((n) => n.id === 'httproute.gateway.networking.k8s.io:default/route-1')?.effective, [
      { name: 'narrow', source: 'ratelimitpolicy.kuadrant.io:default/rlp-2', rule: { rates: [{ limit: 10, seconds: 1 }], counters: [] } },
    ])

    // rlp-3 on route-3, which both gateways serve: gw-2 gets its ConfigMaps
    await apply(cluster, rlp('rlp-3', 'HTTPRoute', 'route-3', { limits: { three: limit(5, '10s') } }))
    await converge(m)
    assert.equal(
      config(server, 'gw-2').actionSets.map((a: any) => `${a.route} ${a.limits}`),
      ['default/route-3 default/rlp-3/three'],
    )
    assert.ok(cm(server, 'default', 'kuadrant-ratelimiting-gw-2'))
    assert.equal(
      limits(server)
        .filter((l: any) => l.namespace === 'default/route-3')
        .map((l: any) => l.id),
      ['default/rlp-3/three'],
      'one limit for the route, deduplicated across its two gateways',
    )

    // an atomic override on gw-1 wins over everything below it
    await apply(cluster, rlp('rlp-5', 'Gateway', 'gw-1', { overrides: { limits: { all: limit(1, '1s') } } }))
    await converge(m)
    assert.is(cond(server, 'rlp-1', 'Enforced'), 'False Overridden: RateLimitPolicy is overridden by [default/rlp-5]')
    assert.is(cond(server, 'rlp-2', 'Enforced'), 'False Overridden: RateLimitPolicy is overridden by [default/rlp-5]')
    assert.is(cond(server, 'rlp-3', 'Enforced'), 'True Enforced: RateLimitPolicy has been partially enforced', 'rlp-3 still holds on gw-2')

    // merge defaults on gw-2 add their rule next to rlp-3's
    await apply(cluster, rlp('rlp-6', 'Gateway', 'gw-2', { defaults: { strategy: 'merge', limits: { extra: limit(7, '2m') } } }))
    await converge(m)
    assert.equal(
      config(server, 'gw-2').actionSets.map((a: any) => `${a.route} ${a.limits.join(',')}`),
      ['default/route-4 default/rlp-6/extra', 'default/route-3 default/rlp-3/three,default/rlp-6/extra'],
      'sorted by hostname',
    )

    // deletions: back to rlp-1 + rlp-2 + rlp-3, then gw-2 loses its ConfigMaps with rlp-3 and rlp-6
    await del(cluster, 'RateLimitPolicy', 'rlp-5')
    await del(cluster, 'RateLimitPolicy', 'rlp-6')
    await converge(m)
    assert.is(cond(server, 'rlp-1', 'Enforced'), 'True Enforced: RateLimitPolicy has been partially enforced')
    await del(cluster, 'RateLimitPolicy', 'rlp-3')
    await converge(m)
    assert.is(cm(server, 'default', 'kuadrant-gw-2'), undefined)
    assert.is(cm(server, 'default', 'kuadrant-ratelimiting-gw-2'), undefined)
    // an edit: rlp-1's limit changes
    await apply(cluster, rlp('rlp-1', 'Gateway', 'gw-1', { limits: { global: limit(200, '1h') } }))
    await converge(m)
    assert.equal(
      limits(server)
        .filter((l: any) => l.id === 'default/rlp-1/global')
        .map((l: any) => `${l.maxValue}/${l.seconds}`),
      ['200/3600', '200/3600'],
    )
    assert.equal(generations(server, 'rlp-1'), { generation: 2, status: 2, conditions: [2, 2] }, 'the edit is observed')

    // stable: after convergence nothing is rewritten, also across a restart
    const rvs = () =>
      JSON.stringify([
        ...['limitador-limits'].map((n) => cm(server, 'kuadrant-system', n).metadata.resourceVersion),
        ...['kuadrant-gw-1', 'kuadrant-ratelimiting-gw-1'].map((n) => cm(server, 'default', n).metadata.resourceVersion),
        ...['rlp-1', 'rlp-2'].map(
          (n) => server.control.get({ apiVersion: 'kuadrant.io/v1', kind: 'RateLimitPolicy' }, n, 'default').metadata.resourceVersion,
        ),
      ])
    const before = rvs()
    const writes = () =>
      server.control
        .requestLog()
        .filter((e) => e.method !== 'GET' && !/\/events|\/leases/.test(e.path))
        .map((e) => `${e.method} ${e.path}`)
    server.control.clearRequestLog()
    await converge(m)
    assert.is(rvs(), before, 'a second convergence writes nothing')
    assert.equal(writes(), [], 'and sends no write')
    await m.stop()
    m = await start(cluster)
    await converge(m)
    assert.is(rvs(), before, 'a restarted controller writes nothing')
    assert.equal(
      writes().filter((w) => w.includes('/status')),
      [],
      'no status write after a restart',
    )
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
})

test('bad input: targetRef group, kind, missing target, bad window and strategy are Accepted False naming the field', async () => {
  const { server, cluster } = await setup()
  const m = await start(cluster)
  try {
    await apply(cluster, rlp('bad-group', 'Gateway', 'gw-1', { limits: { a: limit(1, '1s') } }, 'example.com'))
    await apply(cluster, rlp('bad-kind', 'Service', 'gw-1', { limits: { a: limit(1, '1s') } }))
    await apply(cluster, rlp('missing', 'HTTPRoute', 'nope', { limits: { a: limit(1, '1s') } }))
    await apply(cluster, rlp('bad-window', 'Gateway', 'gw-1', { limits: { a: limit(1, '5x') } }))
    await apply(cluster, rlp('bad-strategy', 'Gateway', 'gw-1', { defaults: { strategy: 'random', limits: {} } }))
    await apply(cluster, { ...gateway('gw-3', '*.example.org') })
    await apply(cluster, rlp('lonely', 'Gateway', 'gw-3', { limits: { a: limit(1, '1s') } }))
    await converge(m)
    assert.is(
      cond(server, 'bad-group', 'Accepted'),
      "False Invalid: RateLimitPolicy target is invalid: Invalid targetRef.group. The only supported value is 'gateway.networking.k8s.io'",
    )
    assert.is(
      cond(server, 'bad-kind', 'Accepted'),
      "False Invalid: RateLimitPolicy target is invalid: Invalid targetRef.kind. The only supported values are 'HTTPRoute' and 'Gateway'",
    )
    assert.is(cond(server, 'missing', 'Accepted'), 'False TargetNotFound: RateLimitPolicy target nope was not found')
    assert.is(
      cond(server, 'bad-window', 'Accepted'),
      'False Invalid: RateLimitPolicy target is invalid: spec.limits.a.rates[0].window: "5x" is not a Gateway API duration (e.g. "10s", "1m30s")',
    )
    assert.is(
      cond(server, 'bad-strategy', 'Accepted'),
      'False Invalid: RateLimitPolicy target is invalid: spec.defaults.strategy: "random" is not one of "atomic", "merge"',
    )
    assert.is(cond(server, 'bad-group', 'Enforced'), undefined, 'Enforced only when accepted')
    assert.is(cond(server, 'lonely', 'Enforced'), 'False Unknown: RateLimitPolicy is not in the path to any existing routes')
    assert.equal(limits(server), [], 'no invalid policy reaches Limitador')
    // fixing the target makes it accepted and enforced
    await apply(cluster, {
      apiVersion: GW,
      kind: 'HTTPRoute',
      metadata: { name: 'nope', namespace: 'default' },
      spec: { parentRefs: [{ name: 'gw-1' }], hostnames: ['nope.example.com'], rules: [{}] },
    })
    await converge(m)
    assert.is(cond(server, 'missing', 'Enforced'), 'True Enforced: RateLimitPolicy has been successfully enforced')
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
})

test('faults: 5xx on a third of requests and reset watches still converge to the same ConfigMaps', async () => {
  const { server, cluster } = await setup()
  const m = await start(cluster)
  try {
    await converge(m)
    server.control.reseed(7)
    // the controller's writes (ConfigMaps, policy status) fail a third of the time; watches reset
    const stop = server.control.fail({ ratio: 0.3, status: 503, retryAfterSeconds: 0, watch: false, path: /configmaps|\/status$/ })
    await apply(cluster, rlp('rlp-1', 'Gateway', 'gw-1', { limits: { global: limit(100, '1m') } }))
    server.control.resetWatches()
    await apply(cluster, rlp('rlp-3', 'HTTPRoute', 'route-3', { limits: { three: limit(5, '10s') } }))
    server.control.resetWatches()
    await converge(m)
    stop()
    await converge(m)
    assert.ok(
      server.control.requestLog().some((e) => e.status === 503),
      'faults were injected',
    )
    assert.equal(
      config(server, 'gw-2').actionSets.map((a: any) => a.route),
      ['default/route-3'],
    )
    assert.equal(
      limits(server).map((l: any) => `${l.namespace} ${l.id}`),
      ['default/route-1 default/rlp-1/global', 'default/route-2 default/rlp-1/global', 'default/route-3 default/rlp-3/three'],
    )
    assert.is(cond(server, 'rlp-1', 'Enforced'), 'True Enforced: RateLimitPolicy has been partially enforced')
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
})

test.run()
