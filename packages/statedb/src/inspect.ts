// Inspection: a JSON dump, and a read-only `node:http` request handler.
//
//   GET /tables                                   tables with object counts, revisions, graveyard sizes
//   GET /tables/<name>                            all objects (with revisions and primary keys)
//   GET /tables/<name>?index=<i>&key=<k>[&op=get|list|prefix|lowerBound]   a query
//   ...&limit=<n>[&continue=<token>|&after=<key>] a page: at most n objects after that key; the
//                                                 response headers x-statedb-continue (the token to
//                                                 ask with next, absent on the last page: the last
//                                                 key in base64url, so any key fits in a header),
//                                                 x-statedb-revision and, unqueried, x-statedb-count
//   GET /tables/<name>/changes                    newline-delimited JSON: every object, then changes live
//   GET /tables/<name>/changes?since=<revision>   the same without objects written at or before that
//                                                 revision, and one line {"sync":true,"revision":R}
//                                                 once the backlog is sent (a page read at revision
//                                                 since, then this stream, follows the table exactly
//                                                 once the client re-reads its page on "sync")
//   GET /dump                                     every table
//   HEAD on any of these: the same status and headers, no body
//
// Invariants: nothing here writes. Every request passes the gate first (./httpguard.ts: method, Host,
// normal path, token). Objects pass through `redact` before they leave the process (./redact.ts).
// Long responses are written in slices that take turns with the rest of the process and wait for the
// client to read (./httpstream.ts); at most `maxStreams` change streams are open at once (429 beyond).
// An object that cannot be serialized is an error string in its place; nothing a request does throws
// out of the listener.

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { DB } from './db.ts'
import { QueryError, UsageError } from './errors.ts'
import { byRevision, REVISION_INDEX } from './indexes.ts'
import { guardedListener, httpGuard, type HttpGuardOptions } from './httpguard.ts'
import { jsonOrError, jsonSafe, PacedWriter, StreamClosed } from './httpstream.ts'
import { redactSecrets, type Redactor } from './redact.ts'
import type { Table } from './table.ts'
import type { ReadTxn } from './txn.ts'

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

export interface HttpHandlerOptions extends Omit<HttpGuardOptions, 'open'> {
  /** Path prefix the handler is mounted at (default ''). */
  prefix?: string
  redact?: Redactor
  /** Extra fields for an object's entry (computed on the object before redaction), e.g. its reconcile status. */
  annotate?: (table: string, obj: unknown) => Record<string, unknown> | undefined
  /** Change streams open at once (default 32); one more is answered 429. */
  maxStreams?: number
  /** How long a client may read nothing of a response before it is dropped (default 30 000 ms). */
  stallTimeoutMs?: number
}

/** A primary key as text (the `key` of an entry, and what `after=` takes). */
export function keyText(k: unknown): string {
  if (typeof k === 'string') return k
  if (typeof k === 'number' || typeof k === 'bigint') return String(k)
  return JSON.stringify(k, jsonSafe)
}

/** The page token of a key (`x-statedb-continue`, `continue=`): header-safe whatever the key holds. */
const tokenOf = (key: string) => Buffer.from(key, 'utf8').toString('base64url')
const keyOfToken = (token: string) => {
  if (!/^[A-Za-z0-9_-]*$/.test(token)) throw new UsageError('continue= takes the token of x-statedb-continue (base64url)')
  return Buffer.from(token, 'base64url').toString('utf8')
}

interface Entryish {
  revision: number
  object: unknown
}
type Encode = (table: Table<any>, e: Entryish, extra?: Record<string, unknown>) => string

