// An object of a table: its key, revision and when it was written, every reconciler's status of it
// (since when, attempts, next retry, last error) and the object as JSON; and the status badges a
// table's rows show. Invariants: the object is shown as the server sent it (redacted there), as
// JSON text with its hidden characters as JSON escapes; an object not on the page is read with
// `op=get` (absent: "deleted"); the retry countdowns move with the clock, nothing is re-read for them.
import { json, Unauthorized } from '../api.js'
import { enc, h, jsonNode } from '../dom.js'
import { ago, inSecs } from '../time.js'

/** @typedef {import('../types.js').Entry} Entry */
/** @typedef {import('../types.js').ReconcileStatus} ReconcileStatus */

/**
 * A badge per reconciler (its status of the object), with the error message when failing and `withMessage`.
 * @param {Record<string, ReconcileStatus> | undefined} reconcile
 * @param {boolean} withMessage
 */
export function statusBadges(reconcile, withMessage) {
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
 * The entry of a key, read from the server (undefined when there is none: deleted).
 * @param {string} table
 * @param {string} index the primary index
 * @param {string} key
 * @returns {Promise<Entry | undefined>}
 */
export async function readEntry(table, index, key) {
  const p = new URLSearchParams({ index, key, op: 'get' })
  try {
    return /** @type {Entry} */ (await json(`/statedb/tables/${enc(table)}?${p}`))
  } catch (err) {
    if (err instanceof Unauthorized) throw err
    return undefined
  }
}

/**
 * The card of an object (or of its key, when it is gone).
 * @param {string} key
 * @param {Entry | undefined} e
 */
export function objectCard(key, e) {
  if (!e) return h('div', { class: 'card', id: 'object' }, h('h2', {}, key), h('p', { class: 'muted' }, 'deleted'))
  const recs = Object.entries(e.reconcile || {})
  return h(
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
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['reconciler', 'status', 'since', 'attempts', 'next retry'].map((c) => h('th', {}, c)),
            ),
          ),
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
  )
}

/**
 * Moves the retry countdowns under `root` to the clock (display only).
 * @param {HTMLElement} root
 */
export function tickRetries(root) {
  for (const td of root.querySelectorAll('td.retry[data-retry-at]')) {
    const t = Number(td.getAttribute('data-retry-at'))
    if (t) td.textContent = inSecs(t)
  }
}
