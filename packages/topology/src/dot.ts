// Graphviz DOT of a topology view, drawn as policy-machinery draws it: targetables as grey filled
// boxes, other objects as ellipses, policies as dashed notes with dashed edges to their targets.
// Node ids are locators; labels are the kind, then namespace/name#section.
import type { TopologyNode } from './define.ts'

const id = (s: string) => JSON.stringify(s)
const SHAPES: Record<TopologyNode['role'], string> = {
  targetable: 'shape=box, style=filled, fillcolor="#e5e5e5"',
  object: 'shape=ellipse',
  policy: 'shape=note, style=dashed',
}

export function dotOf(
  nodes: readonly TopologyNode[],
  edges: ReadonlyArray<{ from: string; to: string; policy?: boolean }>,
  opts: { name?: string; label?: (n: TopologyNode) => string },
): string {
  const lines = [`digraph ${id(opts.name ?? 'topology')} {`, '  rankdir=TB;', '  node [fontname="sans-serif"];']
  for (const n of nodes) {
    const label = opts.label
      ? opts.label(n)
      : `${n.kind}\\n${n.namespace ? `${n.namespace}/` : ''}${n.name}${n.section ? `#${n.section}` : ''}`
    lines.push(`  ${id(n.locator)} [label=${JSON.stringify(label).replace(/\\\\n/g, '\\n')}, ${SHAPES[n.role]}];`)
  }
  for (const e of edges) lines.push(`  ${id(e.from)} -> ${id(e.to)}${e.policy ? ' [style=dashed]' : ''};`)
  lines.push('}')
  return `${lines.join('\n')}\n`
}
