// The server, as the web view reads it: the bearer token (from #token=… once, then sessionStorage),
// requests with it, a table's pages (paged with x-statedb-continue) and its change stream.
// Invariants: the token never stays in the address bar, and a token no header can carry is an
// Unauthorized with why (fetch would throw a TypeError on every request, and the token form, the way
// out, never show); a 401 is an Unauthorized, any other failure an Error with the server's message;
// nothing from the address throws (a malformed %-escape in #token= is taken as written, and said);
// objects are never polled: a page is read once, then followed with `changes?since=`.
import { enc } from './dom.js'

/** @typedef {import('./types.js').Entry} Entry */
/** @typedef {import('./types.js').Change} Change */
/** @typedef {import('./types.js').Page} Page */

const TOKEN_KEY = 'statewright.token'
/** Why the token form shows beyond a 401 (a token the address or the form gave that cannot work). */
let note = ''
{
  const m = /[#&]token=([^&]*)/.exec(location.hash)
  if (m) {
    let t = m[1] ?? ''
    try {
      t = decodeURIComponent(t)
    } catch {
      // a malformed %-escape (`%E0%A4%A`): the text as written; when wrong, the token form says why
      note = 'The token in the address had a malformed %-escape; it was taken as written.'
    }
    sessionStorage.setItem(TOKEN_KEY, t)
    history.replaceState(
      null,
      '',
      location.pathname + location.search + (location.hash.replace(/[#&]token=[^&]*/, '').replace(/^&/, '#') || '#/'),
    )
  }
}
const token = () => sessionStorage.getItem(TOKEN_KEY) || ''
/** Why the token given cannot work, when known ('' else). */
export const tokenNote = () => note
/**
 * The token the form gave (it replaces the note).
 * @param {string} t
 */
export function setToken(t) {
  note = ''
  sessionStorage.setItem(TOKEN_KEY, t)
}
// what a header can carry (fetch throws on other characters, Node refuses controls)
const HEADER_SAFE = /^[\x20-\x7e\x80-\xff]*$/

/** The server wants a (valid) token; the message says why when it is not a plain 401. */
export class Unauthorized extends Error {}

/**
 * A GET with the token; an answer that is not 2xx throws (Unauthorized for a 401).
 * @param {string} path
 * @param {AbortSignal} [signal]
 * @returns {Promise<Response>}
 */
export async function api(path, signal) {
  const t = token()
  if (!HEADER_SAFE.test(t))
    throw new Unauthorized('The token holds characters an HTTP header cannot carry (control characters or non-Latin-1 text).')
  /** @type {RequestInit} */
  const init = t ? { headers: { authorization: `Bearer ${t}` } } : {}
  if (signal) init.signal = signal
  const r = await fetch(path, init)
  if (r.status === 401) throw new Unauthorized('unauthorized')
  if (!r.ok) {
    let msg = `${r.status}`
    try {
      /** @type {{ error?: unknown }} */
      const body = await r.json()
      if (typeof body.error === 'string' && body.error) msg = body.error
    } catch {}
    throw new Error(msg)
  }
  return r
}

/**
 * A GET answered with JSON of the shape T (the server's: see types.js).
 * @template T
 * @param {string} path
 * @param {AbortSignal} [signal]
 * @returns {Promise<T>}
 */
export async function json(path, signal) {
  return /** @type {T} */ (await (await api(path, signal)).json())
}

/**
 * The key a page's `x-statedb-continue` names: base64url (no padding) of its UTF-8. A header carries
 * only Latin-1 without controls, hence the encoding; the page asks for the next one with `after=`
 * (and compares keys with it), so it holds the key itself.
 * @param {string} token
 */
export function continueKey(token) {
  let bytes
  try {
    bytes = Uint8Array.from(atob(token.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))
  } catch {
    throw new Error(`the server's continue token is not base64url: ${token}`)
  }
  return new TextDecoder().decode(bytes)
}

/** @param {Response} r @param {string} name */
const numHeader = (r, name) => {
  const v = r.headers.get(name)
  return v === null ? undefined : Number(v)
}

/**
 * A page of a table: at most `limit` entries after `after` ('' for the first), of a query when given.
 * @param {string} table
 * @param {{ limit: number, after: string, query?: { index: string, key: string, op: string } }} o
 * @param {AbortSignal} [signal]
 * @returns {Promise<Page>}
 */
export async function readPage(table, o, signal) {
  const p = new URLSearchParams({ limit: String(o.limit) })
  if (o.query) {
    p.set('index', o.query.index)
    p.set('key', o.query.key)
    p.set('op', o.query.op)
  }
  if (o.after) p.set('after', o.after)
  const r = await api(`/statedb/tables/${enc(table)}?${p}`, signal)
  /** @type {Entry[]} */
  const entries = await r.json()
  const more = r.headers.get('x-statedb-continue')
  return {
    entries,
    next: more === null ? null : continueKey(more),
    revision: numHeader(r, 'x-statedb-revision') ?? 0,
    count: numHeader(r, 'x-statedb-count'),
  }
}

/**
 * A table's object count and revision (a page of one, its body not read).
 * @param {string} table
 * @param {AbortSignal} [signal]
 * @returns {Promise<{ count: number | undefined, revision: number | undefined }>}
 */
export async function readCount(table, signal) {
  const r = await api(`/statedb/tables/${enc(table)}?limit=1`, signal)
  await r.body?.cancel()
  return { count: numHeader(r, 'x-statedb-count'), revision: numHeader(r, 'x-statedb-revision') }
}

/**
 * Follows a table's changes after `since` until `signal` aborts: every line to `onChange`, the
 * stream's state to `onState` ('open', 'reconnecting'); a dropped stream is reopened a second later
 * from the last revision seen. An Unauthorized ends it (to `onError`); it never rejects.
 * @param {string} table
 * @param {number} since
 * @param {{ signal: AbortSignal, onChange: (c: Change) => void, onBatchEnd: () => void, onState: (s: 'open' | 'reconnecting') => void, onError: (err: unknown) => void }} o
 */
export async function followChanges(table, since, o) {
  while (!o.signal.aborted) {
    try {
      const r = await api(`/statedb/tables/${enc(table)}/changes?since=${since}`, o.signal)
      if (!r.body) throw new Error('no body')
      o.onState('open')
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader()
      let buf = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buf += value
        let i
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i)
          buf = buf.slice(i + 1)
          if (!line) continue
          /** @type {Change} */
          const c = JSON.parse(line)
          if (c.revision > since) since = c.revision
          o.onChange(c)
        }
        o.onBatchEnd()
      }
    } catch (err) {
      if (o.signal.aborted) return
      if (err instanceof Unauthorized) return o.onError(err)
    }
    o.onState('reconnecting')
    await new Promise((r) => setTimeout(r, 1000))
  }
}
