// Times as the web view shows them: how long ago, and how soon (a retry). Display only.
// Invariant: pure functions of the time given and the clock; an absent time is "?".

/**
 * How long ago a time (ms since the epoch) was: `42s`, `3m5s`, `2h10m`, `4d`.
 * @param {number | undefined | null} ms
 */
export function ago(ms) {
  if (ms === undefined || ms === null) return '?'
  const d = Math.max(0, Date.now() - ms) / 1000
  if (d < 60) return `${Math.floor(d)}s`
  if (d < 3600) return `${Math.floor(d / 60)}m${Math.floor(d % 60)}s`
  if (d < 86400) return `${Math.floor(d / 3600)}h${Math.floor((d % 3600) / 60)}m`
  return `${Math.floor(d / 86400)}d`
}

/**
 * How soon a time comes: `in 4s`, or `now` once passed.
 * @param {number} ms
 */
export function inSecs(ms) {
  const d = Math.round((ms - Date.now()) / 1000)
  return d <= 0 ? 'now' : `in ${d}s`
}
