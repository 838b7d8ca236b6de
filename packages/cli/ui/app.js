// The statewright web view: tables and their objects (paged on the server, live over the change
// stream), an object's detail with its reconcile status, health, and the topology. Plain ES modules,
// no build: this file routes the address (#/, #/t/<table>?…, #/topology?…) to a view of views/ and
// owns the header's live indicator; api.js talks to the server, dom.js makes elements.
// Invariants: one view at a time: leaving it aborts its requests and streams and clears its timers
// (ViewContext.onLeave), and what a left view still reports is dropped; a change of the selection
// alone (o= of a table, n= of the topology) goes to the view on screen, which keeps its page and its
// stream; nothing from the address throws: a malformed %-escape is a message on the page; a 401 or a
// token no header can carry shows the token form.
import { tokenNote, Unauthorized } from './api.js'
import { dec, h } from './dom.js'
import { loginView } from './views/login.js'
import { tableView } from './views/table.js'
import { tablesView } from './views/tables.js'
import { topologyView } from './views/topology.js'

/** @typedef {import('./types.js').ViewContext} ViewContext */
/** @typedef {import('./types.js').Select} Select */

/** @param {string} id */
const byId = (id) => {
  const el = document.getElementById(id)
  if (!el) throw new Error(`index.html lacks #${id}`)
  return el
}
const view = byId('view')
const liveEl = byId('live')

/**
 * The view on screen: how to leave it, its address but for the selection, and (once drawn) how it selects.
 * @typedef {{ leave: () => void, base: string, select?: Select }} Shown
 */
/** @type {Shown} */
let current = { leave: () => {}, base: '' }

/**
 * @param {string} text
 * @param {boolean} [on]
 */
function setLive(text, on) {
  liveEl.textContent = text
  liveEl.className = `live${text ? (on ? ' on' : ' off') : ''}`
}

/** @param {unknown} err */
function showError(err) {
  if (err instanceof Unauthorized) return loginView(view, err.message === 'unauthorized' ? tokenNote() : err.message, route)
  if (err instanceof Error && err.name === 'AbortError') return
  view.replaceChildren(
    h('div', { class: 'card' }, h('p', { class: 'errmsg' }, `Error: ${err instanceof Error ? err.message : String(err)}`)),
  )
}

function route() {
  const [path = '/', query = ''] = (location.hash || '#/').slice(1).split('?')
  const params = new URLSearchParams(query)
  const selection = path.startsWith('/topology') ? 'n' : 'o'
  const rest = new URLSearchParams(params)
  rest.delete(selection)
  const base = `${path}?${rest}`
  if (current.select && current.base === base) return current.select(params.get(selection))
  current.leave()
  const ctl = new AbortController()
  /** @type {Array<() => void>} */
  const leaving = []
  /** @type {Shown} */
  const me = {
    base,
    leave: () => {
      ctl.abort()
      for (const f of leaving.splice(0)) f()
    },
  }
  current = me
  /** @type {ViewContext} */
  const ctx = {
    root: view,
    signal: ctl.signal,
    onLeave: (f) => leaving.push(f),
    setLive: (text, on) => {
      if (!ctl.signal.aborted) setLive(text, on)
    },
    fail: (err) => {
      if (!ctl.signal.aborted) showError(err)
    },
  }
  view.replaceChildren(h('p', { class: 'muted' }, 'Loading…'))
  for (const a of document.querySelectorAll('nav a'))
    a.classList.toggle('active', (a.getAttribute('data-nav') === 'topology') === path.startsWith('/topology'))
  setLive('')
  // in the promise: a malformed escape in the address is a message on the page, not an exception
  const run = (async () =>
    path.startsWith('/t/')
      ? tableView(ctx, dec(path.slice(3)), params)
      : path.startsWith('/topology')
        ? topologyView(ctx, params)
        : tablesView(ctx))()
  run.then((select) => {
    if (select && current === me) me.select = select
  }, ctx.fail)
}
window.addEventListener('hashchange', route)
route()
