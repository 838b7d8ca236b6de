// The statewright demo: a small Kubernetes controller, start to finish.
//
//   npm start                       # against an embedded test server (with fault injection)
//   KUBECONFIG=~/.kube/config npm start   # against that cluster (faults the server cannot inject are skipped)
//
// A custom kind, Site (demo.statewright.io/v1), is reflected into a table; every Site yields a desired
// ConfigMap "site-<name>"; a reconciler applies them with server-side apply; a second reflector
// watches the ConfigMaps we own so drift (someone deleting or editing one) is repaired at once.
// Then faults are injected (watch resets, 5xx, history compaction -> 410, a deleted managed object)
// and the demo shows that everything recovers, and prints a summary.
import { Cluster, resolveKind, type KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'

const NS = 'statewright-demo'
const SITE = { apiVersion: 'demo.statewright.io/v1', kind: 'Site' }
const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const MANAGER = 'statewright-demo'

const SITE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'sites.demo.statewright.io' },
  spec: {
    group: 'demo.statewright.io',
    scope: 'Namespaced',
    names: { plural: 'sites', singular: 'site', kind: 'Site', listKind: 'SiteList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
}

/** The desired ConfigMap of a Site. */
function configMapFor(site: KubeObject): KubeObject {
  const spec = (site.spec ?? {}) as { title?: string; replicas?: number }
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `site-${site.metadata.name}`,
      namespace: site.metadata.namespace,
      labels: { 'demo.statewright.io/site': String(site.metadata.name) },
    },
    data: { title: String(spec.title ?? ''), replicas: String(spec.replicas ?? 1) },
  }
}

/** The controller: reflect Sites, derive ConfigMaps, apply them, repair drift (all wired by the Manager). */
export async function startController(cluster: Cluster, opts: { port?: number } = {}) {
  const m = new Manager({
    name: MANAGER,
    cluster,
    pruneNamespace: NS,
    handleSignals: false,
    http: { port: opts.port ?? 0 },
    logger: createLogger({ level: (process.env.LOG_LEVEL as any) ?? 'silent' }),
    retry: { minMs: 50, maxMs: 2000 },
    fullReconciliationIntervalMs: 60_000,
  })
  const sites = m.watch(SITE, { namespace: NS })
  m.derive({ from: sites, owns: [CM], fn: configMapFor })
  await m.start()
  return {
    m,
    db: m.db,
    sites,
    want: m.desired,
    target: m.target,
    reconciler: m.reconciler,
    drift: m.drift[0]!,
    siteReflector: m.reflectors.get('sites')!,
    stop: () => m.stop(),
  }
}

export interface DemoOptions {
  log?: (line: string) => void
  /** Number of Sites (default 30). */
  sites?: number
}

