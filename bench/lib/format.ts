// Printing results as a table.

import type { Result } from './types.ts'

/** A number for people: integers with thousands separators, small values with 3 significant digits. */
export function fmt(n: number | undefined | null): string {
  if (n === undefined || n === null || Number.isNaN(n)) return '-'
  if (!Number.isFinite(n)) return String(n)
  const a = Math.abs(n)
  if (a >= 1000) return Math.round(n).toLocaleString('en-US')
  if (a >= 100) return n.toFixed(0)
  if (a >= 10) return n.toFixed(1)
  if (a >= 1) return n.toFixed(2)
  if (a === 0) return '0'
  return n.toPrecision(3)
}

export function table(results: readonly Result[]): string {
  const head = ['name', 'value', 'unit', 'baseline', 'baseline value', 'ratio', 'note']
  const rows = results.map((r) => [
    r.name,
    fmt(r.value),
    r.unit,
    r.baseline ?? '-',
    fmt(r.baselineValue),
    r.ratio === undefined ? '-' : r.ratio.toFixed(2),
    r.note ?? '',
  ])
  const hasNote = rows.some((r) => r[6] !== '')
  const cols = hasNote ? head.length : head.length - 1
  const widths = head.slice(0, cols).map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const numeric = new Set([1, 4, 5])
  const line = (cells: string[]) =>
    cells
      .slice(0, cols)
      .map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}
