// The Manager's HTTP server against a hostile local user and a hostile web page: dot-segment paths
// that once skipped the token, foreign Host headers (DNS rebinding), probes without the token only
// when asked, routes whose sources throw, and twenty clients that open change streams of a
// 100 000-object table and never read, while the process leads and answers /healthz.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Table, defineIndex, DB } from '@statewright/statedb'
import { Manager, nullLogger, waitForConvergence } from '../src/index.ts'
import { ManagerServer } from '../src/http.ts'
import { env, type Env } from './helpers.ts'
import { rawRequest, stalledClient } from '../../../test/lib/http.ts'
import { waitFor } from '../../../test/lib/wait.ts'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

// a full collection on demand (the test runner does not pass --expose-gc), for the heap figures
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

interface Row {
  name: string
  body: unknown
}
const byName = defineIndex<Row, string>({ name: 'name', key: (r) => r.name, unique: true })
const SECRET = 'aHVudGVyMi1zZWNyZXQ='
const TOKEN = 'tok-sec-1'

async function managerWith(e: Env, http: ConstructorParameters<typeof Manager>[0]['http'], leader = false) {
  const rows = new Table<Row>({ name: 'rows', primary: byName })
  const m = new Manager({
    name: 'sec',
    cluster: e.cluster,
    http,
    handleSignals: false,
    logger: nullLogger,
    fullReconciliationIntervalMs: 0,
    ...(leader
      ? { leaderElection: { namespace: 'default', name: 'sec-leader', leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 } }
      : {}),
  })
  m.db.register(rows)
  await m.db.write(rows, (w) => {
    rows.insert(w, { name: 'secret', body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { pw: SECRET } } })
    rows.insert(w, { name: 'plain', body: 'visible-row' })
  })
  await m.start()
  const port = Number(new URL(m.url!).port)
  return { m, rows, port }
}

// The bypass: a raw path under /ui/ that normalizes to a data path.
const BYPASSES = [
  '/ui/%2e%2e/statedb/tables/rows',
  '/ui/%2E%2E/statedb/dump',
  '/ui/../statedb/dump',
  '/ui/./../statedb/dump',
  '/ui/.%2e/statedb/dump',
  '/ui/%2e./statedb/dump',
  '/ui/..%2fstatedb%2fdump',
  '/ui/%2e%2e%2fstatedb%2fdump',
  '/ui\\..\\statedb\\dump',
  '/ui/..;/statedb/dump',
  '/ui//../statedb/dump',
  '/ui/%252e%252e/statedb/dump',
  '/ui/../reconcilers',
  '/ui/../topology',
  '/ui/../statedb/tables/rows/changes',
  '/ui/../statusz',
  '/ui/../metrics',
  '/healthz/../statedb/dump',
]

