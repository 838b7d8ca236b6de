// The statewright web view: tables, objects (paged on the server, live over the changes stream),
// an object's detail with its reconcile status, health, and the topology. Plain ES module, no build.
// Invariants: every value from the server reaches the DOM through textContent or setAttribute, never
// as markup; the text shown (h/s children, titles) holds no raw control or bidi character: C0, C1,
// the bidi marks, embeddings, overrides and isolates and lone surrogates show as escapes, as the CLI
// shows them (`\x1b`, `\u202e`; JSON's `\u001b` in a JSON view), so a name can neither run nor pass
// for another (data-* attributes keep raw values: never shown, the tests select by them); nothing
// from the address (#token=, a table's name) throws: a malformed %-escape is a message on the page or
// taken as written; objects are never polled (a table's page follows
// /statedb/tables/<t>/changes?since=); changes are applied in batches at most every 100 ms, to one
// page of PAGE rows.

const PAGE = 100
const view = document.getElementById('view')
const liveEl = document.getElementById('live')

// ---- the token: from #token=… once, then sessionStorage ----
/** Why the token form shows beyond a 401 (a token the address or the form gave that cannot work). */
let tokenNote = ''
{
  const m = /[#&]token=([^&]*)/.exec(location.hash)
  if (m) {
    let t = m[1]
    try {
      t = decodeURIComponent(t)
    } catch {
      // a malformed %-escape (`%E0%A4%A`): the text as written; when wrong, the token form says why
      tokenNote = 'The token in the address had a malformed %-escape; it was taken as written.'
    }
    sessionStorage.setItem('statewright.token', t)
    history.replaceState(
      null,
      '',
      location.pathname + location.search + (location.hash.replace(/[#&]token=[^&]*/, '').replace(/^&/, '#') || '#/'),
    )
  }
}
const token = () => sessionStorage.getItem('statewright.token') || ''
const headers = () => (token() ? { authorization: `Bearer ${token()}` } : {})
// what a header can carry (fetch throws on other characters, Node refuses controls): else every
// request would fail with fetch's TypeError and the token form, the way out, would never show
const HEADER_SAFE = /^[\x20-\x7e\x80-\xff]*$/

class Unauthorized extends Error {}
async function api(path, opts = {}) {
  if (!HEADER_SAFE.test(token()))
    throw new Unauthorized('The token holds characters an HTTP header cannot carry (control characters or non-Latin-1 text).')
  const r = await fetch(path, { headers: headers(), ...opts })
  if (r.status === 401) throw new Unauthorized('unauthorized')
  if (!r.ok) {
    let msg = `${r.status}`
    try {
      msg = (await r.json()).error || msg
    } catch {}
    throw new Error(msg)
  }
  return r
}
const json = async (path) => (await api(path)).json()

// ---- text: what could hide or reorder it shows as an escape ----
const SVG = 'http://www.w3.org/2000/svg'
// Lone surrogates: a browser shows U+FFFD for each, so two keys would look alike; encodeURIComponent
// throws on them
const LONE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]'
// What the CLI never prints raw either (src/inspect/terminal.ts): C0 and C1 controls and DEL
// (terminal escapes, CSI U+009B), the bidi marks (U+200E, U+200F, U+061C), embeddings and overrides
// (U+202A–U+202E: `\u202egnp.exe` reads "exe.png"), isolates (U+2066–U+2069), U+FFFE, U+FFFF and
// lone surrogates
const HIDDEN = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069\\ufffe\\uffff]|${LONE}`, 'g')
const HAS_HIDDEN = new RegExp(HIDDEN.source)
const NAMED = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }
const hex = (c, digits) => c.charCodeAt(0).toString(16).padStart(digits, '0')
/** A hidden character as the CLI and the server's SVG show it: `\n`, `\r`, `\t`, `\xHH` below U+0100, else `\uHHHH`. */
const escapeOf = (c) => NAMED[c] ?? (c.charCodeAt(0) < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`)
/** The text with every hidden character as its escape (for attributes that show, such as title). */
const visible = (text) => text.replace(HIDDEN, escapeOf)
/**
 * A node showing the text, each hidden character as a marked escape (a span, in SVG a tspan). In
 * JSON (`json`), the escape is JSON's `\uHHHH`, so the view stays JSON, and newlines stay: raw ones
 * are its layout (JSON.stringify escapes those in strings).
 */
function textNode(text, svg, json) {
  if (!HAS_HIDDEN.test(text)) return document.createTextNode(text)
  const out = document.createDocumentFragment()
  let at = 0
  for (const m of text.matchAll(HIDDEN)) {
    if (json && m[0] === '\n') continue
    if (m.index > at) out.append(text.slice(at, m.index))
    const mark = svg ? document.createElementNS(SVG, 'tspan') : document.createElement('span')
    mark.setAttribute('class', 'esc')
    mark.textContent = json ? `\\u${hex(m[0], 4)}` : escapeOf(m[0])
    out.append(mark)
    at = m.index + m[0].length
  }
  if (at < text.length) out.append(text.slice(at))
  return out
}
/** A value as indented JSON, its hidden characters as JSON escapes. */
function jsonNode(value) {
  const text = JSON.stringify(value, null, 2)
  return text === undefined ? '' : textNode(text, false, true)
}
/** encodeURIComponent that cannot throw: a lone surrogate goes as U+FFFD. */
const enc = (text) => encodeURIComponent(text.replace(new RegExp(LONE, 'g'), '\ufffd'))
/** decodeURIComponent with a message, for what the address holds (`%E0%A4%A` throws URIError). */
function dec(text) {
  try {
    return decodeURIComponent(text)
  } catch {
    throw new Error(`the address holds a malformed %-escape: ${text}`)
  }
}

// ---- DOM helpers (text only) ----
/** Attributes whose values the browser shows (a tooltip, what a screen reader reads). */
const SHOWN = new Set(['title', 'aria-label'])
function h(tag, attrs, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') el.className = v
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, SHOWN.has(k) ? visible(String(v)) : String(v))
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue
    el.append(c instanceof Node ? c : textNode(String(c), false, false))
  }
  return el
}
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag)
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined) el.setAttribute(k, SHOWN.has(k) ? visible(String(v)) : String(v))
  for (const c of children) el.append(c instanceof Node ? c : textNode(String(c), true, false))
  return el
}