export async function runDemo(opts: DemoOptions = {}): Promise<{ ok: boolean; summary: Record<string, unknown> }> {
  const log = opts.log ?? ((l: string) => console.log(l))
  const n = opts.sites ?? 30
  const t0 = Date.now()
  const at = () => `[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s]`
  let server: RunningTestServer | undefined
  let cluster: Cluster
  if (process.env.KUBECONFIG) {
    cluster = new Cluster({ qps: 50, burst: 100 })
    log(`${at()} using the cluster of KUBECONFIG (${cluster.server.origin}); fault injection is only available with the embedded server`)
  } else {
    server = await startTestServer()
    cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 200, burst: 400 })
    log(`${at()} embedded test server at ${server.url}`)
  }
  const ctl: { c?: Awaited<ReturnType<typeof startController>> } = {}
  try {
    // Set up: namespace and the Site kind (a CRD: the same on a real cluster and the test server).
    await cluster
      .request({ method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } })
      .catch(ignore409)
    await cluster
      .request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: SITE_CRD })
      .catch(ignore409)
    await until(async () => !!(await resolveKind(cluster, SITE).catch(() => undefined)), 'the Site kind to be served', 30_000)
    const sitePath = `/apis/demo.statewright.io/v1/namespaces/${NS}/sites`
    const putSite = (name: string, title: string, replicas: number) =>
      cluster.request({
        method: 'PATCH',
        path: `${sitePath}/${name}`,
        query: { fieldManager: 'demo-user', force: true },
        body: { ...SITE, metadata: { name, namespace: NS }, spec: { title, replicas } },
        contentType: 'application/apply-patch+yaml',
      })
    const cmPath = (name: string) => `/api/v1/namespaces/${NS}/configmaps/${name}`

    for (let i = 0; i < n; i++) await putSite(`s${i}`, `Site ${i}`, 1 + (i % 3))
    log(`${at()} created ${n} Sites`)
    const c = (ctl.c = await startController(cluster))
    log(
      `${at()} controller started; health, readiness, metrics and tables at ${c.m.url} (/healthz /readyz /metrics /statusz /statedb/tables); the web view at ${c.m.url}/ui/, or npx statewright status --url ${c.m.url}`,
    )
    const progress = (phase: string) => {
      const txn = c.db.readTxn()
      const st = (k: 'pending' | 'done' | 'error') => c.want.table.list(txn, c.want.statusIndex.kind(k)).count()
      const h = c.siteReflector.health()
      log(
        `${at()} ${phase.padEnd(38)} sites ${c.sites.count(txn)} · desired ${c.want.table.count(txn)} (done ${st('done')}, pending ${st('pending')}, error ${st('error')}) · reflector ${h.state}, lists ${h.lists}, errors ${h.errors} · apply errors ${c.target.stats.errors}, drift repairs ${c.drift.repairs} · health ${c.reconciler.health().level}`,
      )
    }
    const settle = async (phase: string) => {
      await waitForConvergence(c.m, { timeoutMs: 30_000 })
      await until(async () => (await converged(cluster, c, sitePath)).ok, `${phase}: convergence`, 30_000)
      progress(phase)
    }
    await settle('initial sync and apply')

    if (server) {
      server.control.resetWatches()
      for (let i = 0; i < 5; i++) await putSite(`s${i}`, `Site ${i} (renamed during watch reset)`, 2)
      await settle('fault: watch resets')

      const unfail = server.control.fail({ ratio: 0.3, status: 500 })
      for (let i = 5; i < 10; i++) await retry(() => putSite(`s${i}`, `Site ${i} (edited under 5xx)`, 3))
      await new Promise((r) => setTimeout(r, 300))
      progress('fault: 30% of requests fail (5xx)')
      unfail()
      await settle('5xx stopped: recovered')

      const unwatch = server.control.fail({ watch: true, status: 503, retryAfterSeconds: 0.2 })
      server.control.resetWatches()
      await cluster.request({ method: 'DELETE', path: `${sitePath}/s${n - 1}` })
      await putSite('late', 'Added while history was compacted', 1)
      server.control.compact()
      unwatch()
      await settle('fault: compaction -> 410 -> relist')
    }

    await cluster.request({ method: 'DELETE', path: cmPath('site-s1') })
    await cluster.request({
      method: 'PATCH',
      path: cmPath('site-s2'),
      body: { data: { title: 'vandalized' } },
      contentType: 'application/merge-patch+json',
    })
    await settle('fault: managed objects deleted/edited')

    // A stale ConfigMap with our label (say, left by an older version): the full reconciliation prunes it.
    await cluster
      .request({
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/configmaps`,
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'orphan', namespace: NS, labels: { 'statewright.io/owner': MANAGER } },
        },
      })
      .catch(ignore409)
    const full = await c.reconciler.triggerFullReconciliation()
    await settle(`full reconciliation (out of sync ${full.outOfSync})`)

    const result = await converged(cluster, c, sitePath)
    const h = c.siteReflector.health()
    const summary = {
      ok: result.ok,
      seconds: Number(((Date.now() - t0) / 1000).toFixed(1)),
      sites: result.sites,
      configMaps: result.configMaps,
      reflector: { lists: h.lists, relists: h.relists, watches: h.watches, events: h.events, errors: h.errors },
      target: { ...c.target.stats },
      driftRepairs: c.drift.repairs,
      reconciler: c.reconciler.health().message,
      requests: cluster.stats.requests,
    }
    log(`${at()} summary: ${result.ok ? 'nothing lost: the tables equal the cluster' : 'MISMATCH: ' + result.why}`)
    log(
      `        Sites ${summary.sites}, ConfigMaps ${summary.configMaps}; reflector lists ${h.lists} (relists after 410: ${h.relists}), watches ${h.watches}, events ${h.events}, errors ${h.errors}`,
    )
    log(
      `        applies ${c.target.stats.applies} (changed ${c.target.stats.changed}), deletes ${c.target.stats.deletes}, pruned ${c.target.stats.pruned}, errors ${c.target.stats.errors}; drift repairs ${c.drift.repairs}; ${cluster.stats.requests} requests, ${cluster.stats.throttled} throttled`,
    )

    // Clean up what the demo created (on a real cluster this matters).
    await ctl.c.stop()
    ctl.c = undefined
    if (!server) {
      await cluster.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}` }).catch(() => {})
      await cluster
        .request({ method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${SITE_CRD.metadata.name}` })
        .catch(() => {})
    }
    return { ok: result.ok, summary }
  } finally {
    await ctl.c?.stop()
    await cluster.close()
    await server?.stop()
  }
}

/** The sites table equals the server's Sites, and the server's ConfigMaps equal the desired ones, all done. */
async function converged(cluster: Cluster, c: Awaited<ReturnType<typeof startController>>, sitePath: string) {
  const siteList = await cluster.request({ path: sitePath })
  const cmList = await cluster.request({
    path: `/api/v1/namespaces/${NS}/configmaps`,
    query: { labelSelector: `statewright.io/owner=${MANAGER}` },
  })
  const txn = c.db.readTxn()
  const table = new Map(
    c.sites
      .all(txn)
      .toArray()
      .map((s) => [s.metadata.name, s.metadata.resourceVersion]),
  )
  const fail = (why: string) => ({ ok: false, why, sites: siteList.items.length, configMaps: cmList.items.length })
  if (table.size !== siteList.items.length) return fail(`sites table has ${table.size}, server ${siteList.items.length}`)
  for (const s of siteList.items)
    if (table.get(s.metadata.name) !== s.metadata.resourceVersion) return fail(`site ${s.metadata.name} differs`)
  if (c.want.table.list(txn, c.want.statusIndex.kind('done')).count() !== c.want.table.count(txn))
    return fail('not all desired objects are done')
  const cms = new Map<string, KubeObject>(cmList.items.map((o: KubeObject) => [o.metadata.name, o]))
  if (cms.size !== siteList.items.length) return fail(`${cms.size} ConfigMaps for ${siteList.items.length} sites`)
  for (const s of siteList.items) {
    const want = configMapFor({ ...s, metadata: { ...s.metadata, namespace: NS } })
    const have = cms.get(String(want.metadata.name))
    if (!have || JSON.stringify(have.data) !== JSON.stringify(want.data)) return fail(`ConfigMap ${want.metadata.name} differs`)
  }
  return { ok: true, why: '', sites: siteList.items.length, configMaps: cms.size }
}

async function until(cond: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await cond().catch(() => false))) {
    if (Date.now() > end) throw new Error(`demo: timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

async function retry<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn()
    } catch (err) {
      if (i >= 20) throw err
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}

function ignore409(err: any): void {
  if (err?.code !== 409) throw err
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { ok } = await runDemo()
  process.exit(ok ? 0 : 1)
}
