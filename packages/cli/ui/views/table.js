// A table's view: one page of PAGE objects (a listing, or a query by index: list, prefix,
// lowerBound), paged with after=<the page's last key>, kept live by the table's change stream, and
// the selected object's card beside it. Its state is one small object (TableState); the live changes
// go through `applyBatch`.
// Invariants: objects are never polled: the page is read once, then follows
// /statedb/tables/<t>/changes?since=<the page's revision>; changes are applied in batches at most
// every 100 ms (the last change of a key wins), to the page's key range only (a key before `after`
// or past `next` is another page's), and the page stays at most PAGE rows; the page is read again on
// the stream's "sync" and when a query may have gained a match; the count is re-read at most every
// 2 s; selecting another object keeps the page and the stream. window.__statewright holds figures
// the browser test reads (batches, changes applied, the longest batch).
import { followChanges, json, readCount, readPage } from '../api.js'
import { enc, h } from '../dom.js'
import { ago } from '../time.js'
import { objectCard, readEntry, statusBadges, tickRetries } from './object.js'

/** @typedef {import('../types.js').Entry} Entry */
/** @typedef {import('../types.js').Change} Change */
/** @typedef {import('../types.js').TableInfo} TableInfo */
/** @typedef {import('../types.js').ViewContext} ViewContext */
/** @typedef {import('../types.js').Select} Select */

export const PAGE = 100
const BATCH_MS = 100
const RECOUNT_MS = 2000

/**
 * What the address asks of the table (fixed for the view's life: another query is another view).
 * @typedef {object} TableQuery
 * @property {string} name the table
 * @property {string} primary its primary index
 * @property {string[]} indexes
 * @property {{ index: string, key: string, op: string }} search the query ('' index or key: none)
 * @property {boolean} searching whether the page is a query's
 * @property {string} after the page's start ('' for the first)
 */

/**
 * What the view knows (all of its mutable state).
 * @typedef {object} TableState
 * @property {Map<string, Entry>} rows the page: key → entry, in key order
 * @property {string | null} next the page's last key when more follow (null: the last page)
 * @property {number} count the table's objects, as last read
 * @property {number} revision the newest revision the page reflects
 * @property {string | null} selected the object shown beside the page (o=)
 * @property {number} seen changes applied since the view opened
 * @property {Array<[number, number]>} recent [time, changes] of each batch of the last 5 s
 */

/**
 * The figures the browser test reads.
 * @typedef {{ flushes: number, applied: number, maxFlushMs: number, lastFlushMs: number }} Stats
 */

/**
 * Whether a key belongs to the page on screen (a query's new matches are found by reading it again).
 * @param {TableQuery} q
 * @param {TableState} state
 * @param {string} key
 */
export function inPage(q, state, key) {
  if (q.searching) return false
  if (q.after && !(key > q.after)) return false
  if (state.next !== null && !(key <= state.next)) return false
  return true
}

/**
 * Applies a batch of changes to the page: the last change of each key wins; a row is updated or
 * deleted, or inserted when its key falls in the page's range (then the page is sorted and cut back
 * to PAGE rows, `next` becoming its new last key). Touches only `state`.
 * @param {TableQuery} q
 * @param {TableState} state
 * @param {readonly Change[]} batch
 * @returns {{ rowsChanged: boolean, selectedChanged: boolean, stale: boolean }} stale: the page
 *   must be read again (the stream's sync, or a query that may have gained a match)
 */