function ago(ms) {
  if (ms === undefined || ms === null) return '?'
  const d = Math.max(0, Date.now() - ms) / 1000
  if (d < 60) return `${Math.floor(d)}s`
  if (d < 3600) return `${Math.floor(d / 60)}m${Math.floor(d % 60)}s`
  if (d < 86400) return `${Math.floor(d / 3600)}h${Math.floor((d % 3600) / 60)}m`
  return `${Math.floor(d / 86400)}d`
}
function inSecs(ms) {
  const d = Math.round((ms - Date.now()) / 1000)
  return d <= 0 ? 'now' : `in ${d}s`
}
/** Kubernetes-ish fields of an object, or of the object a desired entry wraps. */
function meta(obj) {
  const o = obj && typeof obj === 'object' ? (obj.metadata ? obj : obj.object && obj.object.metadata ? obj.object : undefined) : undefined
  return o ? { kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name, cluster: obj.cluster } : undefined
}

function statusBadges(reconcile, withMessage) {
  if (!reconcile) return []
  return Object.entries(reconcile).map(([name, st]) =>
    h(
      'span',
      {},
      h('span', { class: `badge ${st.kind}`, title: name, 'data-reconciler': name }, st.kind),
      withMessage && st.kind === 'error' ? h('span', { class: 'errmsg' }, st.error || '') : null,
    ),
  )
}

/**
 * The key a page's `x-statedb-continue` names: base64url (no padding) of its UTF-8. A header carries
 * only Latin-1 without controls, hence the encoding; the page asks for the next one with `after=`
 * (and compares keys with it), so it holds the key itself.
 */
function continueKey(token) {
  let bytes
  try {
    bytes = Uint8Array.from(atob(token.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))
  } catch {
    throw new Error(`the server's continue token is not base64url: ${token}`)
  }
  return new TextDecoder().decode(bytes)
}

