// The gate of every inspection request: it decides, once and in one place, whether a request is
// served, and hands the handlers behind it the normalized URL they route on.
//
// Invariants:
// - only GET and HEAD pass (405 with `Allow` otherwise): nothing served here writes;
// - the `Host` header must name this server: `localhost`, a loopback address, the address the
//   connection arrived on, or one of `allowedHosts` (403 otherwise). A web page the operator visits
//   can point a name of its own at 127.0.0.1 (DNS rebinding); its requests then carry that name, so a
//   name we do not know is refused, as `kubectl proxy` refuses hosts outside --accept-hosts;
// - the path is judged as the URL standard normalizes it, and a request whose raw path differs from
//   its normal form (dot segments, encoded or not, backslashes, characters that need escaping) is
//   refused with 400: no handler ever sees one path while the token check saw another;
// - with a token, every path but the `open` ones needs `Authorization: Bearer <token>`, compared in
//   constant time; the open paths are judged on the normalized path too;
// - a request admitted once is admitted for every handler it is passed to (a handler mounted inside
//   another one): the outermost gate's decision stands, nothing is parsed twice;
// - every response carries `X-Content-Type-Options: nosniff` and `Cache-Control: no-store` (a
//   handler may set another cache policy for its own static files);
// - `guardedListener`: nothing a handler throws or rejects escapes the request listener (a 500 when
//   nothing was sent yet, else the connection is cut).
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

export interface HttpGuardOptions {
  /** When set, every request but those to `open` paths needs `Authorization: Bearer <token>`. */
  token?: string
  /**
   * Host names (or addresses) accepted in the `Host` header besides `localhost`, loopback addresses
   * and the address a connection arrived on: exact names, `.example.com` for that domain and its
   * subdomains, or `*` for any (only behind a proxy that checks hosts itself).
   */
  allowedHosts?: readonly string[]
  /** Paths served without the token (judged on the normalized path), e.g. static files with no data. */
  open?: (path: string) => boolean
}

const digest = (s: string) => createHash('sha256').update(s).digest()

/** A constant-time check of `Authorization: Bearer <token>` (always true without a token). */
function bearerCheck(token: string | undefined): (req: IncomingMessage) => boolean {
  if (token === undefined) return () => true
  const want = digest(`Bearer ${token}`)
  return (req) => timingSafeEqual(digest(req.headers.authorization ?? ''), want)
}

const admitted = new WeakMap<IncomingMessage, URL>()

/** Decides whether a request is served: its normalized URL, or undefined when it was refused (and answered). */
export type HttpGuard = (req: IncomingMessage, res: ServerResponse) => URL | undefined

/** The gate (see the header of this file). Handlers route on the URL it returns, never on `req.url`. */
export function httpGuard(options: HttpGuardOptions = {}): HttpGuard {
  const authorized = bearerCheck(options.token)
  return (req, res) => admit(req, res, options, authorized)
}

function admit(
  req: IncomingMessage,
  res: ServerResponse,
  options: HttpGuardOptions,
  authorized: (req: IncomingMessage) => boolean,
): URL | undefined {
  const earlier = admitted.get(req)
  if (earlier) return earlier
  res.setHeader('x-content-type-options', 'nosniff')
  res.setHeader('cache-control', 'no-store')
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    refuse(res, 405, 'read-only: only GET and HEAD are served', { allow: 'GET, HEAD' })
    return undefined
  }
  if (!hostAllowed(req, options.allowedHosts)) {
    refuse(
      res,
      403,
      `host "${String(req.headers.host).slice(0, 100)}" is not this server's: use localhost or the address it listens on, or list the name in allowedHosts`,
    )
    return undefined
  }
  const url = normalized(req.url)
  if (typeof url === 'string') {
    refuse(res, 400, url)
    return undefined
  }
  if (options.token !== undefined && !options.open?.(url.pathname) && !authorized(req)) {
    refuse(res, 401, 'unauthorized: send Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' })
    return undefined
  }
  admitted.set(req, url)
  return url
}

/** The request's URL in normal form, or why it is refused. */
function normalized(raw: string | undefined): URL | string {
  if (raw === undefined || !raw.startsWith('/') || raw.startsWith('//')) return 'bad request target: want a path starting with one /'
  const end = raw.search(/[?#]/)
  const rawPath = end < 0 ? raw : raw.slice(0, end)
  let url: URL
  try {
    url = new URL(raw, 'http://localhost')
  } catch {
    return 'bad URL'
  }
  if (url.pathname !== rawPath)
    return `path not in normal form (dot segments, backslashes or characters to escape): ask for ${url.pathname.slice(0, 200)}`
  return url
}

const HOST = /^(?:\[([0-9a-f:.]+(?:%[\w.-]+)?)\]|([^:[\]@/\\\s]+))(?::\d{1,5})?$/i

function hostAllowed(req: IncomingMessage, allowed: readonly string[] | undefined): boolean {
  const header = req.headers.host
  if (header === undefined) return true // HTTP/1.0 without Host: not a browser, nothing to rebind
  const m = HOST.exec(header)
  if (!m) return false
  const name = (m[1] ?? m[2]!).toLowerCase().replace(/\.$/, '')
  if (name === 'localhost' || isLoopback(name)) return true
  const local = req.socket.localAddress
  if (local !== undefined && plainAddress(local) === plainAddress(name)) return true
  if (!allowed) return false
  for (const a of allowed) {
    const x = a.toLowerCase().replace(/^\[|\]$/g, '')
    if (x === '*' || x === name || (x.startsWith('.') && (name.endsWith(x) || name === x.slice(1)))) return true
  }
  return false
}

/** An address without the IPv4-mapped prefix or an IPv6 zone, for comparison. */
const plainAddress = (a: string) =>
  a
    .toLowerCase()
    .replace(/^::ffff:(?=\d+\.)/, '')
    .replace(/%.*$/, '')
const isLoopback = (name: string) => {
  const a = plainAddress(name)
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a)
}

function refuse(res: ServerResponse, code: number, error: string, headers: Record<string, string> = {}): void {
  res.writeHead(code, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify({ error }))
}

/**
 * A request listener that nothing escapes: a handler's throw or rejection becomes a 500 while no
 * header was sent, and cuts the connection after (a half-sent body must not look complete).
 */
export function guardedListener(
  handle: (req: IncomingMessage, res: ServerResponse) => unknown,
  onError?: (err: unknown, req: IncomingMessage) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const fail = (req: IncomingMessage, res: ServerResponse, err: unknown) => {
    try {
      onError?.(err, req)
    } catch {
      // a failing error hook changes nothing about the answer
    }
    if (res.headersSent || res.writableEnded) return void res.destroy()
    try {
      const message = err instanceof Error ? err.message : String(err)
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: `internal error: ${message.slice(0, 500)}` }))
    } catch {
      res.destroy()
    }
  }
  return (req, res) => {
    try {
      const p = handle(req, res) as Promise<unknown> | undefined
      if (p && typeof p.then === 'function') p.then(undefined, (err) => fail(req, res, err))
    } catch (err) {
      fail(req, res, err)
    }
  }
}