/** A read-only request handler for `http.createServer`. Bind the server to loopback. */
export function httpHandler(db: DB, opts: HttpHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const prefix = opts.prefix ?? ''
  const redact = opts.redact ?? redactSecrets
  const annotate = opts.annotate
  const maxStreams = opts.maxStreams ?? 32
  const stallTimeoutMs = opts.stallTimeoutMs ?? 30_000
  const guard = httpGuard(opts)
  let streams = 0
  const send = (res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers })
    res.end(jsonOrError(body))
  }
  const annotated = (table: string, obj: unknown) => {
    try {
      return annotate?.(table, obj)
    } catch (err) {
      return { annotateError: err instanceof Error ? err.message : String(err) }
    }
  }
  // An entry as JSON text; an object that cannot be serialized is an error string in its place.
  const encode: Encode = (table, e, extra) => {
    const entry: Record<string, unknown> = {
      ...extra,
      revision: e.revision,
      time: table.revisionTime(e.revision),
      key: keyText(table.primary.keyOf(e.object)),
      object: undefined,
      ...annotated(table.name, e.object),
    }
    return withObject(entry, () => redact(table.name, e.object))
  }
  const paced = async (res: ServerResponse, write: (w: PacedWriter) => Promise<void>) => {
    const w = new PacedWriter(res, stallTimeoutMs)
    try {
      await w.start()
      await write(w)
      w.end()
    } catch (err) {
      if (!(err instanceof StreamClosed)) throw err
    }
  }

  return guardedListener(async (req, res) => {
    const url = guard(req, res)
    if (!url) return
    const head = req.method === 'HEAD'
    let parts: string[]
    try {
      parts = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length).split('/').filter(Boolean).map(decodeURIComponent) : []
    } catch {
      return send(res, 400, { error: 'bad escape in the path' })
    }
    if (parts.length === 1 && parts[0] === 'dump') {
      res.writeHead(200, { 'content-type': 'application/json' })
      if (head) return void res.end()
      const txn = db.readTxn()
      return paced(res, async (w) => {
        let sep = '{'
        for (const t of db.getTables()) {
          await w.push(`${sep}${JSON.stringify(t.name)}:{"revision":${t.revision(txn)},"initialized":${t.initialized(txn)[0]},"objects":[`)
          sep = ','
          let first = true
          for (const e of t.all(txn).entries()) {
            await w.push((first ? '' : ',') + withObject({ revision: e.revision, object: undefined }, () => redact(t.name, e.object)))
            first = false
          }
          await w.push(']}')
        }
        await w.push(sep === '{' ? '{}' : '}')
      })
    }
    if (parts.length === 1 && parts[0] === 'tables') {
      const tables = db.getTables()
      return send(
        res,
        200,
        db.stats().map((s) => ({ ...s, indexes: tables.find((t) => t.name === s.name)!.indexes })),
      )
    }
    if (parts[0] !== 'tables' || parts.length < 2 || parts.length > 3) return send(res, 404, { error: 'not found' })
    const table = db.getTables().find((t) => t.name === parts[1])
    if (!table) return send(res, 404, { error: `no table "${parts[1]}"` })
    if (parts.length === 3) {
      if (parts[2] !== 'changes') return send(res, 404, { error: 'not found' })
      const since = url.searchParams.get('since')
      if (since !== null && !/^\d+$/.test(since)) return send(res, 400, { error: 'since= takes a revision (a whole number)' })
      if (streams >= maxStreams)
        return send(res, 429, { error: `too many change streams open (${maxStreams}); try again later` }, { 'retry-after': '5' })
      res.writeHead(200, { 'content-type': 'application/x-ndjson' })
      if (head) return void res.end()
      res.flushHeaders() // a client waits for the headers before the first change
      streams++
      return paced(res, (w) => streamChanges(table, db, w, encode, since === null ? undefined : Number(since))).finally(() => streams--)
    }
    let page: { entries: Entryish[]; headers: Record<string, string>; one: boolean }
    try {
      page = readPage(table, db.readTxn(), url.searchParams)
    } catch (err) {
      // a bad parameter, or a key the index cannot parse (a user's fromString may throw anything)
      return send(res, err instanceof PageNotFound ? 404 : 400, { error: err instanceof Error ? err.message : String(err) })
    }
    res.writeHead(200, { 'content-type': 'application/json', ...page.headers })
    if (head) return void res.end()
    if (page.one) return void res.end(encode(table, page.entries[0]!))
    return paced(res, async (w) => {
      let sep = '['
      for (const e of page.entries) {
        await w.push(sep + encode(table, e))
        sep = ','
      }
      await w.push(sep === '[' ? '[]' : ']')
    })
  })
}

/** An index query that found nothing: 404 where the other errors of a page are 400. */
class PageNotFound extends QueryError {}