// ---- routing ----
let teardown = () => {}
/** The table view on screen: selecting another object of it keeps its page and its stream. */
let current = null
function route() {
  const hash = location.hash || '#/'
  const [path, query] = hash.slice(1).split('?')
  const params = new URLSearchParams(query || '')
  const rest = new URLSearchParams(params)
  rest.delete('o')
  const base = `${path}?${rest}`
  if (current && current.base === base) return current.select(params.get('o'))
  teardown()
  teardown = () => {}
  current = null
  view.replaceChildren(h('p', { class: 'muted' }, 'Loading…'))
  for (const a of document.querySelectorAll('nav a'))
    a.classList.toggle('active', (a.getAttribute('data-nav') === 'topology') === path.startsWith('/topology'))
  setLive('')
  // in the promise: a malformed escape in the address is a message on the page, not an exception
  const run = (async () =>
    path.startsWith('/t/')
      ? tableView(dec(path.slice(3)), params, base)
      : path.startsWith('/topology')
        ? topologyView(params)
        : homeView())()
  run.catch(showError)
}
window.addEventListener('hashchange', route)
window.addEventListener('DOMContentLoaded', route)

function showError(err) {
  if (err instanceof Unauthorized) return loginView(err.message === 'unauthorized' ? tokenNote : err.message)
  if (err && err.name === 'AbortError') return
  view.replaceChildren(h('div', { class: 'card' }, h('p', { class: 'errmsg' }, `Error: ${err && err.message ? err.message : err}`)))
}
function setLive(text, on) {
  liveEl.textContent = text
  liveEl.className = `live${text ? (on ? ' on' : ' off') : ''}`
}

/** The token form, with why the token given cannot work when known. */
function loginView(why) {
  const input = h('input', { type: 'password', id: 'token', placeholder: 'bearer token', autocomplete: 'off' })
  view.replaceChildren(
    h(
      'div',
      { class: 'card login' },
      h('h1', {}, 'A token is needed'),
      h('p', { class: 'muted' }, 'This process serves its data only with a bearer token (the manager\u2019s http.token).'),
      why ? h('p', { class: 'errmsg', id: 'token-why' }, why) : null,
      h(
        'form',
        {
          onsubmit: (e) => {
            e.preventDefault()
            tokenNote = ''
            sessionStorage.setItem('statewright.token', input.value)
            route()
          },
        },
        input,
        ' ',
        h('button', { type: 'submit' }, 'Open'),
      ),
    ),
  )
}

