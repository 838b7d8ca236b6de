// The Manager's one HTTP server: liveness, readiness, status, metrics and statedb inspection.
//   GET /healthz   200 "ok" while the manager runs (liveness)
//   GET /readyz    200 when every component is ready; 503 with the reasons (readiness)
//   GET /statusz   JSON: every component's health, object errors with examples
//   GET /metrics   Prometheus text from the manager's registry
//   GET /statedb/… statedb's inspection handler (tables, queries, pages, changes), secrets redacted
//   GET /ui/, /reconcilers, /topology   the web view and what it reads (inspect/handler.ts)
// Invariants: read-only (anything but GET/HEAD is 405); bound to 127.0.0.1 unless told otherwise; with
// a token, every path but the web view's static files needs `Authorization: Bearer <token>`,
// compared in constant time.
import { ConfigError } from './errors.ts'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { DB } from '@statewright/statedb'
import type { PromRegistry, Reconciler } from '@statewright/reconciler'
import { bearerCheck, inspectHandler, isInspectPath, isUiPath } from './inspect/handler.ts'
import type { NamedGraph } from './inspect/graph.ts'

export interface HttpOptions {
  /** Port (default 8080; 0 picks a free one). */
  port?: number
  /** Bind address (default 127.0.0.1: only this machine). */
  host?: string
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string
}

export interface HttpSources {
  db: DB
  registry: PromRegistry | undefined
  live(): boolean
  ready(): { ready: boolean; reasons: string[] }
  status(): unknown
  reconcilers(): ReadonlyArray<Reconciler<any>>
  graphs(): NamedGraph[]
}

export class ManagerServer {
  private server: Server | undefined
  constructor(
    private readonly o: HttpOptions,
    private readonly src: HttpSources,
  ) {}

  /** Listens; a port in use is an error that says so. */
  async listen(): Promise<string> {
    const host = this.o.host ?? '127.0.0.1'
    const port = this.o.port ?? 8080
    const inspect = inspectHandler({ db: this.src.db, reconcilers: () => this.src.reconcilers(), graphs: () => this.src.graphs() })
    const authorized = bearerCheck(this.o.token)
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!
      if (!isUiPath(path) && !authorized(req)) return send(res, 401, { error: 'unauthorized: send Authorization: Bearer <token>' })
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'read-only: only GET is served' })
      if (path === '/healthz' || path === '/livez') return this.src.live() ? text(res, 200, 'ok') : text(res, 503, 'stopped')
      if (path === '/readyz') {
        const r = this.src.ready()
        return r.ready ? text(res, 200, 'ok') : text(res, 503, `not ready:\n${r.reasons.map((x) => `- ${x}`).join('\n')}\n`)
      }
      if (path === '/statusz') return send(res, 200, this.src.status())
      if (path === '/metrics') return void this.metrics(res)
      if (isInspectPath(path)) return inspect(req, res)
      return send(res, 404, {
        error: 'not found',
        paths: ['/healthz', '/readyz', '/statusz', '/metrics', '/statedb/tables', '/reconcilers', '/topology', '/ui/'],
      })
    })
    server.keepAliveTimeout = 5000
    await new Promise<void>((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) => {
        reject(
          e.code === 'EADDRINUSE'
            ? new ConfigError(
                `manager HTTP server: port ${port} on ${host} is in use; choose another with http.port (0 picks a free one), or stop what holds it`,
                { cause: e },
              )
            : new ConfigError(`manager HTTP server: cannot listen on ${host}:${port}: ${e.message}`, { cause: e }),
        )
      }
      server.once('error', onError)
      server.listen(port, host, () => {
        server.off('error', onError)
        resolve()
      })
    })
    this.server = server
    const a = server.address() as AddressInfo
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`
  }

  private async metrics(res: ServerResponse): Promise<void> {
    const reg = this.src.registry
    if (!reg) return text(res, 503, 'metrics are off: prom-client is not installed (npm install prom-client)')
    try {
      const body = await reg.metrics()
      res.writeHead(200, { 'content-type': reg.contentType })
      res.end(body)
    } catch (err) {
      text(res, 500, `metrics failed: ${(err as Error).message}`)
    }
  }

  async close(): Promise<void> {
    const s = this.server
    this.server = undefined
    if (!s) return
    s.closeAllConnections()
    await new Promise<void>((resolve) => s.close(() => resolve()))
  }
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body, null, 2))
}
function text(res: ServerResponse, code: number, body: string): void {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8' })
  res.end(body)
}
export type { IncomingMessage }