test('with a token, no spelling of a path under /ui/ (dot segments, encoded or not) reaches data without it', async () => {
  const e = await env()
  const { m, port } = await managerWith(e, { port: 0, token: TOKEN })
  try {
    for (const path of BYPASSES) {
      const r = await rawRequest(port, path)
      assert.ok([400, 401, 404].includes(r.status), `${path}: ${r.status} ${r.body.slice(0, 200)}`)
      assert.not.ok(r.body.includes('visible-row') || r.body.includes('"rows"'), `${path} served data: ${r.body.slice(0, 200)}`)
    }
    assert.is((await rawRequest(port, '/ui/')).status, 200, 'the static page needs no token')
    assert.is((await rawRequest(port, '/statedb/dump')).status, 401)
    const ok = await rawRequest(port, '/statedb/dump', { authorization: `Bearer ${TOKEN}` })
    assert.is(ok.status, 200)
    assert.ok(ok.body.includes('visible-row'))
    assert.not.ok(ok.body.includes(SECRET), 'the Secret is redacted')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('DNS rebinding: without a token, a request naming a foreign host gets 403 and no data; allowedHosts admits a name', async () => {
  const e = await env()
  const { m, port } = await managerWith(e, { port: 0, allowedHosts: ['op.example.com'] })
  try {
    for (const path of ['/statedb/dump', '/statedb/tables/rows', '/reconcilers', '/topology', '/statusz', '/metrics', '/ui/', '/healthz']) {
      const r = await rawRequest(port, path, { host: `rebind.evil.example:${port}` })
      assert.is(r.status, 403, `${path}: ${r.status}`)
      assert.not.ok(r.body.includes('visible-row'))
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, 'op.example.com'])
      assert.is((await rawRequest(port, '/statedb/dump', { host })).status, 200, host)
    const json = await rawRequest(port, '/statedb/tables')
    assert.is(json.headers['x-content-type-options'], 'nosniff')
    const svg = await rawRequest(port, '/topology?format=svg')
    assert.is(svg.headers['x-content-type-options'], 'nosniff')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test('probes: with a token, /healthz and /readyz need it unless probesWithoutToken; the data never goes without it', async () => {
  const e = await env()
  const closed = await managerWith(e, { port: 0, token: TOKEN })
  const open = await managerWith(e, { port: 0, token: TOKEN, probesWithoutToken: true })
  try {
    for (const path of ['/healthz', '/livez', '/readyz']) {
      assert.is((await rawRequest(closed.port, path)).status, 401, `${path} (closed)`)
      assert.is((await rawRequest(open.port, path)).status, 200, `${path} (open)`)
    }
    for (const path of ['/statusz', '/metrics', '/statedb/dump', '/healthz/../statedb/dump', '/readyz/%2e%2e/statusz'])
      assert.ok([400, 401].includes((await rawRequest(open.port, path)).status), path)
  } finally {
    await closed.m.stop()
    await open.m.stop()
    await e.stop()
  }
})

test('nothing a route or a source throws escapes the listener: every route answers, the process goes on', async () => {
  const uncaught: unknown[] = []
  const onUncaught = (err: unknown) => uncaught.push(err)
  process.on('uncaughtException', onUncaught)
  const t = new Table<Row>({ name: 'bad', primary: byName })
  const db = new DB({ tables: [t] })
  const cyclic: any = { name: 'cyclic' }
  cyclic.body = cyclic
  await db.write(t, (w) => {
    t.insert(w, {
      name: 'throws',
      body: {
        toJSON() {
          throw new Error('no JSON')
        },
      },
    })
    t.insert(w, cyclic)
    t.insert(w, { name: 'ok', body: 'fine' })
  })
  const boom = () => {
    throw new Error('source failed')
  }
  const errors: string[] = []
  const server = new ManagerServer(
    { port: 0 },
    {
      db,
      registry: { contentType: 'text/plain', metrics: () => Promise.reject(new Error('metrics failed')) } as any,
      live: boom,
      ready: boom,
      status: boom,
      reconcilers: boom,
      graphs: boom,
      onError: (err, path) => errors.push(`${path}: ${(err as Error).message}`),
    },
  )
  const url = await server.listen()
  const port = Number(new URL(url).port)
  try {
    const routes = [
      '/healthz',
      '/livez',
      '/readyz',
      '/statusz',
      '/metrics',
      '/reconcilers',
      '/reconcilers/x',
      '/topology',
      '/topology?format=svg',
      '/statedb/dump',
      '/statedb/tables',
      '/statedb/tables/bad',
      '/statedb/tables/bad?limit=3',
      '/ui/',
      '/nope',
    ]
    for (const path of routes) {
      const r = await rawRequest(port, path)
      assert.ok(r.status < 600, path)
      if (path.startsWith('/statedb/tables/bad') || path === '/statedb/dump') {
        assert.is(r.status, 200, `${path}: ${r.body}`)
        assert.ok(r.body.includes('(unserializable: no JSON)'), path)
        assert.ok(r.body.includes('fine'), `${path}: the rest is served`)
      }
    }
    assert.ok(errors.length >= 6, `the failures were reported: ${errors.join('; ')}`)
    assert.is((await rawRequest(port, '/statedb/tables')).status, 200, 'still serving')
    assert.equal(uncaught, [])
  } finally {
    process.off('uncaughtException', onUncaught)
    await server.close()
  }
})

test('twenty clients that never read a 100 000-object change stream: the leader keeps its lease, /healthz answers within 100 ms, memory stays bounded', async () => {
  const e = await env()
  const { m, rows, port } = await managerWith(e, { port: 0, maxStreams: 32 }, true)
  const clients: ReturnType<typeof stalledClient>[] = []
  try {
    const PAD = 'p'.repeat(150)
    await m.db.write(rows, (w) => {
      for (let i = 0; i < 100_000; i++) rows.insert(w, { name: `r-${String(i).padStart(6, '0')}`, body: { i, PAD } })
    })
    await waitForConvergence(m, { timeoutMs: 20_000 })
    const leading = () => (m.status() as { leader?: { leading?: boolean } }).leader?.leading === true
    await waitFor(leading, 'leading', 20_000)
    const lease = async () =>
      (await e.cluster.request({ method: 'GET', path: '/apis/coordination.k8s.io/v1/namespaces/default/leases/sec-leader' })) as any
    const before = await lease()
    gc()
    const heapBefore = process.memoryUsage().heapUsed
    assert.is((await rawRequest(port, '/healthz')).status, 200) // the first request of a connection pool costs more: not measured
    for (let i = 0; i < 20; i++) clients.push(stalledClient(port, '/statedb/tables/rows/changes'))
    // probe /healthz until the lease has been renewed three times since the streams opened
    const latencies: number[] = []
    let renewals = 0
    let last = before.spec.renewTime
    while (renewals < 3) {
      const t0 = performance.now()
      const r = await rawRequest(port, '/healthz')
      latencies.push(performance.now() - t0)
      assert.is(r.status, 200)
      assert.ok(leading(), 'still leading')
      const now = (await lease()).spec
      if (now.renewTime !== last) {
        renewals++
        last = now.renewTime
      }
      assert.is(now.holderIdentity, before.spec.holderIdentity, 'the same holder')
    }
    const after = await lease()
    assert.is(after.spec.leaseTransitions ?? 0, before.spec.leaseTransitions ?? 0, 'no transition')
    const worst = Math.max(...latencies)
    assert.ok(worst < 100, `/healthz took ${worst.toFixed(1)} ms`)
    gc()
    const grown = (process.memoryUsage().heapUsed - heapBefore) / 1e6
    console.log(
      `  20 stalled streams: ${latencies.length} /healthz probes, slowest ${worst.toFixed(1)} ms; 3 lease renewals meanwhile; heap +${grown.toFixed(1)} MB`,
    )
    // before backpressure each stream buffered the whole table's JSON (~25 MB)
    assert.ok(grown < 100, `the heap grew by ${grown.toFixed(0)} MB with 20 stalled streams`)
    assert.is((await rawRequest(port, '/statedb/tables/rows/changes', {}, 'HEAD')).status, 200, 'streams below the cap still open')
  } finally {
    for (const c of clients) c.destroy()
    await m.stop()
    await e.stop()
  }
})

test.run()