// ---- home: tables, reconcilers, health ----
async function homeView() {
  const ctl = new AbortController()
  let timer
  teardown = () => {
    ctl.abort()
    clearTimeout(timer)
  }
  const render = async () => {
    const [tables, reconcilers, status] = await Promise.all([
      json('/statedb/tables'),
      json('/reconcilers').catch((e) => {
        if (e instanceof Unauthorized) throw e
        return []
      }),
      json('/statusz').catch((e) => {
        if (e instanceof Unauthorized) throw e
        return undefined
      }),
    ])
    if (ctl.signal.aborted) return
    const tableRows = tables.map((t) =>
      h(
        'tr',
        {
          class: 'row',
          'data-table': t.name,
          onclick: () => {
            location.hash = `#/t/${enc(t.name)}`
          },
        },
        h('td', {}, h('a', { href: `#/t/${enc(t.name)}` }, t.name)),
        h('td', {}, t.objects),
        h('td', {}, t.revision),
        h('td', {}, t.initialized ? 'yes' : `no (${(t.pendingInitializers || []).join(', ')})`),
        h('td', {}, t.graveyard),
        h('td', { class: 'mono' }, (t.indexes || []).join(', ')),
      ),
    )
    const recCards = reconcilers.map((r) =>
      h(
        'div',
        { class: 'card', 'data-reconciler': r.name },
        h(
          'h2',
          {},
          `Reconciler ${r.name} `,
          h('span', { class: `badge ${r.health.level}` }, r.health.level),
          ' ',
          h('span', { class: 'muted' }, `on table ${r.table}`),
        ),
        h(
          'p',
          {},
          ...['done', 'pending', 'refreshing', 'error'].map((k) => h('span', { class: `badge ${k}` }, `${k} ${r.counts[k] ?? 0}`)),
        ),
        r.errors.length
          ? h(
              'table',
              { class: 'list' },
              h('thead', {}, h('tr', {}, h('th', {}, 'object'), h('th', {}, 'error'), h('th', {}, 'attempts'), h('th', {}, 'next retry'))),
              h(
                'tbody',
                {},
                r.errors.map((e) =>
                  h(
                    'tr',
                    {
                      class: 'row',
                      onclick: () => {
                        location.hash = `#/t/${enc(r.table)}?o=${enc(e.key)}`
                      },
                    },
                    h('td', { class: 'mono' }, e.key),
                    h('td', { class: 'errmsg' }, e.error),
                    h('td', {}, e.attempts ?? ''),
                    h('td', {}, e.retryAt ? inSecs(e.retryAt) : ''),
                  ),
                ),
              ),
            )
          : h('p', { class: 'muted' }, r.health.message),
      ),
    )
    view.replaceChildren(
      h(
        'div',
        { class: 'grid' },
        h(
          'div',
          {},
          h(
            'div',
            { class: 'card' },
            h('h1', {}, 'Tables'),
            h(
              'table',
              { class: 'list', id: 'tables' },
              h(
                'thead',
                {},
                h('tr', {}, ...['name', 'objects', 'revision', 'initialized', 'graveyard', 'indexes'].map((c) => h('th', {}, c))),
              ),
              h('tbody', {}, tableRows),
            ),
          ),
          recCards,
        ),
        healthPanel(status),
      ),
    )
    timer = setTimeout(() => render().catch(showError), 5000) // health and counts; objects are never polled
  }
  await render()
}

function healthPanel(st) {
  if (!st) return h('div', { class: 'card', id: 'health' }, h('h1', {}, 'Health'), h('p', { class: 'muted' }, 'No /statusz here.'))
  const rows = []
  const add = (what, level, message) =>
    rows.push(h('tr', {}, h('td', {}, what), h('td', {}, h('span', { class: `badge ${level}` }, level)), h('td', {}, message || '')))
  for (const r of st.reflectors || []) add(`reflector ${r.name ?? ''}`, r.ready ? 'ok' : 'degraded', r.state ?? (r.lastError || ''))
  for (const d of st.derivations || []) add(`derivation ${d.name}`, d.level ?? (d.ready ? 'ok' : 'degraded'), d.message)
  if (st.reconciler) add(`reconciler ${st.reconciler.name}`, st.reconciler.level, st.reconciler.message)
  for (const c of st.components || []) add(c.name, c.level, c.message)
  return h(
    'div',
    { class: 'card', id: 'health' },
    h('h1', {}, 'Health ', h('span', { class: `badge ${st.ready ? 'ok' : 'error'}` }, st.ready ? 'ready' : 'not ready')),
    h(
      'dl',
      { class: 'kv' },
      h('dt', {}, 'manager'),
      h('dd', {}, st.name ?? ''),
      h('dt', {}, 'state'),
      h('dd', {}, st.state ?? ''),
      h('dt', {}, 'leading'),
      h('dd', {}, st.leader && st.leader.leading ? 'yes' : 'no'),
    ),
    (st.reasons || []).length
      ? h(
          'ul',
          {},
          st.reasons.map((r) => h('li', { class: 'errmsg' }, r)),
        )
      : null,
    h('table', { class: 'list' }, h('tbody', {}, rows)),
  )
}

