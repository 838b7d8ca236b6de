// How the inspection commands (inspect.ts) show what they read: colours, aligned columns, the rows of
// a table's objects, ages and retries, JSON and YAML, and a topology graph as a tree.
// Invariants: colour only when `paint(true)` (the caller decides: a terminal, no NO_COLOR or
// --no-color); no text from the server is shown raw: a row's cells go through forTerminal, JSON and
// YAML escape it (terminal.ts).
import { forTerminal, jsonText, yamlText } from './terminal.ts'

/** One object of a table as the inspection endpoints send it. */
export interface Entry {
  key: string
  revision: number
  time?: number
  deleted?: boolean
  object: any
  reconcile?: Record<string, { kind: string; error?: string; attempts?: number; retryAt?: number; updatedAt?: number }>
}

export interface Paint {
  bold(s: string): string
  red(s: string): string
  green(s: string): string
  yellow(s: string): string
  dim(s: string): string
}
export function paint(on: boolean): Paint {
  const p = (code: string) => (s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s)
  return { bold: p('1'), red: p('31'), green: p('32'), yellow: p('33'), dim: p('2') }
}
/** The width a cell takes on the terminal (without its colour codes). */
export const width = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '').length
export function columns(c: Paint, head: string[], rows: string[][], indent = ''): string {
  const widths = head.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ''))))
  const line = (cells: string[]) =>
    indent +
    cells
      .map((x, i) => (i === cells.length - 1 ? x : x + ' '.repeat(widths[i]! - width(x) + 3)))
      .join('')
      .trimEnd()
  return [c.bold(line(head)), ...rows.map(line)].join('\n') + '\n'
}

export interface Shape {
  k8s: boolean
  widths: number[]
}
export function shapeOf(entries: Entry[]): Shape {
  const k8s = entries.length > 0 && entries.every((e) => metaOf(e.object) !== undefined)
  return { k8s, widths: [] }
}
export function header(s: Shape, event: boolean): string[] {
  return [...(s.k8s ? ['NAMESPACE', 'NAME', 'KIND'] : ['KEY']), 'STATUS', 'REVISION', 'AGE', ...(event ? ['EVENT'] : [])]
}
export function metaOf(o: any): { kind?: string; namespace?: string; name: string } | undefined {
  const m = o && typeof o === 'object' ? (o.metadata ? o : o.object?.metadata ? o.object : undefined) : undefined
  return m && typeof m.metadata.name === 'string' ? { kind: m.kind, namespace: m.metadata.namespace, name: m.metadata.name } : undefined
}
export function row(s: Shape, e: Entry, c: Paint, event: string | undefined): string[] {
  // only what the row shows goes through forTerminal, not the whole object (a table may be large)
  const { key, revision, m, reconcile } = forTerminal({ key: e.key, revision: e.revision, m: metaOf(e.object), reconcile: e.reconcile })
  const recs = Object.entries(reconcile ?? {})
  const status =
    recs.length === 0
      ? ''
      : recs
          .map(([n, st]) => {
            const t = recs.length > 1 ? `${n}:${st.kind}` : st.kind
            return st.kind === 'done' ? c.green(t) : st.kind === 'error' ? c.red(t) : c.yellow(t)
          })
          .join(',')
  const age = e.time ? ageOf(e.time) : e.deleted ? '' : '?'
  const evt = event === undefined ? [] : [event === 'DELETED' ? c.red(event) : event === 'ADDED' ? c.green(event) : event]
  return [...(s.k8s ? [m?.namespace ?? '', m?.name ?? key, m?.kind ?? ''] : [key]), status, String(revision), age, ...evt]
}
export function fixedRow(s: Shape, cells: string[]): string {
  return cells
    .map((x, i) => (i === cells.length - 1 ? x : x + ' '.repeat(Math.max(1, (s.widths[i] ?? 0) - width(x) + 3))))
    .join('')
    .trimEnd()
}
export function ageOf(ms: number): string {
  const d = Math.max(0, Date.now() - ms) / 1000
  if (d < 120) return `${Math.floor(d)}s`
  if (d < 7200) return `${Math.floor(d / 60)}m`
  if (d < 172800) return `${Math.floor(d / 3600)}h`
  return `${Math.floor(d / 86400)}d`
}
export function retryIn(at: number): string {
  const d = at - Date.now()
  return d <= 0 ? 'now' : d < 10_000 ? `in ${(d / 1000).toFixed(1)}s` : `in ${Math.round(d / 1000)}s`
}
export function level(c: Paint, l: string): string {
  return l === 'ok' ? c.green(l) : l === 'degraded' ? c.yellow(l) : c.red(l)
}
export function dumpAs(format: string, v: unknown): string {
  return format === 'yaml' ? yamlText(v) : jsonText(v, 2) + '\n'
}

/** The graph as an indented tree from its roots (a node under each parent; policies after their targets). */
export function tree(g: { nodes: any[]; edges: Array<{ from: string; to: string; policy?: boolean }> }, c: Paint): string {
  const byId = new Map(g.nodes.map((n) => [n.id as string, n]))
  const children = new Map<string, string[]>()
  const hasParent = new Set<string>()
  const policiesOf = new Map<string, string[]>()
  for (const e of g.edges) {
    if (e.policy) {
      policiesOf.set(e.to, [...(policiesOf.get(e.to) ?? []), e.from])
      continue
    }
    children.set(e.from, [...(children.get(e.from) ?? []), e.to])
    hasParent.add(e.to)
  }
  const label = (id: string) => {
    const n = byId.get(id)
    if (!n) return id
    const st = n.status
      ? ` [${n.status === 'Enforced' || n.status === 'Accepted' ? c.green(n.status) : n.status === 'Overridden' ? c.yellow(n.status) : c.red(n.status)}]`
      : ''
    return `${n.kind} ${n.namespace ? `${n.namespace}/` : ''}${n.name}${st}`
  }
  const lines: string[] = []
  const walk = (id: string, depth: number, path: Set<string>) => {
    lines.push(`${'  '.repeat(depth + 1)}${label(id)}`)
    for (const p of policiesOf.get(id) ?? []) lines.push(`${'  '.repeat(depth + 2)}${c.dim('← policy')} ${label(p)}`)
    if (path.has(id)) return
    for (const ch of children.get(id) ?? []) walk(ch, depth + 1, new Set([...path, id]))
  }
  for (const n of g.nodes) if (!n.policy && !hasParent.has(n.id)) walk(n.id, 0, new Set())
  const orphans = g.nodes.filter((n) => n.policy && !g.edges.some((e) => e.from === n.id))
  for (const p of orphans) lines.push(`  ${label(p.id)} ${c.dim('(targets nothing)')}`)
  return lines.join('\n') + '\n'
}
