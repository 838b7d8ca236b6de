// Shared helpers for the NATS tests: a TCP proxy that cuts connections, a real nats-server, bounded
// waits on statedb tables, and a bucket's contents read directly.
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { Kvm, type KV } from '@nats-io/kv'
import { DB, Table, defineIndex, setValidation } from '@statewright/statedb'
import { listEntries, startNatsServer, type KvRow, type RunningNatsServer } from '@statewright/nats'

export { waitTable, waitFor as until } from '../../../test/lib/wait.ts'

setValidation(true)

export { startNatsServer, type RunningNatsServer }

/** A TCP proxy on 127.0.0.1 to a port: cut() drops every connection, block() refuses new ones until unblock(). */
export class TcpProxy {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  private blocked = false
  port = 0
  cuts = 0

  constructor(public target: () => number) {}

  async start(): Promise<this> {
    this.server = createServer((client) => {
      if (this.blocked) {
        client.destroy()
        return
      }
      const upstream = tcpConnect(this.target(), '127.0.0.1')
      this.sockets.add(client).add(upstream)
      const drop = () => {
        client.destroy()
        upstream.destroy()
        this.sockets.delete(client)
        this.sockets.delete(upstream)
      }
      client.on('error', drop).on('close', drop)
      upstream.on('error', drop).on('close', drop)
      client.pipe(upstream)
      upstream.pipe(client)
    })
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r))
    this.port = (this.server.address() as { port: number }).port
    return this
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`
  }

  cut(): void {
    this.cuts++
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
  }

  block(): void {
    this.blocked = true
    this.cut()
  }

  unblock(): void {
    this.blocked = false
  }

  async stop(): Promise<void> {
    this.cut()
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r())
  }
}

/** A client that reconnects forever, quickly (what a controller wants). */
export function natsClient(url: string): Promise<NatsConnection> {
  // timeout: a connection cut during the reconnect handshake is retried after 1 s, not the default 20 s
  return connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 50, reconnectJitter: 20, timeout: 1000 })
}

export async function openBucket(nc: NatsConnection, bucket: string, history = 5): Promise<KV> {
  return new Kvm(nc).create(bucket, { history, timeout: 1000 })
}

export function rowTable(name = 'rows'): Table<KvRow> {
  return new Table<KvRow>({ name, primary: defineIndex<KvRow, string>({ name: 'key', key: (r) => r.key, unique: true }) })
}

/** The bucket's contents: key -> parsed JSON value. */
export async function bucketContents(kv: KV): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>()
  for (const e of await listEntries(kv)) out.set(e.key, JSON.parse(new TextDecoder().decode(e.value)))
  return out
}

/** The table's contents: key -> value. */
export function tableContents(db: DB, table: Table<KvRow>): Map<string, unknown> {
  const out = new Map<string, unknown>()
  for (const r of table.all(db.readTxn())) out.set(r.key, r.value)
  return out
}

export function sameContents(a: Map<string, unknown>, b: Map<string, unknown>): boolean {
  if (a.size !== b.size) return false
  for (const [k, v] of a) if (!b.has(k) || JSON.stringify(b.get(k)) !== JSON.stringify(v)) return false
  return true
}

/** Purges the bucket's stream, keeping the last `keep` messages: the history before is lost. */
export async function purgeStream(nc: NatsConnection, bucket: string, keep: number): Promise<void> {
  const r = await nc.request(`$JS.API.STREAM.PURGE.KV_${bucket}`, JSON.stringify({ keep }))
  const res = r.json<{ success?: boolean; error?: { description: string } }>()
  if (!res.success) throw new Error(`purge failed: ${res.error?.description}`)
}