// ---- a table: one page, live ----
async function tableView(name, params, base) {
  const ctl = new AbortController()
  let tick
  teardown = () => {
    ctl.abort()
    clearInterval(tick)
  }
  const tables = await json('/statedb/tables')
  const info = tables.find((t) => t.name === name)
  if (!info) throw new Error(`no table "${name}"`)
  const primary = info.indexes[0]
  const q = {
    index: params.get('index') || '',
    key: params.get('key') || '',
    op: params.get('op') || 'list',
    after: params.get('after') || '',
  }
  let selected = params.get('o')
  const searching = q.index !== '' && q.key !== ''
  const link = (over) => {
    const p = new URLSearchParams()
    const m = { ...q, o: selected || '', ...over }
    for (const [k, v] of Object.entries(m)) if (v && !(k === 'op' && v === 'list')) p.set(k, v)
    const qs = p.toString()
    return `#/t/${enc(name)}${qs ? `?${qs}` : ''}`
  }

  // the page: key → entry, in the server's order; next: the page's last key when more follow
  let rows = new Map()
  let next = null
  let count = info.objects
  let revision = 0
  let changes = 0
  let recent = []
  // figures the browser test reads
  const win = /** @type {any} */ (window)
  const stats = (win.__statewright = { flushes: 0, applied: 0, maxFlushMs: 0, lastFlushMs: 0 })

  const pageUrl = () => {
    const p = new URLSearchParams({ limit: String(PAGE) })
    if (searching) {
      p.set('index', q.index)
      p.set('key', q.key)
      p.set('op', q.op)
    }
    if (q.after) p.set('after', q.after)
    return `/statedb/tables/${enc(name)}?${p}`
  }
  const loadPage = async () => {
    const r = await api(pageUrl(), { signal: ctl.signal })
    const list = await r.json()
    rows = new Map(list.map((e) => [e.key, e]))
    const more = r.headers.get('x-statedb-continue')
    next = more === null ? null : continueKey(more)
    revision = Number(r.headers.get('x-statedb-revision') || 0)
    if (r.headers.get('x-statedb-count') !== null) count = Number(r.headers.get('x-statedb-count'))
  }
  await loadPage()

  // ---- the DOM ----
  const idxSel = h(
    'select',
    { name: 'index', id: 'search-index' },
    info.indexes.map((i) => h('option', { value: i, selected: i === (q.index || primary) }, i)),
  )
  const keyIn = h('input', { name: 'key', id: 'search-key', placeholder: 'key', value: q.key })
  const opSel = h(
    'select',
    { name: 'op', id: 'search-op' },
    ['list', 'prefix', 'lowerBound'].map((o) => h('option', { value: o, selected: o === q.op }, o)),
  )
  const tbody = h('tbody', {})
  const countEl = h('span', { class: 'muted', id: 'count' })
  const detail = h('div', { id: 'detail' })
  const pager = h('div', { class: 'pager' })
  const hasMeta = () => {
    for (const e of rows.values()) return !!meta(e.object)
    return !!meta(undefined)
  }
  const head = h('thead', {})
  view.replaceChildren(
    h(
      'div',
      { class: 'grid' },
      h(
        'div',
        { class: 'card' },
        h('h1', {}, `Table ${name} `, countEl),
        h(
          'form',
          {
            class: 'search',
            id: 'search',
            onsubmit: (e) => {
              e.preventDefault()
              location.hash = link({ index: idxSel.value, key: keyIn.value, op: opSel.value, after: '', o: '' })
            },
          },
          'index',
          idxSel,
          opSel,
          keyIn,
          h('button', { type: 'submit' }, 'Search'),
          searching ? h('a', { href: link({ index: '', key: '', op: '', after: '' }) }, 'clear') : null,
        ),
        h('table', { class: 'list', id: 'objects' }, head, tbody),
        pager,
      ),
      detail,
    ),
  )

  const renderHead = () => {
    const m = hasMeta()
    head.replaceChildren(
      h(
        'tr',
        {},
        ...(m ? ['namespace', 'name', 'kind'] : ['key']).map((c) => h('th', {}, c)),
        h('th', {}, 'status'),
        h('th', {}, 'revision'),
        h('th', {}, 'age'),
      ),
    )
    return m
  }
  const renderCount = () => {
    countEl.textContent = searching ? `(${rows.size}${next ? '+' : ''} matching of ${count})` : `(${count} objects, revision ${revision})`
  }
  const renderRows = () => {
    const m = renderHead()
    const trs = []
    for (const e of rows.values()) {
      const md = meta(e.object)
      trs.push(
        h(
          'tr',
          {
            class: `row${e.key === selected ? ' selected' : ''}`,
            'data-key': e.key,
            onclick: () => {
              location.hash = link({ o: e.key })
            },
          },
          ...(m
            ? [
                h('td', {}, md ? (md.namespace ?? '') : ''),
                h('td', { class: 'mono' }, md ? md.name : e.key),
                h('td', {}, md ? (md.kind ?? '') : ''),
              ]
            : [h('td', { class: 'mono' }, e.key)]),
          h('td', { class: 'status' }, statusBadges(e.reconcile, true)),
          h('td', {}, e.revision),
          h('td', { class: 'age' }, e.time ? ago(e.time) : '>' + ago(undefined)),
        ),
      )
    }
    if (trs.length === 0) trs.push(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, searching ? 'No object matches.' : 'No objects.')))
    tbody.replaceChildren(...trs)
    renderCount()
    pager.replaceChildren(
      ...[
        q.after ? h('a', { href: link({ after: '' }), id: 'first' }, '« first page') : null,
        next ? h('a', { href: link({ after: next }), id: 'next' }, 'next page ›') : null,
        h('span', { class: 'muted' }, `${rows.size} shown, ${PAGE} a page`),
      ].filter(Boolean),
    )
  }

  const renderDetail = async () => {
    if (!selected) {
      detail.replaceChildren(h('div', { class: 'card muted' }, 'Click an object to see it.'))
      return
    }
    let e = rows.get(selected)
    if (!e) {
      const p = new URLSearchParams({ index: primary, key: selected, op: 'get' })
      try {
        e = await json(`/statedb/tables/${enc(name)}?${p}`)
      } catch (err) {
        if (err instanceof Unauthorized) throw err
        e = undefined
      }
    }
    if (!e) {
      detail.replaceChildren(h('div', { class: 'card', id: 'object' }, h('h2', {}, selected), h('p', { class: 'muted' }, 'deleted')))
      return
    }
    const recs = Object.entries(e.reconcile || {})
    detail.replaceChildren(
      h(
        'div',
        { class: 'card', id: 'object' },
        h('h2', { class: 'mono' }, e.key),
        h(
          'dl',
          { class: 'kv' },
          h('dt', {}, 'revision'),
          h('dd', {}, e.revision),
          h('dt', {}, 'written'),
          h('dd', {}, e.time ? `${ago(e.time)} ago` : 'before the times kept'),
        ),
        recs.length
          ? h(
              'table',
              { class: 'list', id: 'reconcile' },
              h('thead', {}, h('tr', {}, ...['reconciler', 'status', 'since', 'attempts', 'next retry'].map((c) => h('th', {}, c)))),
              h(
                'tbody',
                {},
                recs.map(([rn, st]) => [
                  h(
                    'tr',
                    {},
                    h('td', {}, rn),
                    h('td', {}, h('span', { class: `badge ${st.kind}` }, st.kind)),
                    h('td', {}, ago(st.updatedAt)),
                    h('td', {}, st.attempts ?? ''),
                    h('td', { class: 'retry', 'data-retry-at': st.retryAt || '' }, st.retryAt ? inSecs(st.retryAt) : ''),
                  ),
                  st.error ? h('tr', {}, h('td', { colspan: 5, class: 'errmsg' }, `last error: ${st.error}`)) : null,
                ]),
              ),
            )
          : null,
        h('h2', {}, 'Object'),
        h('pre', { class: 'json', id: 'json' }, jsonNode(e.object)),
      ),
    )
  }
  renderRows()
  await renderDetail()
  current = {
    base,
    select: (o) => {
      selected = o
      renderRows()
      renderDetail().catch(showError)
    },
  }
  // ages and retry countdowns move with the clock (display only: nothing is fetched)
  tick = setInterval(() => {
    for (const td of detail.querySelectorAll('td.retry[data-retry-at]')) {
      const t = Number(td.dataset.retryAt)
      if (t) td.textContent = inSecs(t)
    }
  }, 1000)

  // ---- live: the changes stream, applied in batches ----
  let queue = []
  let flushTimer
  let pageStale = false
  const inPage = (key) => {
    if (searching) return false // a new match is found by reading the page again
    if (q.after && !(key > q.after)) return false
    if (next !== null && !(key <= next)) return false
    return true
  }
  let countTimer
  /** The count after changes (a change does not say whether it inserted): re-read, at most every 2 s. */
  const recount = () => {
    if (countTimer !== undefined || searching) return
    countTimer = setTimeout(async () => {
      try {
        const r = await api(`/statedb/tables/${enc(name)}?limit=1`, { signal: ctl.signal })
        await r.body.cancel()
        count = Number(r.headers.get('x-statedb-count') ?? count)
        revision = Number(r.headers.get('x-statedb-revision') ?? revision)
        renderCount()
      } catch {}
      countTimer = undefined
    }, 2000)
  }
  const flush = () => {
    flushTimer = undefined
    const t0 = performance.now()
    // the last change of each key wins
    const last = new Map()
    let sync = false
    for (const c of queue) {
      if (c.sync) sync = true
      else last.set(c.key, c)
    }
    const n = queue.length
    queue = []
    let changedRows = false
    let selectedChanged = false
    let inserted = false
    for (const c of last.values()) {
      changes++
      if (c.revision > revision) revision = c.revision
      if (c.deleted) {
        if (rows.delete(c.key)) changedRows = true
      } else if (rows.has(c.key)) {
        rows.set(c.key, c)
        changedRows = true
      } else if (inPage(c.key)) {
        rows.set(c.key, c)
        changedRows = true
        inserted = true
      } else if (searching) pageStale = true
      if (c.key === selected) selectedChanged = true
    }
    if (inserted) {
      rows = new Map([...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      while (rows.size > PAGE) {
        const k = [...rows.keys()].pop()
        rows.delete(k)
        next = [...rows.keys()].pop()
      }
    }
    if (sync) pageStale = true
    recent.push([Date.now(), n])
    if (changedRows) renderRows()
    else renderCount()
    if (selectedChanged) renderDetail().catch(showError)
    recount()
    const ms = performance.now() - t0
    stats.flushes++
    stats.applied += n
    stats.lastFlushMs = ms
    stats.maxFlushMs = Math.max(stats.maxFlushMs, ms)
    const cutoff = Date.now() - 5000
    recent = recent.filter(([t]) => t >= cutoff)
    setLive(`live · ${Math.round(recent.reduce((a, [, k]) => a + k, 0) / 5)} changes/s · ${changes} seen`, true)
    if (pageStale) {
      pageStale = false
      refetch()
    }
  }
  let refetching = false
  let refetchAgain = false
  const refetch = async () => {
    if (refetching) {
      refetchAgain = true
      return
    }
    refetching = true
    try {
      do {
        refetchAgain = false
        await loadPage()
        renderRows()
      } while (refetchAgain && !ctl.signal.aborted)
    } catch (err) {
      if (!ctl.signal.aborted) showError(err)
    } finally {
      refetching = false
    }
  }
  const follow = async () => {
    let since = revision
    while (!ctl.signal.aborted) {
      try {
        const r = await api(`/statedb/tables/${enc(name)}/changes?since=${since}`, { signal: ctl.signal })
        setLive('live', true)
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
            const c = JSON.parse(line)
            if (c.revision > since) since = c.revision
            queue.push(c)
          }
          if (queue.length && flushTimer === undefined) flushTimer = setTimeout(flush, 100)
        }
      } catch (err) {
        if (ctl.signal.aborted) return
        if (err instanceof Unauthorized) return showError(err)
      }
      setLive('reconnecting…', false)
      await new Promise((r) => setTimeout(r, 1000))
    }
  }
  follow()
  const prevTeardown = teardown
  teardown = () => {
    prevTeardown()
    clearTimeout(flushTimer)
  }
}

