// The inspection surface, usable alone (`http.createServer(inspectHandler({ db }))`) or inside the
// Manager's HTTP server:
//   GET /ui/…                the web view (static files of @statewright/cli when installed; no data in them)
//   GET /statedb/…           statedb's read-only handler; entries of a reconciled table carry
//                            `reconcile: { <reconciler>: { kind, updatedAt, error?, attempts?, retryAt? } }`
//   GET /reconcilers         every reconciler: its table, health, objects by status, errors with
//                            message, attempts and next retry time (?errors=N: at most N, default 100)
//   GET /reconcilers/<name>  one of them
//   GET /topology            { graphs: [{ component, graph }] } of every part that has a graph
//   GET /topology?format=dot|svg|layout   Graphviz DOT, an SVG, or positions (dagre) for the web view,
//                            rendered by @statewright/cli (501 naming the install command without it)
//   GET /statusz             (alone, when given `status`) the health the web view's panel shows
// Invariants: every request passes statedb's gate first, once (httpGuard: GET and HEAD only, a Host
// naming this server, a path in normal form, the token on every path but the static /ui files,
// judged on the normalized path); every object passes through the redactor (statedb's by default)
// before it leaves; /ui is served with a Content-Security-Policy that allows only this origin's
// scripts and styles (no inline ones); nothing a route or a component throws escapes the listener.
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  guardedListener,
  httpGuard,
  httpHandler,
  keyText,
  redactSecrets,
  type DB,
  type HttpGuardOptions,
  type Redactor,
  type Table,
} from '@statewright/statedb'
import type { Reconciler, Status, StatusKind } from '@statewright/reconciler'
import type { NamedGraph } from '@statewright/topology'

export interface InspectOptions {
  db: DB
  /** The reconcilers whose per-object status to show. */
  reconcilers?: () => ReadonlyArray<Reconciler<any>>
  /** The graphs to show under Topology. */
  graphs?: () => NamedGraph[]
  /** What /statusz serves (the Manager serves its own). */
  status?: () => unknown
  redact?: Redactor
  /** When set, every request but the static /ui files needs `Authorization: Bearer <token>`. */
  token?: string
  /** Host names accepted besides localhost, loopback and the address connected to (statedb's HttpGuardOptions). */
  allowedHosts?: HttpGuardOptions['allowedHosts']
  /** Change streams open at once (default 32; 429 beyond). */
  maxStreams?: number
  /** How long a client may read nothing of a response before it is dropped (default 30 000 ms). */
  stallTimeoutMs?: number
  /** A route or a source failed while answering (the answer is a 500). */
  onError?: (err: unknown, req: IncomingMessage) => void
}

/** The Content-Security-Policy of /ui: this origin's scripts, styles and connections only, nothing inline. */
export const UI_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

/** Whether a path is one of the inspection surface's (the Manager routes these to inspectHandler). */
export function isInspectPath(path: string): boolean {
  return (
    path === '/ui' ||
    path.startsWith('/ui/') ||
    path === '/statedb' ||
    path.startsWith('/statedb/') ||
    path === '/reconcilers' ||
    path.startsWith('/reconcilers/') ||
    path === '/topology'
  )
}

/** Whether a path is a static file of the web view (served without the token: it holds no data). */
export const isUiPath = (path: string) => path === '/ui' || path.startsWith('/ui/')

// The web view's files and the graph renderer come with @statewright/cli, an optional peer: loaded on
// the first request that needs them, so a controller without it starts and serves everything else.
type Cli = typeof import('@statewright/cli')
let cli: Promise<Cli | undefined> | undefined
const loadCli = () =>
  (cli ??= import('@statewright/cli').then(
    (m) => m,
    () => undefined,
  ))
const NO_CLI = 'this needs @statewright/cli (the web view, DOT and SVG): npm install @statewright/cli'

export interface ObjectReconcileStatus {
  kind: StatusKind
  updatedAt: number
  error?: string
  attempts?: number
  retryAt?: number
}

/** One reconciler's status of an object, with its retry (attempts, next retry time) when failing. */
function statusOf(r: Reconciler<any>, obj: unknown): ObjectReconcileStatus | undefined {
  let s: Status | undefined
  try {
    s = r.config.getObjectStatus(obj)
  } catch {
    return undefined
  }
  if (!s || typeof s.kind !== 'string') return undefined
  const out: ObjectReconcileStatus = { kind: s.kind, updatedAt: s.updatedAt, ...(s.error !== undefined ? { error: s.error } : {}) }
  if (s.kind === 'error') {
    const f = r.failureOf(obj)
    if (f) {
      out.attempts = f.attempts
      out.retryAt = f.retryAt
    }
  }
  return out
}

const KINDS: StatusKind[] = ['pending', 'refreshing', 'done', 'error']

