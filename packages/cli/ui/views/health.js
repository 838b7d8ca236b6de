// The health panel of the home view: the manager's /statusz (readiness with its reasons, leadership,
// every reflector, derivation, the reconciler and components with their level and message).
// Invariant: a part's fields may be missing (the panel shows what there is); no /statusz is a note,
// not an error.
import { h } from '../dom.js'

/** @typedef {import('../types.js').Statusz} Statusz */

/**
 * @param {Statusz | undefined} st
 * @returns {HTMLElement}
 */
export function healthPanel(st) {
  if (!st) return h('div', { class: 'card', id: 'health' }, h('h1', {}, 'Health'), h('p', { class: 'muted' }, 'No /statusz here.'))
  /** @type {HTMLElement[]} */
  const rows = []
  /** @param {string} what @param {string} level @param {string | undefined} message */
  const add = (what, level, message) =>
    rows.push(h('tr', {}, h('td', {}, what), h('td', {}, h('span', { class: `badge ${level}` }, level)), h('td', {}, message || '')))
  for (const r of st.reflectors || []) add(`reflector ${r.name ?? ''}`, r.ready ? 'ok' : 'degraded', r.state ?? (r.lastError || ''))
  for (const d of st.derivations || []) add(`derivation ${d.name ?? ''}`, d.level ?? (d.ready ? 'ok' : 'degraded'), d.message)
  if (st.reconciler) add(`reconciler ${st.reconciler.name}`, st.reconciler.level, st.reconciler.message)
  for (const c of st.components || []) add(c.name, c.level, c.message)
  const reasons = st.reasons || []
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
    reasons.length
      ? h(
          'ul',
          {},
          reasons.map((r) => h('li', { class: 'errmsg' }, r)),
        )
      : null,
    h('table', { class: 'list' }, h('tbody', {}, rows)),
  )
}