// ---- topology ----
async function topologyView(params) {
  const data = await json('/topology?format=layout')
  const selected = params.get('n')
  const side = h('div', { id: 'node' })
  const graphs = data.graphs.map(({ component, graph, layout }) => {
    const byId = new Map(graph.nodes.map((n) => [n.id, n]))
    const svg = s(
      'svg',
      {
        viewBox: `0 0 ${Math.ceil(layout.width)} ${Math.ceil(layout.height)}`,
        width: Math.ceil(layout.width),
        height: Math.ceil(layout.height),
        role: 'img',
        'aria-label': `topology of ${component}`,
      },
      s(
        'defs',
        {},
        s(
          'marker',
          { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto' },
          s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#667' }),
        ),
      ),
    )
    for (const e of layout.edges) {
      const d = e.points.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ')
      svg.append(
        s('path', { class: `edge${e.policy ? ' policy' : ''}`, d, 'marker-end': 'url(#arrow)', 'data-from': e.from, 'data-to': e.to }),
      )
    }
    for (const n of layout.nodes) {
      const g = s(
        'g',
        {
          class: `node${n.policy ? ' policy' : ''}${n.status ? ` st-${n.status.replace(/[^A-Za-z]/g, '')}` : ''}${n.id === selected ? ' selected' : ''}`,
          'data-id': n.id,
          tabindex: 0,
        },
        s('rect', {
          x: (n.x - n.width / 2).toFixed(1),
          y: (n.y - n.height / 2).toFixed(1),
          width: n.width,
          height: n.height,
          rx: n.policy ? 2 : 8,
        }),
        nodeText(n, n.label, n.y - 3, undefined, 7),
        nodeText(n, n.sublabel + (n.status ? ` · ${n.status}` : ''), n.y + 12, 'sub', 6),
      )
      g.addEventListener('click', () => {
        location.hash = `#/topology?n=${enc(n.id)}`
      })
      svg.append(g)
    }
    if (selected && byId.has(selected)) showNode(side, byId.get(selected), graph)
    return h('div', { class: 'card topo', 'data-component': component }, h('h2', {}, component), svg)
  })
  if (!selected) side.replaceChildren(h('div', { class: 'card muted' }, 'Click a node to see its effective policy.'))
  const legend = h(
    'p',
    { class: 'legend' },
    ['Enforced', 'PartiallyEnforced', 'Accepted', 'Overridden', 'Invalid', 'TargetNotFound'].map((st) =>
      h('span', {}, h('i', { class: `st-${st}` }), st),
    ),
  )
  view.replaceChildren(
    h(
      'div',
      {},
      h('h1', {}, 'Topology'),
      legend,
      graphs.length ? graphs : h('p', { class: 'muted' }, 'No component here has a topology.'),
      side,
    ),
  )
}

/**
 * A line of a node's text. The server sizes the box for the name as shown (7 px a character at
 * 12 px), escapes included; should escapes make a line longer than its box (a status holding
 * controls, which the box does not count), it is squeezed into it.
 */
function nodeText(n, text, y, cls, charWidth) {
  const t = s('text', { class: cls, x: n.x.toFixed(1), y: y.toFixed(1), 'text-anchor': 'middle' }, text)
  const shown = t.textContent.length
  const room = n.width - 12
  if (shown > text.length && shown * charWidth > room) {
    t.setAttribute('textLength', String(room))
    t.setAttribute('lengthAdjust', 'spacingAndGlyphs')
  }
  return t
}

function showNode(side, n, graph) {
  const policies = graph.edges.filter((e) => e.policy && e.to === n.id).map((e) => e.from)
  side.replaceChildren(
    h(
      'div',
      { class: 'card', id: 'node-detail' },
      h('h2', {}, `${n.kind} ${n.namespace ? `${n.namespace}/` : ''}${n.name}`),
      h(
        'dl',
        { class: 'kv' },
        h('dt', {}, 'id'),
        h('dd', { class: 'mono' }, n.id),
        n.status ? [h('dt', {}, 'status'), h('dd', {}, n.status)] : null,
        policies.length ? [h('dt', {}, 'policies'), h('dd', { class: 'mono' }, policies.join(', '))] : null,
      ),
      h('h2', {}, n.policy ? 'Policy' : 'Effective policy'),
      n.effective === undefined ? h('p', { class: 'muted' }, 'none') : h('pre', { class: 'json', id: 'effective' }, jsonNode(n.effective)),
    ),
  )
}
