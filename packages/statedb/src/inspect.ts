// Inspection: a JSON dump, and a read-only `node:http` request handler.
//
//   GET /tables                                   tables with object counts, revisions, graveyard sizes
//   GET /tables/<name>                            all objects (with revisions and primary keys)
//   GET /tables/<name>?index=<i>&key=<k>[&op=get|list|prefix|lowerBound]   a query
//   ...&limit=<n>[&after=<primary key>]           a page: at most n objects after that key; the
//                                                 response headers x-statedb-next (the key to ask
//                                                 after next, absent on the last page),
//                                                 x-statedb-revision and, unqueried, x-statedb-count
//   GET /tables/<name>/changes                    newline-delimited JSON: every object, then changes live
//   GET /tables/<name>/changes?since=<revision>   the same without objects written at or before that
//                                                 revision, and one line {"sync":true,"revision":R}
//                                                 once the backlog is sent (a page read at revision
//                                                 since, then this stream, follows the table exactly
//                                                 once the client re-reads its page on "sync")
//   GET /dump                                     every table
//
// Nothing here writes. Objects pass through `redact` before they leave the process; the default
// redactor hides, at any depth, the `data` and `stringData` of Kubernetes Secrets (`kind: Secret`,
// wrapped in a desired object or not) and of any object marked sensitive (`markSensitive`, which the
// k8s layer uses for what it reflects from Secrets, whatever a transform made of them).

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { DB } from './db.ts'
import type { Table } from './table.ts'
import type { ReadTxn } from './txn.ts'

export type Redactor = (table: string, obj: unknown) => unknown

/** Marks an object's `data`/`stringData` as secret (an enumerable symbol: spreads keep it, JSON never shows it). */
export const SENSITIVE: unique symbol = Symbol.for('statewright.sensitive') as any
export function markSensitive<T extends object>(obj: T): T {
  ;(obj as Record<symbol, unknown>)[SENSITIVE] = true
  return obj
}

const REDACTED = '(redacted)'
const isSecretLike = (o: Record<string | symbol, unknown>) =>
  o[SENSITIVE] === true || (o.kind === 'Secret' && (o.apiVersion === undefined || o.apiVersion === 'v1'))

function redactDeep(v: unknown, seen: WeakSet<object>): unknown {
  if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) return v
  if (seen.has(v)) return '(circular)'
  seen.add(v)
  try {
    if (Array.isArray(v)) {
      let out: unknown[] | undefined
      v.forEach((x, i) => {
        const r = redactDeep(x, seen)
        if (r !== x) (out ??= [...v])[i] = r
      })
      return out ?? v
    }
    const o = v as Record<string | symbol, unknown>
    const secret = isSecretLike(o)
    let out: Record<string, unknown> | undefined
    for (const k of Object.keys(o)) {
      const r =
        secret && (k === 'data' || k === 'stringData')
          ? REDACTED
          : secret && k === 'metadata'
            ? redactMeta(o[k], seen)
            : redactDeep(o[k], seen)
      if (r !== o[k]) (out ??= { ...(o as Record<string, unknown>) })[k] = r
    }
    return out ?? v
  } finally {
    seen.delete(v)
  }
}

/** A Secret's metadata: `kubectl apply` copies the whole manifest, data included, into an annotation. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'
function redactMeta(m: unknown, seen: WeakSet<object>): unknown {
  const meta = redactDeep(m, seen) as Record<string, any> | undefined
  if (!meta || typeof meta !== 'object' || !meta.annotations || typeof meta.annotations !== 'object' || !(LAST_APPLIED in meta.annotations))
    return meta
  return { ...meta, annotations: { ...meta.annotations, [LAST_APPLIED]: REDACTED } }
}

/**
 * The default redactor: hides `data` and `stringData` of every Kubernetes Secret and every object
 * marked sensitive, at any depth (a Secret inside a desired object, in a list, ...). Returns the
 * object itself when nothing in it is secret.
 */
export const redactSecrets: Redactor = (_table, obj) => redactDeep(obj, new WeakSet())

export function dump(db: DB, opts: { txn?: ReadTxn; redact?: Redactor } = {}): Record<string, unknown> {
  const txn = opts.txn ?? db.readTxn()
  const redact = opts.redact ?? redactSecrets
  const out: Record<string, unknown> = {}
  for (const t of db.getTables()) {
    const objects: unknown[] = []
    for (const e of t.all(txn).entries()) objects.push({ revision: e.revision, object: redact(t.name, e.object) })
    out[t.name] = { revision: t.revision(txn), initialized: t.initialized(txn)[0], objects }
  }
  return out
}

export interface HttpHandlerOptions {
  /** Path prefix the handler is mounted at (default ''). */
  prefix?: string
  redact?: Redactor
  /** Extra fields for an object's entry (computed on the object before redaction), e.g. its reconcile status. */
  annotate?: (table: string, obj: unknown) => Record<string, unknown> | undefined
}

/** A primary key as text (the `key` of an entry, and what `after=` takes). */
export function keyText(k: unknown): string {
  if (typeof k === 'string') return k
  if (typeof k === 'number' || typeof k === 'bigint') return String(k)
  return JSON.stringify(k, jsonSafe)
}

interface Entryish {
  revision: number
  object: unknown
}
type Encode = (table: Table<any>, e: Entryish, extra?: Record<string, unknown>) => Record<string, unknown>