export function applyBatch(q, state, batch) {
  /** @type {Map<string, Entry & { deleted?: boolean }>} */
  const last = new Map()
  let stale = false
  for (const c of batch) {
    if (c.sync) stale = true
    else last.set(c.key, c)
  }
  let rowsChanged = false
  let selectedChanged = false
  let inserted = false
  for (const c of last.values()) {
    state.seen++
    if (c.revision > state.revision) state.revision = c.revision
    if (c.deleted) {
      if (state.rows.delete(c.key)) rowsChanged = true
    } else if (state.rows.has(c.key)) {
      state.rows.set(c.key, c)
      rowsChanged = true
    } else if (inPage(q, state, c.key)) {
      state.rows.set(c.key, c)
      rowsChanged = inserted = true
    } else if (q.searching) stale = true
    if (c.key === state.selected) selectedChanged = true
  }
  if (inserted) {
    const keys = [...state.rows.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    const kept = keys.slice(0, PAGE)
    const rows = state.rows
    state.rows = new Map(kept.map((k) => [k, /** @type {Entry} */ (rows.get(k))]))
    if (keys.length > PAGE) state.next = kept[kept.length - 1] ?? null
  }
  return { rowsChanged, selectedChanged, stale }
}

/**
 * Kubernetes-ish fields of an object, or of the object a desired entry wraps.
 * @param {unknown} obj
 * @returns {{ kind?: string, namespace?: string, name?: string } | undefined}
 */
function meta(obj) {
  if (!obj || typeof obj !== 'object') return undefined
  /** @type {{ kind?: string, metadata?: { namespace?: string, name?: string }, object?: unknown }} */
  const o = obj
  const inner = /** @type {typeof o | undefined} */ (o.object && typeof o.object === 'object' ? o.object : undefined)
  const k = o.metadata ? o : inner && inner.metadata ? inner : undefined
  return k && k.metadata ? { kind: k.kind, namespace: k.metadata.namespace, name: k.metadata.name } : undefined
}

/**
 * The address of this table's view with some of its parameters changed.
 * @param {TableQuery} q
 * @param {TableState} state
 * @param {Partial<Record<'index' | 'key' | 'op' | 'after' | 'o', string>>} over
 */
function link(q, state, over) {
  const p = new URLSearchParams()
  const m = { ...q.search, after: q.after, o: state.selected || '', ...over }
  for (const [k, v] of Object.entries(m)) if (v && !(k === 'op' && v === 'list')) p.set(k, v)
  const qs = p.toString()
  return `#/t/${enc(q.name)}${qs ? `?${qs}` : ''}`
}

/**
 * Reads the page again (after `q.after`, of the query), replacing the rows.
 * @param {TableQuery} q
 * @param {TableState} state
 * @param {AbortSignal} signal
 */
async function loadPage(q, state, signal) {
  const page = await readPage(q.name, { limit: PAGE, after: q.after, ...(q.searching ? { query: q.search } : {}) }, signal)
  state.rows = new Map(page.entries.map((e) => [e.key, e]))
  state.next = page.next
  state.revision = page.revision
  if (page.count !== undefined) state.count = page.count
}

/**
 * The view's elements.
 * @typedef {object} TableDom
 * @property {HTMLElement} head
 * @property {HTMLElement} body
 * @property {HTMLElement} count
 * @property {HTMLElement} pager
 * @property {HTMLElement} detail
 */

/**
 * Draws the view's frame (heading, search form, the empty table, pager, detail) into root.
 * @param {HTMLElement} root
 * @param {TableQuery} q
 * @param {TableState} state
 * @returns {TableDom}
 */
function frame(root, q, state) {
  const idxSel = h(
    'select',
    { name: 'index', id: 'search-index' },
    q.indexes.map((i) => h('option', { value: i, selected: i === (q.search.index || q.primary) }, i)),
  )
  const keyIn = h('input', { name: 'key', id: 'search-key', placeholder: 'key', value: q.search.key })
  const opSel = h(
    'select',
    { name: 'op', id: 'search-op' },
    ['list', 'prefix', 'lowerBound'].map((o) => h('option', { value: o, selected: o === q.search.op }, o)),
  )
  /** @type {TableDom} */
  const dom = {
    head: h('thead', {}),
    body: h('tbody', {}),
    count: h('span', { class: 'muted', id: 'count' }),
    pager: h('div', { class: 'pager' }),
    detail: h('div', { id: 'detail' }),
  }
  root.replaceChildren(
    h(
      'div',
      { class: 'grid' },
      h(
        'div',
        { class: 'card' },
        h('h1', {}, `Table ${q.name} `, dom.count),
        h(
          'form',
          {
            class: 'search',
            id: 'search',
            onsubmit: (e) => {
              e.preventDefault()
              location.hash = link(q, state, { index: idxSel.value, key: keyIn.value, op: opSel.value, after: '', o: '' })
            },
          },
          'index',
          idxSel,
          opSel,
          keyIn,
          h('button', { type: 'submit' }, 'Search'),
          q.searching ? h('a', { href: link(q, state, { index: '', key: '', op: '', after: '' }) }, 'clear') : null,
        ),
        h('table', { class: 'list', id: 'objects' }, dom.head, dom.body),
        dom.pager,
      ),
      dom.detail,
    ),
  )
  return dom
}

/** @param {TableQuery} q @param {TableState} state @param {TableDom} dom */
function renderCount(q, state, dom) {
  dom.count.textContent = q.searching
    ? `(${state.rows.size}${state.next ? '+' : ''} matching of ${state.count})`
    : `(${state.count} objects, revision ${state.revision})`
}

/** @param {TableQuery} q @param {TableState} state @param {TableDom} dom */
function renderRows(q, state, dom) {
  const first = state.rows.values().next()
  const withMeta = !first.done && !!meta(first.value.object)
  dom.head.replaceChildren(
    h(
      'tr',
      {},
      (withMeta ? ['namespace', 'name', 'kind'] : ['key']).map((c) => h('th', {}, c)),
      h('th', {}, 'status'),
      h('th', {}, 'revision'),
      h('th', {}, 'age'),
    ),
  )
  const trs = []
  for (const e of state.rows.values()) {
    const md = meta(e.object)
    trs.push(
      h(
        'tr',
        {
          class: `row${e.key === state.selected ? ' selected' : ''}`,
          'data-key': e.key,
          onclick: () => {
            location.hash = link(q, state, { o: e.key })
          },
        },
        withMeta
          ? [h('td', {}, md?.namespace ?? ''), h('td', { class: 'mono' }, md ? md.name : e.key), h('td', {}, md?.kind ?? '')]
          : h('td', { class: 'mono' }, e.key),
        h('td', { class: 'status' }, statusBadges(e.reconcile, true)),
        h('td', {}, e.revision),
        h('td', { class: 'age' }, e.time ? ago(e.time) : '>' + ago(undefined)),
      ),
    )
  }
  if (trs.length === 0) trs.push(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, q.searching ? 'No object matches.' : 'No objects.')))
  dom.body.replaceChildren(...trs)
  renderCount(q, state, dom)
  dom.pager.replaceChildren(
    ...[
      q.after ? h('a', { href: link(q, state, { after: '' }), id: 'first' }, '« first page') : null,
      state.next ? h('a', { href: link(q, state, { after: state.next }), id: 'next' }, 'next page ›') : null,
      h('span', { class: 'muted' }, `${state.rows.size} shown, ${PAGE} a page`),
    ].filter((x) => x !== null),
  )
}