/** The entries of one listing, query or page, and its headers (entries are encoded later, paced). */
function readPage(
  table: Table<any>,
  txn: ReadTxn,
  params: URLSearchParams,
): { entries: Entryish[]; headers: Record<string, string>; one: boolean } {
  const limitText = params.get('limit')
  const token = params.get('continue')
  if (token !== null && params.get('after') !== null) throw new UsageError('continue= and after= go alone: give one')
  const after = token !== null ? keyOfToken(token) : params.get('after')
  const limit = limitText === null ? Infinity : Number(limitText)
  if (limitText !== null && !(Number.isInteger(limit) && limit > 0)) throw new UsageError('limit= takes a positive whole number')
  const indexName = params.get('index')
  const key = params.get('key')
  let results
  let seek = false
  if (indexName === null) {
    // a page after a string key starts at that key (O(log n)); other keys are skipped to
    const first = after === null ? undefined : table.all(txn).entries()[Symbol.iterator]().next().value
    seek = first !== undefined && typeof table.primary.keyOf(first.object) === 'string'
    results = seek ? table.lowerBound(txn, table.primary.query(after!)) : table.all(txn)
  } else {
    const index = table.indexNamed(indexName)
    if (!index && indexName !== REVISION_INDEX)
      throw new UsageError(`table "${table.name}" has no index "${indexName}" (indexes: ${[...table.indexes, REVISION_INDEX].join(', ')})`)
    if (key === null) throw new UsageError('a query by index needs key=')
    if (!index && !/^\d+$/.test(key))
      throw new UsageError(`the revision index takes a revision (a whole number), got key=${JSON.stringify(key)}`)
    const q = index ? index.fromString(key) : byRevision<any>(Number(key))
    const op = params.get('op') ?? 'list'
    if (op === 'get' || op === 'list') results = table.list(txn, q)
    else if (op === 'prefix') results = table.prefix(txn, q)
    else if (op === 'lowerBound') results = table.lowerBound(txn, q)
    else throw new UsageError(`unknown op "${op}": want get, list, prefix or lowerBound`)
    if (op === 'get') {
      const first = results.entries()[Symbol.iterator]().next()
      if (first.done) throw new PageNotFound(`table "${table.name}": no object with ${indexName}=${key}`)
      return { entries: [first.value], headers: {}, one: true }
    }
  }
  const entries: Entryish[] = []
  const headers: Record<string, string> = { 'x-statedb-revision': String(table.revision(txn)) }
  if (indexName === null) headers['x-statedb-count'] = String(table.count(txn))
  let skipping = after !== null
  let last: string | undefined
  for (const e of results.entries()) {
    const k = keyText(table.primary.keyOf(e.object))
    if (skipping) {
      if (k === after) {
        skipping = false
        continue
      }
      if (!seek) continue
      skipping = false // seeking: the key itself is gone, this is the next one
    }
    if (entries.length >= limit) {
      headers['x-statedb-continue'] = tokenOf(last!)
      break
    }
    entries.push(e)
    last = k
  }
  return { entries, headers, one: false }
}

/** An entry as JSON text, its `object` from `object()`; one that cannot be redacted or serialized is an error string in its place. */
function withObject(entry: Record<string, unknown>, object: () => unknown): string {
  try {
    entry.object = object()
    return JSON.stringify(entry, jsonSafe)
  } catch (err) {
    entry.object = `(unserializable: ${err instanceof Error ? err.message : String(err)})`
    return jsonOrError(entry)
  }
}

async function streamChanges(table: Table<any>, db: DB, w: PacedWriter, encode: Encode, since: number | undefined): Promise<void> {
  const iter = table.changes(db.readTxn())
  let backlog = since !== undefined
  try {
    for (;;) {
      const txn = db.readTxn()
      const [changes, watch] = iter.next(txn)
      for (const c of changes) {
        if (backlog && c.revision <= since!) continue
        await w.push(encode(table, c, { deleted: c.deleted }) + '\n')
      }
      if (backlog) {
        await w.push(JSON.stringify({ sync: true, revision: table.revision(txn) }) + '\n')
        backlog = false
      }
      await w.flush()
      const gone = new AbortController()
      const stop = () => gone.abort()
      w.onClose(stop)
      try {
        await watch.wait(gone.signal)
      } catch {
        return // the client went away while we waited for a change
      } finally {
        w.offClose(stop)
      }
    }
  } finally {
    iter.close()
  }
}
