// Small statistics helpers.

/** Median of the values (the mean of the middle two for an even count). NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >>> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/**
 * The p-th percentile (0..100) by the nearest-rank method: the smallest value such that at least p%
 * of the values are <= it. Pass `sorted = true` when the values are already in ascending order.
 */
export function percentile(values: readonly number[], p: number, sorted = false): number {
  if (values.length === 0) return NaN
  const s = sorted ? values : [...values].sort((a, b) => a - b)
  const rank = Math.ceil((Math.min(Math.max(p, 0), 100) / 100) * s.length)
  return s[Math.max(rank - 1, 0)]!
}

export function mean(values: readonly number[]): number {
  let sum = 0
  for (const v of values) sum += v
  return values.length === 0 ? NaN : sum / values.length
}