/** @param {TableQuery} q @param {TableState} state @param {TableDom} dom */
async function renderDetail(q, state, dom) {
  const key = state.selected
  if (!key) {
    dom.detail.replaceChildren(h('div', { class: 'card muted' }, 'Click an object to see it.'))
    return
  }
  const e = state.rows.get(key) ?? (await readEntry(q.name, q.primary, key))
  if (key === state.selected) dom.detail.replaceChildren(objectCard(key, e))
}

/**
 * The table view of `name`, with the page and selection the address asks for.
 * @param {ViewContext} ctx
 * @param {string} name
 * @param {URLSearchParams} params
 * @returns {Promise<Select>}
 */
export async function tableView(ctx, name, params) {
  const tables = /** @type {TableInfo[]} */ (await json('/statedb/tables', ctx.signal))
  const info = tables.find((t) => t.name === name)
  if (!info) throw new Error(`no table "${name}"`)
  const search = { index: params.get('index') || '', key: params.get('key') || '', op: params.get('op') || 'list' }
  /** @type {TableQuery} */
  const q = {
    name,
    primary: info.indexes[0] ?? '',
    indexes: info.indexes,
    search,
    searching: search.index !== '' && search.key !== '',
    after: params.get('after') || '',
  }
  /** @type {TableState} */
  const state = { rows: new Map(), next: null, count: info.objects, revision: 0, selected: params.get('o'), seen: 0, recent: [] }
  await loadPage(q, state, ctx.signal)
  const dom = frame(ctx.root, q, state)
  renderRows(q, state, dom)
  await renderDetail(q, state, dom)
  // ages and retry countdowns move with the clock (display only: nothing is fetched)
  const tick = setInterval(() => tickRetries(dom.detail), 1000)
  ctx.onLeave(() => clearInterval(tick))
  live(ctx, q, state, dom)
  return (key) => {
    state.selected = key
    renderRows(q, state, dom)
    renderDetail(q, state, dom).catch(ctx.fail)
  }
}

