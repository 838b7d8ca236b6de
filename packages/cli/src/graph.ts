// Graphs that inspectable parts show (the topology of gateways, routes and policies), as JSON, as
// Graphviz DOT and laid out (dagre: a layered layout, left to right) as positions or as SVG.
// Invariants: every text in DOT and SVG output is escaped, its control characters (C0, DEL, C1,
// bidi), lone surrogates, U+FFFE and U+FFFF shown as escapes (`\x1b`, `\u202e`: terminal.ts), so the
// SVG is well-formed XML 1.0 and the DOT one string per field whatever the names hold; an edge to a
// node the graph lacks is dropped from the layout (not an error: a policy may target what is gone).
import dagre from '@dagrejs/dagre'
import type { InspectGraph, NamedGraph } from '@statewright/topology'
import { visible } from './terminal.ts'

export interface LaidOutNode {
  id: string
  label: string
  sublabel: string
  x: number
  y: number
  width: number
  height: number
  policy: boolean
  status?: string
}
export interface LaidOutEdge {
  from: string
  to: string
  policy: boolean
  points: Array<{ x: number; y: number }>
}
export interface Layout {
  width: number
  height: number
  nodes: LaidOutNode[]
  edges: LaidOutEdge[]
}

const CHAR_W = 7
const NODE_H = 40

/** Positions for every node and edge (dagre's layered layout, left to right). */
export function layoutGraph(g: InspectGraph): Layout {
  const d = new dagre.graphlib.Graph({ multigraph: true })
  d.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 60, marginx: 10, marginy: 10 })
  d.setDefaultEdgeLabel(() => ({}))
  // dagre's names for the nodes ("n0"…): it keeps nodes by name in plain objects, where an id such
  // as "__proto__" or "constructor" would break the layout
  const names = new Map<string, string>()
  for (const n of g.nodes) {
    if (names.has(n.id)) continue
    names.set(n.id, `n${names.size}`)
    const label = n.name
    const sublabel = `${n.kind}${n.namespace ? ` · ${n.namespace}` : ''}`
    d.setNode(names.get(n.id)!, {
      id: n.id,
      width: Math.max(90, Math.max(visible(label).length, visible(sublabel).length) * CHAR_W + 20), // as toSvg shows them
      height: NODE_H,
      label,
      sublabel,
      policy: !!n.policy,
      status: n.status,
    })
  }
  const edges = g.edges.filter((e) => names.has(e.from) && names.has(e.to))
  edges.forEach((e, i) => d.setEdge(names.get(e.from)!, names.get(e.to)!, { policy: !!e.policy }, `e${i}`))
  dagre.layout(d)
  const nodes: LaidOutNode[] = d.nodes().map((name: string) => {
    const n = d.node(name) as unknown as {
      id: string
      x: number
      y: number
      width: number
      height: number
      label: string
      sublabel: string
      policy: boolean
      status?: string
    }
    return {
      id: n.id,
      label: n.label,
      sublabel: n.sublabel,
      x: n.x,
      y: n.y,
      width: n.width,
      height: n.height,
      policy: n.policy,
      ...(n.status ? { status: n.status } : {}),
    }
  })
  const laidEdges: LaidOutEdge[] = edges.map((e, i) => ({
    from: e.from,
    to: e.to,
    policy: !!e.policy,
    points: (d.edge(names.get(e.from)!, names.get(e.to)!, `e${i}`) as unknown as { points: Array<{ x: number; y: number }> }).points,
  }))
  const gr = d.graph() as { width?: number; height?: number }
  return { width: gr.width ?? 0, height: gr.height ?? 0, nodes, edges: laidEdges }
}

