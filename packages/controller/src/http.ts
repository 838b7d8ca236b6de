// The Manager's one HTTP server: liveness, readiness, status, metrics and statedb inspection.
//   GET /healthz   200 "ok" while the manager runs (liveness)
//   GET /readyz    200 when every component is ready; 503 with the reasons (readiness)
//   GET /statusz   JSON: every component's health, object errors with examples
//   GET /metrics   Prometheus text from the manager's registry
//   GET /statedb/… statedb's inspection handler (tables, queries, pages, changes), secrets redacted
//   GET /ui/, /reconcilers, /topology   the web view and what it reads (inspect/handler.ts)
// Invariants: every request passes statedb's gate once (httpGuard): read-only (anything but GET and
// HEAD is 405), a Host naming this server (403 otherwise: DNS rebinding), a path in normal form (400
// otherwise), and with a token `Authorization: Bearer <token>` on every path but the web view's static
// files and, when `probesWithoutToken`, /healthz, /livez and /readyz, all judged on the normalized
// path. Bound to 127.0.0.1 unless told otherwise. Nothing a source throws escapes the listener.
import { ConfigError } from './errors.ts'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { guardedListener, httpGuard, type DB, type HttpGuardOptions } from '@statewright/statedb'
import type { PromRegistry, Reconciler } from '@statewright/reconciler'
import { inspectHandler, isInspectPath, isUiPath } from './inspect/handler.ts'
import type { NamedGraph } from '@statewright/topology'

export interface HttpOptions {
  /** Port (default 8080; 0 picks a free one). */
  port?: number
  /** Bind address (default 127.0.0.1: only this machine). */
  host?: string
  /** When set, every request needs `Authorization: Bearer <token>` (but see `probesWithoutToken`). */
  token?: string
  /**
   * Serve /healthz, /livez and /readyz without the token (default false), for kubelet probes, which
   * cannot send a header from a Secret. They tell only whether the process is alive and ready.
   */
  probesWithoutToken?: boolean
  /**
   * Host names accepted in the `Host` header besides localhost, loopback addresses and the address a
   * connection arrived on (a Service name, an ingress host): exact, `.example.com` for a domain and
   * its subdomains, or `*` for any. Other hosts get 403 (DNS rebinding).
   */
  allowedHosts?: HttpGuardOptions['allowedHosts']
  /** Serve only /healthz, /livez and /readyz (a probes server beside the main one; 404 elsewhere). */
  probesOnly?: boolean
  /** Change streams open at once (default 32; 429 beyond). */
  maxStreams?: number
  /** How long a client may read nothing of a response before it is dropped (default 30 000 ms). */
  stallTimeoutMs?: number
}

export interface HttpSources {
  db: DB
  registry: PromRegistry | undefined
  live(): boolean
  ready(): { ready: boolean; reasons: string[] }
  status(): unknown
  reconcilers(): ReadonlyArray<Reconciler<any>>
  graphs(): NamedGraph[]
  /** A source or route failed while answering (the answer is a 500). */
  onError?(err: unknown, path: string): void
}

const PROBES = new Set(['/healthz', '/livez', '/readyz'])
/** The path a failed request asked for, for the log (as sent: it may be refused as not normal). */
const pathOf = (req: IncomingMessage) => (req.url ?? '/').split('?')[0]!.slice(0, 200)

export class ManagerServer {
  private server: Server | undefined
  constructor(
    private readonly options: HttpOptions,
    private readonly src: HttpSources,
  ) {}

  /** Listens; a port in use is an error that says so. */
  async listen(): Promise<string> {
    const host = this.options.host ?? '127.0.0.1'
    const port = this.options.port ?? 8080
    const o = this.options
    const inspect = inspectHandler({
      db: this.src.db,
      reconcilers: () => this.src.reconcilers(),
      graphs: () => this.src.graphs(),
      maxStreams: o.maxStreams,
      stallTimeoutMs: o.stallTimeoutMs,
      onError: (err, req) => this.src.onError?.(err, pathOf(req)),
    })
    const guard = httpGuard({
      token: o.token,
      allowedHosts: o.allowedHosts,
      open: (path) => isUiPath(path) || (o.probesWithoutToken === true && PROBES.has(path)),
    })
    const handle = (req: IncomingMessage, res: ServerResponse) => {
      const url = guard(req, res)
      if (!url) return
      const path = url.pathname
      if (path === '/healthz' || path === '/livez') return this.src.live() ? text(res, 200, 'ok') : text(res, 503, 'stopped')
      if (path === '/readyz') {
        const r = this.src.ready()
        return r.ready ? text(res, 200, 'ok') : text(res, 503, `not ready:\n${r.reasons.map((x) => `- ${x}`).join('\n')}\n`)
      }
      if (o.probesOnly) return send(res, 404, { error: 'not found', paths: ['/healthz', '/livez', '/readyz'] })
      if (path === '/statusz') return send(res, 200, this.src.status())
      if (path === '/metrics') return this.metrics(res)
      if (isInspectPath(path)) return inspect(req, res)
      return send(res, 404, {
        error: 'not found',
        paths: ['/healthz', '/readyz', '/statusz', '/metrics', '/statedb/tables', '/reconcilers', '/topology', '/ui/'],
      })
    }
    const server = createServer(guardedListener(handle, (err, req) => this.src.onError?.(err, pathOf(req))))
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
    await closeServer(s)
  }
}

/** Closes a listening server at once: open connections (keep-alive, streams) are dropped, not awaited. */
export async function closeServer(s: { closeAllConnections(): void; close(cb: () => void): unknown } | undefined): Promise<void> {
  if (!s) return
  s.closeAllConnections()
  await new Promise<void>((resolve) => s.close(() => resolve()))
}

// The body is made before the head is written: a value that cannot be serialized is a 500 (from the
// guarded listener), never a head sent twice.
function send(res: ServerResponse, code: number, body: unknown): void {
  const json = JSON.stringify(body, null, 2)
  res.writeHead(code, { 'content-type': 'application/json' })
  res.end(json)
}
function text(res: ServerResponse, code: number, body: string): void {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8' })
  res.end(body)
}
export type { IncomingMessage }
