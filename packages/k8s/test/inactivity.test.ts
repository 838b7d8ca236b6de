// Issue 40: a watch that goes silent (no event, no bookmark) is restarted after inactivityTimeoutMs
// and resumes from its resourceVersion, so a later change arrives (kopf's inactivity timeout; Pepr
// issues #745 and #453 are this bug). Two ways a watch goes silent: the server holds the watch
// request and answers nothing (a delay fault), and a connection that dies quietly after the headers
// (a proxy that stops forwarding, as a NAT or load balancer that dropped the flow). Without the
// bound neither change arrives for minutes (the server-side timeout, 300 s or more): the waits below
// (30 s) fail. The test server sends a bookmark every 50 ms, so a healthy watch is never silent.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { DB } from '@statewright/statedb'
import { Reflector } from '@statewright/k8s'
import { collectingLogger, type LogEntry } from '../../../test/lib/logger.ts'
import { WIDGET, clusterFor, create, objectTable, startServer, waitFor, waitTable, widget } from './helpers.ts'

const has = (name: string) => (t: ReturnType<typeof objectTable>, db: DB) => () =>
  t.get(db.readTxn(), t.primary.query(`default/${name}`)) !== undefined

test('a watch the server holds and answers nothing is restarted from its resourceVersion; the change made meanwhile arrives', async () => {
  const server = await startServer({ bookmarkIntervalMs: 50 })
  const cluster = clusterFor(server)
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const logs: LogEntry[] = []
  const r = new Reflector({ cluster, db, table, kind: WIDGET, inactivityTimeoutMs: 200, logger: collectingLogger((e) => logs.push(e)) })
  try {
    server.control.seed(WIDGET, 10)
    await r.start()
    await r.waitSynced(AbortSignal.timeout(10_000))
    await waitFor(() => server.control.watchCount() === 1, 'the first watch')
    const held = server.control.delay({ watch: true, ms: 120_000, count: 1 }) // the next watch request hangs
    server.control.closeWatches() // a routine end: the reflector resumes, into the held request
    await waitFor(() => server.control.requestLog().filter((e) => e.watch).length >= 2, 'the resumed watch request')
    await create(cluster, widget('after-silence'))
    await waitTable(db, table, has('after-silence')(table, db), 'the change made while the watch was silent', 30_000)
    held()
    const h = r.health()
    assert.ok(h.inactivityRestarts >= 1, JSON.stringify(h))
    assert.is(h.lists, 1, 'resumed from the resourceVersion: no list')
    assert.is(h.relists, 0)
    assert.ok(h.ready, 'a restarted silent watch keeps the reflector ready')
    // the watch after the held one asked for the same version: a resume, not a new start
    const [, heldReq, next] = server.control.requestLog().filter((e) => e.watch)
    assert.ok(heldReq && next, 'a watch after the held one')
    assert.is(next!.query.resourceVersion, heldReq!.query.resourceVersion)
    const line = logs.find((e) => /watch silent/.test(e.msg ?? ''))
    assert.ok(line, 'the restart is logged')
    assert.is(line!.level, 'warn')
    assert.is(line!.fields.reflector, r.name)
    assert.is(line!.fields.cluster, cluster.name)
    assert.ok((line!.fields.silentMs as number) >= 200)
    assert.is(line!.fields.resumeFrom, heldReq!.query.resourceVersion)
  } finally {
    await r.stop()
    await cluster.close()
    await server.stop()
  }
})

test('a watch whose connection dies quietly after the headers is restarted; later changes arrive', async () => {
  const server = await startServer({ tls: false, bookmarkIntervalMs: 50 })
  const proxy = await new FreezingProxy(server.port).start()
  const cluster = clusterFor(server, { kubeconfig: server.kubeconfig.replace(`:${server.port}`, `:${proxy.port}`) })
  const direct = clusterFor(server)
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const r = new Reflector({ cluster, db, table, kind: WIDGET, inactivityTimeoutMs: 300 })
  try {
    await r.start()
    await r.waitSynced(AbortSignal.timeout(10_000))
    await create(direct, widget('before'))
    await waitTable(db, table, has('before')(table, db), 'a change through the live watch', 30_000)
    const restarts = r.health().inactivityRestarts
    proxy.freeze() // every open connection stops delivering; the server still writes into it
    await create(direct, widget('after-freeze'))
    await waitTable(db, table, has('after-freeze')(table, db), 'the change after the connection died', 30_000)
    assert.ok(r.health().inactivityRestarts > restarts, JSON.stringify(r.health()))
    assert.is(r.health().lists, 1, 'resumed, not relisted')
    await create(direct, widget('later'))
    await waitTable(db, table, has('later')(table, db), 'a later change on the new watch', 30_000)
  } finally {
    await r.stop()
    await cluster.close()
    await direct.close()
    await proxy.stop()
    await server.stop()
  }
})

/** A TCP proxy whose freeze() makes every open connection drop what the server sends (new ones work). */
class FreezingProxy {
  port = 0
  private server: Server | undefined
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>()

  constructor(private readonly target: number) {}

  async start(): Promise<this> {
    this.server = createServer((client) => {
      const pair = { client, upstream: connect(this.target, '127.0.0.1'), frozen: false }
      this.pairs.add(pair)
      const drop = () => {
        client.destroy()
        pair.upstream.destroy()
        this.pairs.delete(pair)
      }
      client.on('data', (b) => pair.upstream.write(b))
      pair.upstream.on('data', (b) => {
        if (!pair.frozen) client.write(b)
      })
      client.on('error', drop).on('close', drop)
      pair.upstream.on('error', drop).on('close', drop)
    })
    await new Promise<void>((res) => this.server!.listen(0, '127.0.0.1', res))
    this.port = (this.server.address() as { port: number }).port
    return this
  }

  freeze(): void {
    for (const p of this.pairs) p.frozen = true
  }

  async stop(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy()
      p.upstream.destroy()
    }
    await new Promise<void>((res) => this.server?.close(() => res()) ?? res())
  }
}

test.run()
