// The home view: the tables (objects, revision, initialization, graveyard, indexes), a card per
// reconciler (health, objects by status, the failing objects with error, attempts and next retry),
// and the health panel. Invariants: these summaries are re-read every 5 s while the view is shown
// (objects never are: a table's view follows its change stream); a /reconcilers or /statusz that
// fails leaves its part out, but a 401 from either shows the token form.
import { json, Unauthorized } from '../api.js'
import { enc, h } from '../dom.js'
import { inSecs } from '../time.js'
import { healthPanel } from './health.js'

/** @typedef {import('../types.js').TableInfo} TableInfo */
/** @typedef {import('../types.js').ReconcilerInfo} ReconcilerInfo */
/** @typedef {import('../types.js').Statusz} Statusz */
/** @typedef {import('../types.js').ViewContext} ViewContext */

const REFRESH_MS = 5000

/**
 * @template T
 * @param {Promise<T>} p
 * @param {T} fallback what stands in when p fails, unless with Unauthorized
 * @returns {Promise<T>}
 */
const orElse = (p, fallback) =>
  p.catch((e) => {
    if (e instanceof Unauthorized) throw e
    return fallback
  })

/** @param {ViewContext} ctx */
export async function tablesView(ctx) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  ctx.onLeave(() => clearTimeout(timer))
  const render = async () => {
    const [tables, reconcilers, status] = await Promise.all([
      /** @type {Promise<TableInfo[]>} */ (json('/statedb/tables', ctx.signal)),
      orElse(/** @type {Promise<ReconcilerInfo[]>} */ (json('/reconcilers', ctx.signal)), []),
      orElse(/** @type {Promise<Statusz | undefined>} */ (json('/statusz', ctx.signal)), undefined),
    ])
    if (ctx.signal.aborted) return
    ctx.root.replaceChildren(
      h('div', { class: 'grid' }, h('div', {}, tablesCard(tables), reconcilers.map(reconcilerCard)), healthPanel(status)),
    )
    timer = setTimeout(() => render().catch(ctx.fail), REFRESH_MS)
  }
  await render()
}

/** @param {TableInfo[]} tables */
function tablesCard(tables) {
  const rows = tables.map((t) =>
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
  return h(
    'div',
    { class: 'card' },
    h('h1', {}, 'Tables'),
    h(
      'table',
      { class: 'list', id: 'tables' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['name', 'objects', 'revision', 'initialized', 'graveyard', 'indexes'].map((c) => h('th', {}, c)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  )
}

/** @param {ReconcilerInfo} r */
function reconcilerCard(r) {
  return h(
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
      ['done', 'pending', 'refreshing', 'error'].map((k) => h('span', { class: `badge ${k}` }, `${k} ${r.counts[k] ?? 0}`)),
    ),
    r.errors.length
      ? h(
          'table',
          { class: 'list' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['object', 'error', 'attempts', 'next retry'].map((c) => h('th', {}, c)),
            ),
          ),
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
  )
}
