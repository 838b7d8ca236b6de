// The operator's everyday path (issue 38), on the embedded test server:
// - Status at the speed of applies: N Gadgets (a custom kind with /status), each reconciled to 3
//   children and a status, every /status PATCH held 50 ms by the server: ms until every Gadget is
//   Ready; the baseline is the same objects with the 50 ms on their children's applies instead (16 at a
//   time), so the ratio says whether status writes keep up with applies.
// - Events per object on the happy path (Ready appears True; other conditions True too).
// - A change stream whose client never reads: memory kept per client for a 100 000-object table
//   (heap and external memory after a full collection, 20 clients; the kernel's socket buffers,
//   some MB per client on loopback, are not the process's).
import { connect, type Socket } from 'node:net'
import { createServer } from 'node:http'
import { DB, Table, defineIndex, httpHandler } from '@statewright/statedb'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { startTestServer } from '@statewright/testserver'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { GADGET, GADGET_CRD } from '../../packages/controller/test/helpers.ts'
import type { Result } from '../lib/index.ts'

const quiet = createLogger({ level: 'silent' })

async function readyAfter(n: number, held: 'status' | 'children'): Promise<{ ms: number; events: number }> {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  await cluster.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: GADGET_CRD })
  const m = new Manager({ name: 'bench-operator', cluster, logger: quiet, handleSignals: false, http: false })
  const cm = (g: KubeObject, suffix: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `${g.metadata.name}-${suffix}`, namespace: 'default' },
    data: { v: '1' },
  })
  m.reconcile({
    for: GADGET,
    owns: [{ apiVersion: 'v1', kind: 'ConfigMap' }],
    fn: (g) => ({
      children: [cm(g, 'a'), cm(g, 'b'), cm(g, 'c')],
      status: { phase: 'Running' },
      conditions: [{ type: 'Available', status: 'True', reason: 'AllReplicasReady', message: '' }],
    }),
  })
  try {
    for (let i = 0; i < n; i++)
      await cluster.request({
        method: 'POST',
        path: '/apis/example.com/v1/namespaces/default/gadgets',
        body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: `db-${i}` }, spec: {} },
      })
    server.control.delay(
      held === 'status' ? { method: 'PATCH', path: /\/status$/, ms: 50 } : { method: 'PATCH', path: /\/configmaps\//, ms: 50 },
    )
    const t0 = performance.now()
    await m.start()
    await waitForConvergence(m, { timeoutMs: 120_000 })
    const ms = performance.now() - t0
    server.control.clearFaults()
    await m.events.flush()
    const events = server.control.requestLog().filter((r) => r.method === 'POST' && r.path.endsWith('/events')).length
    return { ms, events }
  } finally {
    await m.stop()
    cluster.close()
    await server.stop()
  }
}

async function stalledStreamBytes(rows: number, clients: number): Promise<number> {
  const byId = defineIndex<{ id: string; body: string }, string>({ name: 'id', key: (o) => o.id, unique: true })
  const table = new Table<{ id: string; body: string }>({ name: 'rows', primary: byId })
  const db = new DB({ tables: [table] })
  await db.write(table, (w) => {
    for (let i = 0; i < rows; i++) table.insert(w, { id: `row-${String(i).padStart(7, '0')}`, body: 'x'.repeat(100) })
  })
  const handler = httpHandler(db, { stallTimeoutMs: 600_000, maxStreams: clients + 1 })
  const srv = createServer((req, res) => handler(req, res))
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const port = (srv.address() as { port: number }).port
  const used = async () => {
    const gc = (globalThis as { gc?: () => void }).gc
    if (!gc) throw new Error('run with --expose-gc (npm run bench does)')
    for (let i = 0; i < 3; i++) {
      gc()
      await new Promise((r) => setImmediate(r))
    }
    const m = process.memoryUsage()
    return m.heapUsed + m.external
  }
  const settled = async () => {
    // until two readings a turn apart agree within 128 kB: the collections of what ran before are done
    let last = await used()
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 200))
      const now = await used()
      if (Math.abs(now - last) < 128 * 1024) return now
      last = now
    }
    return last
  }
  const before = await settled()
  const socks: Socket[] = []
  try {
    for (let i = 0; i < clients; i++) {
      const s = connect(port, '127.0.0.1')
      s.on('error', () => undefined)
      s.write('GET /tables/rows/changes HTTP/1.1\r\nHost: localhost\r\n\r\n')
      s.pause()
      socks.push(s)
    }
    // until every stream is stalled: the server wrote what the sockets take and waits for a drain
    let last = -1
    for (;;) {
      await new Promise((r) => setTimeout(r, 500))
      const now = await used()
      if (Math.abs(now - last) < 256 * 1024) break
      last = now
    }
    const streaming = await new Promise<number>((r) => srv.getConnections((_e, n) => r(n)))
    if (streaming < clients) throw new Error(`only ${streaming} of ${clients} streams are open`)
    const after = await settled()
    if (process.env.BENCH_DEBUG) console.error({ before, after, clients })
    return (after - before) / clients
  } finally {
    for (const s of socks) s.destroy()
    srv.closeAllConnections()
    await new Promise((r) => srv.close(r))
  }
}

/** Memory kept per stalled change-stream client (run it first in a suite: nothing else's garbage around). */
export async function stalledStreams(quick: boolean): Promise<Result[]> {
  const perClient = await stalledStreamBytes(quick ? 20_000 : 100_000, 20)
  return [
    {
      name: `ChangeStream_Stalled_KeptPerClient_${quick ? '20k' : '100k'}`,
      unit: 'bytes/client',
      value: Math.round(perClient),
      note: 'heap + external growth after full collections / 20 clients that never read (noise: about ±50 kB)',
    },
  ]
}

export async function operatorPath(quick: boolean): Promise<Result[]> {
  const n = quick ? 50 : 200
  const status = await readyAfter(n, 'status')
  const applies = await readyAfter(n, 'children')
  return [
    {
      name: `Operator_Ready_${n}x3_Status50ms`,
      unit: 'ms',
      value: Math.round(status.ms),
      baseline: 'the same with the 50 ms on child applies',
      baselineValue: Math.round(applies.ms),
      note: `${n} objects, 3 children and a status each, every /status PATCH held 50 ms`,
    },
    {
      name: 'Operator_Events_PerObject_HappyPath',
      unit: 'events/object',
      value: status.events / n,
      note: 'Ready and Available appear True',
    },
  ]
}