/**
 * Follows the table's changes: queued as they come, applied in a batch at most every BATCH_MS; the
 * page read again when a batch says so (one read at a time, one more if asked meanwhile); the count
 * re-read at most every RECOUNT_MS.
 * @param {ViewContext} ctx
 * @param {TableQuery} q
 * @param {TableState} state
 * @param {TableDom} dom
 */
function live(ctx, q, state, dom) {
  /** @type {Stats} */
  const stats = { flushes: 0, applied: 0, maxFlushMs: 0, lastFlushMs: 0 }
  const win = /** @type {{ __statewright?: Stats }} */ (/** @type {unknown} */ (window))
  win.__statewright = stats
  /** @type {Change[]} */
  let queue = []
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let flushTimer
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let countTimer
  const reload = { running: false, again: false }
  ctx.onLeave(() => {
    clearTimeout(flushTimer)
    clearTimeout(countTimer)
  })

  /** The count after changes (a change does not say whether it inserted): re-read, at most every RECOUNT_MS. */
  const recount = () => {
    if (countTimer !== undefined || q.searching) return
    countTimer = setTimeout(async () => {
      try {
        const c = await readCount(q.name, ctx.signal)
        state.count = c.count ?? state.count
        state.revision = c.revision ?? state.revision
        renderCount(q, state, dom)
      } catch {}
      countTimer = undefined
    }, RECOUNT_MS)
  }
  const refetch = async () => {
    if (reload.running) {
      reload.again = true
      return
    }
    reload.running = true
    try {
      do {
        reload.again = false
        await loadPage(q, state, ctx.signal)
        renderRows(q, state, dom)
      } while (reload.again && !ctx.signal.aborted)
    } catch (err) {
      ctx.fail(err)
    } finally {
      reload.running = false
    }
  }
  const flush = () => {
    flushTimer = undefined
    const t0 = performance.now()
    const batch = queue
    queue = []
    const r = applyBatch(q, state, batch)
    const now = Date.now()
    state.recent.push([now, batch.length])
    state.recent = state.recent.filter(([t]) => t >= now - 5000)
    if (r.rowsChanged) renderRows(q, state, dom)
    else renderCount(q, state, dom)
    if (r.selectedChanged) renderDetail(q, state, dom).catch(ctx.fail)
    recount()
    const ms = performance.now() - t0
    stats.flushes++
    stats.applied += batch.length
    stats.lastFlushMs = ms
    stats.maxFlushMs = Math.max(stats.maxFlushMs, ms)
    ctx.setLive(`live · ${Math.round(state.recent.reduce((a, [, k]) => a + k, 0) / 5)} changes/s · ${state.seen} seen`, true)
    if (r.stale) refetch()
  }
  followChanges(q.name, state.revision, {
    signal: ctx.signal,
    onChange: (c) => queue.push(c),
    onBatchEnd: () => {
      if (queue.length && flushTimer === undefined) flushTimer = setTimeout(flush, BATCH_MS)
    },
    onState: (s) => (s === 'open' ? ctx.setLive('live', true) : ctx.setLive('reconnecting…', false)),
    onError: ctx.fail,
  })
}