/** Graphviz DOT of the graphs (one cluster per component). */
export function toDot(graphs: readonly NamedGraph[]): string {
  const text = (s: string) => visible(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"')
  const q = (s: string) => `"${text(s)}"`
  // an id's own backslashes doubled first: ids that differ stay different once controls are escapes
  const id = (s: string) => q(s.replace(/\\/g, '\\\\'))
  const lines = [
    'digraph topology {',
    '  rankdir=LR;',
    '  node [shape=box, style="rounded,filled", fontname="sans-serif", fillcolor="#eef2f7"];',
  ]
  graphs.forEach(({ component, graph }, i) => {
    lines.push(`  subgraph cluster_${i} {`, `    label=${q(component)};`)
    for (const n of graph.nodes) {
      // one label line per field: a newline in a field is an escape, not a line of the label
      const label = [n.kind, `${n.namespace ? `${n.namespace}/` : ''}${n.name}`, ...(n.status ? [n.status] : [])]
      const attrs = [`label="${label.map(text).join('\\n')}"`]
      if (n.policy) attrs.push('shape=note')
      const fill = statusColor(n.status)
      if (fill) attrs.push(`fillcolor=${q(fill)}`)
      lines.push(`    ${id(n.id)} [${attrs.join(', ')}];`)
    }
    for (const e of graph.edges) lines.push(`    ${id(e.from)} -> ${id(e.to)}${e.policy ? ' [style=dashed]' : ''};`)
    lines.push('  }')
  })
  lines.push('}')
  return lines.join('\n') + '\n'
}

/** Fill colours by policy status, for DOT and the SVG (the web view shows that SVG: these are its only colours). */
export const STATUS_COLORS: Readonly<Record<string, string>> = {
  Enforced: '#b7e4c7',
  PartiallyEnforced: '#d8f3dc',
  Accepted: '#bde0fe',
  Overridden: '#ffe5a0',
  Invalid: '#ffb3b3',
  TargetNotFound: '#ffc9a8',
  Unknown: '#e0e0e0',
}

/** A status's colour (own keys only: a status "constructor" has none). */
const statusColor = (status: string | undefined) =>
  status !== undefined && Object.hasOwn(STATUS_COLORS, status) ? STATUS_COLORS[status] : undefined

/** Text for XML: controls as visible escapes (XML 1.0 forbids most C0 even as references), then entities. */
const esc = (s: string) =>
  visible(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')

/** A status as a class name (`st-Enforced`): its letters only, so any status makes a safe class. */
const statusClass = (status: string) => `st-${status.replace(/[^A-Za-z]/g, '')}`

/**
 * A standalone SVG of the graphs, one under the other (every text escaped). The web view shows it as
 * it is: each graph is a `<g data-graph="i">` (i: its index in the list), each node a `<g data-id
 * data-n class="node[ policy][ st-<Status>]">` (n: the node's index in its graph's nodes, which the
 * id, shown escaped, cannot always tell apart) with a `<title>`, each edge a `class="edge[ policy]"`;
 * colours are attributes (STATUS_COLORS), so no stylesheet is needed.
 */
export function toSvg(graphs: readonly NamedGraph[]): string {
  const parts: string[] = []
  let y = 0
  let width = 0
  graphs.forEach(({ component, graph }, gi) => {
    const l = layoutGraph(graph)
    const index = new Map<string, number>()
    graph.nodes.forEach((n, i) => {
      if (!index.has(n.id)) index.set(n.id, i)
    })
    parts.push(`<text x="10" y="${y + 18}" font-weight="bold">${esc(component)}</text>`)
    parts.push(`<g data-graph="${gi}" transform="translate(0 ${y + 26})">`)
    for (const e of l.edges) {
      parts.push(
        `<polyline class="edge${e.policy ? ' policy' : ''}" fill="none" stroke="${e.policy ? '#9b59b6' : '#555'}"${e.policy ? ' stroke-dasharray="5 3"' : ''} marker-end="url(#arrow)" points="${e.points.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ')}"/>`,
      )
    }
    for (const n of l.nodes) {
      const fill = statusColor(n.status) ?? (n.policy ? '#f3e8ff' : '#eef2f7')
      const cls = `node${n.policy ? ' policy' : ''}${n.status ? ` ${statusClass(n.status)}` : ''}`
      const node = graph.nodes[index.get(n.id)!]!
      const title = `${node.kind} ${node.namespace ? `${node.namespace}/` : ''}${node.name}${n.status ? ` (${n.status})` : ''}`
      parts.push(
        `<g data-id="${esc(n.id)}" data-n="${index.get(n.id)}" class="${cls}"><title>${esc(title)}</title>` +
          `<rect x="${(n.x - n.width / 2).toFixed(1)}" y="${(n.y - n.height / 2).toFixed(1)}" width="${n.width}" height="${n.height}" rx="${n.policy ? 2 : 8}" fill="${fill}" stroke="#333"${n.policy ? ' stroke-dasharray="4 2"' : ''}/>` +
          `<text x="${n.x.toFixed(1)}" y="${(n.y - 3).toFixed(1)}" text-anchor="middle">${esc(n.label)}</text>` +
          `<text x="${n.x.toFixed(1)}" y="${(n.y + 12).toFixed(1)}" text-anchor="middle" font-size="10" fill="#555">${esc(n.sublabel)}${n.status ? ` · ${esc(n.status)}` : ''}</text></g>`,
      )
    }
    parts.push('</g>')
    y += l.height + 40
    width = Math.max(width, l.width)
  })
  const w = Math.ceil(width) + 20
  const h = Math.ceil(y)
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="sans-serif" font-size="12">` +
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>' +
    parts.join('') +
    '</svg>\n'
  )
}