function reconcilerInfo(db: DB, r: Reconciler<any>, maxErrors: number, redact: Redactor): Record<string, unknown> {
  const table = r.config.table as Table<unknown>
  const idx = r.config.statusIndex
  const txn = db.readTxn()
  const counts: Record<string, number> = {}
  for (const k of KINDS) counts[k] = table.list(txn, idx.kind(k, idx.isSet ? r.name : undefined)).count()
  const errors: unknown[] = []
  for (const e of table.list(txn, idx.kind('error', idx.isSet ? r.name : undefined)).entries()) {
    if (errors.length >= maxErrors) break
    const s = statusOf(r, e.object)
    errors.push({
      key: keyText(table.primary.keyOf(e.object)),
      revision: e.revision,
      error: s?.error ?? '',
      updatedAt: s?.updatedAt,
      attempts: s?.attempts,
      retryAt: s?.retryAt,
    })
  }
  const h = r.health()
  return {
    name: r.name,
    table: table.name,
    running: r.isRunning,
    health: { level: h.level, ready: h.ready, message: h.message },
    counts,
    errors,
    failedDeletes: r
      .failedDeletes()
      .slice(0, maxErrors)
      .map((f) => ({ key: f.key, error: f.error, attempts: f.attempts, retryAt: f.retryAt, object: redact(table.name, f.object) })),
  }
}

/** The inspection surface as one read-only request handler (see the header of this file). */
export function inspectHandler(o: InspectOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const redact = o.redact ?? redactSecrets
  const guard = httpGuard({ token: o.token, allowedHosts: o.allowedHosts, open: isUiPath })
  const reconcilers = () => o.reconcilers?.() ?? []
  const statedb = httpHandler(o.db, {
    prefix: '/statedb',
    redact,
    maxStreams: o.maxStreams,
    stallTimeoutMs: o.stallTimeoutMs,
    annotate: (table, obj) => {
      let reconcile: Record<string, ObjectReconcileStatus> | undefined
      for (const r of reconcilers()) {
        if (r.config.table.name !== table) continue
        const s = statusOf(r, obj)
        if (s) (reconcile ??= {})[r.name] = s
      }
      return reconcile && { reconcile }
    },
  })
  return guardedListener(async (req, res) => {
    const url = guard(req, res)
    if (!url) return
    const path = url.pathname
    if (isUiPath(path)) return serveUi(path, res, await loadCli())
    if (path === '/statedb' || path.startsWith('/statedb/')) return statedb(req, res)
    if (path === '/reconcilers' || path.startsWith('/reconcilers/')) {
      const n = Number(url.searchParams.get('errors') ?? 100)
      const max = Number.isInteger(n) && n >= 0 ? n : 100
      if (path === '/reconcilers')
        return send(
          res,
          200,
          reconcilers().map((r) => reconcilerInfo(o.db, r, max, redact)),
        )
      let name: string
      try {
        name = decodeURIComponent(path.slice('/reconcilers/'.length))
      } catch {
        return send(res, 400, { error: 'bad escape in the path' })
      }
      const r = reconcilers().find((x) => x.name === name)
      if (!r)
        return send(res, 404, {
          error: `no reconciler "${name}" (reconcilers: ${
            reconcilers()
              .map((x) => x.name)
              .join(', ') || 'none'
          })`,
        })
      return send(res, 200, reconcilerInfo(o.db, r, max, redact))
    }
    if (path === '/topology') {
      let graphs: NamedGraph[]
      try {
        graphs = (o.graphs?.() ?? []).map((g) => ({ component: g.component, graph: redact('topology', g.graph) as NamedGraph['graph'] }))
      } catch (err) {
        return send(res, 500, { error: `a component's graph() failed: ${(err as Error).message}` })
      }
      const format = url.searchParams.get('format') ?? 'json'
      if (format === 'json') return send(res, 200, { graphs })
      if (format !== 'dot' && format !== 'svg' && format !== 'layout')
        return send(res, 400, { error: `unknown format "${format}": want json, dot, svg or layout` })
      const render = await loadCli()
      if (!render) return send(res, 501, { error: NO_CLI })
      if (format === 'dot') return raw(res, 200, 'text/vnd.graphviz; charset=utf-8', render.toDot(graphs))
      if (format === 'svg') return raw(res, 200, 'image/svg+xml; charset=utf-8', render.toSvg(graphs))
      return send(res, 200, {
        graphs: graphs.map((g) => ({ component: g.component, graph: g.graph, layout: render.layoutGraph(g.graph) })),
      })
    }
    if (path === '/statusz' && o.status) return send(res, 200, o.status())
    return send(res, 404, { error: 'not found', paths: ['/ui/', '/statedb/tables', '/reconcilers', '/topology'] })
  }, o.onError)
}

function serveUi(path: string, res: ServerResponse, cli: Cli | undefined): void {
  if (path === '/ui') {
    res.writeHead(308, { location: '/ui/' })
    res.end()
    return
  }
  if (!cli) return send(res, 404, { error: NO_CLI })
  const file = cli.uiFile(path === '/ui/' ? 'index.html' : path.slice('/ui/'.length))
  if (!file) return send(res, 404, { error: 'not found' })
  res.writeHead(200, {
    'content-type': file.contentType,
    'content-security-policy': UI_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cache-control': 'no-cache',
  })
  res.end(file.body)
}

// The body is made before the head is written: a value that cannot be serialized is a 500, not a
// half-sent answer.
function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))
  res.writeHead(code, { 'content-type': 'application/json' })
  res.end(text)
}
function raw(res: ServerResponse, code: number, type: string, body: string): void {
  res.writeHead(code, { 'content-type': type })
  res.end(body)
}