/** A read-only request handler for `http.createServer`. Bind the server to loopback. */
export function httpHandler(db: DB, opts: HttpHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const prefix = opts.prefix ?? ''
  const redact = opts.redact ?? redactSecrets
  const annotate = opts.annotate
  const send = (res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers })
    res.end(JSON.stringify(body, jsonSafe))
  }
  const encode: Encode = (table, e, extra) => ({
    ...extra,
    revision: e.revision,
    time: table.revisionTime(e.revision),
    key: keyText(table.primary.keyOf(e.object)),
    object: redact(table.name, e.object),
    ...annotate?.(table.name, e.object),
  })
  return (req, res) => {
    if (req.method !== 'GET') return send(res, 405, { error: 'read-only: only GET is served' })
    try {
      // inside the try: a malformed URL or escape is a 400, never an exception out of the listener
      const url = new URL(req.url ?? '/', 'http://localhost')
      if (!url.pathname.startsWith(prefix)) return send(res, 404, { error: 'not found' })
      const parts = url.pathname.slice(prefix.length).split('/').filter(Boolean).map(decodeURIComponent)
      if (parts.length === 1 && parts[0] === 'dump') return send(res, 200, dump(db, { redact }))
      if (parts.length === 1 && parts[0] === 'tables') {
        return send(
          res,
          200,
          db.stats().map((s) => ({ ...s, indexes: db.getTables().find((t) => t.name === s.name)!.indexes })),
        )
      }
      if (parts[0] !== 'tables' || parts.length < 2 || parts.length > 3) return send(res, 404, { error: 'not found' })
      const table = db.getTables().find((t) => t.name === parts[1])
      if (!table) return send(res, 404, { error: `no table "${parts[1]}"` })
      if (parts.length === 3) {
        if (parts[2] !== 'changes') return send(res, 404, { error: 'not found' })
        const since = url.searchParams.get('since')
        if (since !== null && !/^\d+$/.test(since)) return send(res, 400, { error: 'since= takes a revision (a whole number)' })
        return void streamChanges(table, db, req, res, encode, since === null ? undefined : Number(since))
      }
      const txn = db.readTxn()
      const limitText = url.searchParams.get('limit')
      const after = url.searchParams.get('after')
      const limit = limitText === null ? Infinity : Number(limitText)
      if (limitText !== null && !(Number.isInteger(limit) && limit > 0))
        return send(res, 400, { error: 'limit= takes a positive whole number' })
      const indexName = url.searchParams.get('index')
      const key = url.searchParams.get('key')
      let results
      let seek = false
      if (indexName === null) {
        // a page after a string key starts at that key (O(log n)); other keys are skipped to
        const first = after === null ? undefined : table.all(txn).entries()[Symbol.iterator]().next().value
        seek = first !== undefined && typeof table.primary.keyOf(first.object) === 'string'
        results = seek ? table.lowerBound(txn, table.primary.query(after!)) : table.all(txn)
      } else {
        const index = table.indexNamed(indexName)
        if (!index)
          return send(res, 400, { error: `table "${table.name}" has no index "${indexName}" (indexes: ${table.indexes.join(', ')})` })
        if (key === null) return send(res, 400, { error: 'a query by index needs key=' })
        const q = index.fromString(key)
        const op = url.searchParams.get('op') ?? 'list'
        if (op === 'get' || op === 'list') results = table.list(txn, q)
        else if (op === 'prefix') results = table.prefix(txn, q)
        else if (op === 'lowerBound') results = table.lowerBound(txn, q)
        else return send(res, 400, { error: `unknown op "${op}": want get, list, prefix or lowerBound` })
        if (op === 'get') {
          const first = results.entries()[Symbol.iterator]().next()
          if (first.done) return send(res, 404, { error: `table "${table.name}": no object with ${indexName}=${key}` })
          return send(res, 200, encode(table, first.value))
        }
      }
      const out: unknown[] = []
      const headers: Record<string, string> = { 'x-statedb-revision': String(table.revision(txn)) }
      if (indexName === null) headers['x-statedb-count'] = String(table.count(txn))
      let skipping = after !== null
      let last: string | undefined
      for (const e of results.entries()) {
        const key = keyText(table.primary.keyOf(e.object))
        if (skipping) {
          if (key === after) {
            skipping = false
            continue
          }
          if (!seek) continue
          skipping = false // seeking: the key itself is gone, this is the next one
        }
        if (out.length >= limit) {
          headers['x-statedb-next'] = last!
          break
        }
        out.push(encode(table, e))
        last = key
      }
      return send(res, 200, out, headers)
    } catch (err) {
      return send(res, 400, { error: err instanceof Error ? err.message : String(err) })
    }
  }
}

async function streamChanges(
  table: Table<any>,
  db: DB,
  req: IncomingMessage,
  res: ServerResponse,
  encode: Encode,
  since: number | undefined,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
  res.flushHeaders()
  const abort = new AbortController()
  const stop = () => abort.abort()
  req.on('close', stop)
  const iter = table.changes(db.readTxn())
  let backlog = since !== undefined
  try {
    while (!abort.signal.aborted) {
      const txn = db.readTxn()
      const [changes, watch] = iter.next(txn)
      let chunk = ''
      for (const c of changes) {
        if (backlog && c.revision <= since!) continue
        chunk += JSON.stringify(encode(table, c, { deleted: c.deleted }), jsonSafe) + '\n'
        if (chunk.length > 65536) {
          res.write(chunk)
          chunk = ''
        }
      }
      if (backlog) {
        chunk += JSON.stringify({ sync: true, revision: table.revision(txn) }) + '\n'
        backlog = false
      }
      if (chunk) res.write(chunk)
      await watch.wait(abort.signal)
    }
  } catch {
    // the client went away
  } finally {
    iter.close()
    req.off('close', stop)
    res.end()
  }
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  return value
}
