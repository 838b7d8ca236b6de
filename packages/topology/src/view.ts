// A read-only view of a topology at one snapshot: nodes, parents, children, roots, paths, policies.
// Every method reads through indexes of the graph's tables; the view never changes (its read txn).
// Cycles: a traversal that meets a node already on its path throws TopologyCycleError naming the
// cycle, unless the definition allows loops (then the closing edge is skipped).
import type { ReadTxn, Table } from '@statewright/statedb'
import { TopologyCycleError, type TopologyDefinition, type TopologyNode } from './define.ts'
import type { Attachment, GraphTables } from './rows.ts'

const byLocator = (a: TopologyNode, b: TopologyNode) => (a.locator < b.locator ? -1 : a.locator > b.locator ? 1 : 0)

export class TopologyView {
  // a view never changes, so what it computed once holds (a state-of-world run asks the same
  // questions for every path through a node)
  private readonly memo = {
    parents: new Map<string, TopologyNode[]>(),
    children: new Map<string, TopologyNode[]>(),
    policies: new Map<string, TopologyNode[]>(),
  }

  constructor(
    private readonly def: TopologyDefinition,
    private readonly t: GraphTables,
    readonly txn: ReadTxn,
  ) {}

  private q<T>(table: Table<T>, index: string, key: string): T[] {
    return table.list(this.txn, table.indexNamed(index)!.query(key as never)).toArray()
  }

  /** The node at a locator (a section also by `<owner locator>#<section>`). */
  node(loc: string): TopologyNode | undefined {
    return this.t.nodes.get(this.txn, this.t.nodes.primary.query(loc as never)) ?? this.q(this.t.nodes, 'alias', loc)[0]
  }

  /** Every node, or those of a kind, sorted by locator. */
  nodes(kind?: string): TopologyNode[] {
    const all = kind === undefined ? this.t.nodes.all(this.txn).toArray() : this.q(this.t.nodes, 'kind', kind)
    return all.sort(byLocator)
  }

  /** Targetable and object nodes (no policies). */
  targetables(): TopologyNode[] {
    return this.nodes().filter((n) => !n.policy)
  }
  /** Policy nodes. */
  policies(): TopologyNode[] {
    return this.nodes().filter((n) => n.policy)
  }

  /** The parents of a node, sorted by locator. */
  parents(child: TopologyNode | string): TopologyNode[] {
    return this.linked(child, 'parents')
  }

  /** The children of a node, sorted by locator. */
  children(parent: TopologyNode | string): TopologyNode[] {
    return this.linked(parent, 'children')
  }

  /** A node's parents or children, from the stored links (computed once per view). */
  private linked(node: TopologyNode | string, side: 'parents' | 'children'): TopologyNode[] {
    const n = typeof node === 'string' ? this.node(node) : node
    if (!n || n.policy) return []
    const memo = this.memo[side]
    let r = memo.get(n.locator)
    if (!r) {
      const out = new Map<string, TopologyNode>()
      for (const l of this.q(this.t.links, side === 'parents' ? 'child' : 'parent', n.locator)) {
        const other = this.node(side === 'parents' ? l.parent : l.child)
        if (other) out.set(other.locator, other)
      }
      memo.set(n.locator, (r = [...out.values()].sort(byLocator)))
    }
    return [...r]
  }

  /** Nodes without parents (policies excluded), sorted. */
  roots(): TopologyNode[] {
    return this.targetables().filter((n) => this.parents(n).length === 0)
  }

  /** Policies attached to a node (by its locator, or `<owner>#<section>` for a section). */
  policiesOf(target: TopologyNode | string): TopologyNode[] {
    const n = typeof target === 'string' ? this.node(target) : target
    if (!n) return []
    let r = this.memo.policies.get(n.locator)
    if (!r) this.memo.policies.set(n.locator, (r = this.policiesOfNode(n)))
    return [...r]
  }

  private policiesOfNode(n: TopologyNode): TopologyNode[] {
    const names = n.owner && n.section ? [n.locator, `${n.owner}#${n.section}`] : [n.locator]
    const out = new Map<string, TopologyNode>()
    for (const name of names)
      for (const a of this.q<Attachment>(this.t.attachments, 'target', name)) {
        const p = this.node(a.policy)
        if (p) out.set(p.locator, p)
      }
    return [...out.values()].sort(byLocator)
  }

  /** Policies with a target that does not exist, with the missing targets. */
  unattached(): Array<{ policy: TopologyNode; missing: string[] }> {
    const out: Array<{ policy: TopologyNode; missing: string[] }> = []
    for (const p of this.policies()) {
      const missing = (p.targets ?? []).filter((t) => !this.node(t))
      if (missing.length || (p.targets ?? []).length === 0) out.push({ policy: p, missing })
    }
    return out
  }

  /**
   * Every path from `from` down to `to` (node lists, from first). Depth-first over children; a cycle
   * throws TopologyCycleError unless allowed.
   */
  paths(from: TopologyNode | string, to: TopologyNode | string): TopologyNode[][] {
    const a = typeof from === 'string' ? this.node(from) : from
    const b = typeof to === 'string' ? this.node(to) : to
    if (!a || !b) return []
    const out: TopologyNode[][] = []
    this.walk(a, (path, n) => {
      if (n.locator !== b.locator) return true
      out.push([...path])
      return false
    })
    return out
  }

  /** Every path from any root to any node without children (leaves), or to a node of the given kinds. */
  allPaths(opts: { leafKinds?: string[] } = {}): TopologyNode[][] {
    const out: TopologyNode[][] = []
    for (const r of this.roots()) {
      this.walk(r, (path, n) => {
        const leaf = opts.leafKinds ? opts.leafKinds.includes(n.kind) : this.children(n).length === 0
        if (leaf) out.push([...path])
        return !leaf
      })
    }
    return out
  }

  /**
   * Depth-first from `start`; `visit` sees each path (ending at its node) and says whether to go on
   * below it. Meeting a node already on the path is a cycle: TopologyCycleError, or skipped with allowLoops.
   */
  private walk(start: TopologyNode, visit: (path: readonly TopologyNode[], n: TopologyNode) => boolean): void {
    const path: TopologyNode[] = []
    const onPath = new Set<string>()
    const step = (n: TopologyNode) => {
      if (onPath.has(n.locator)) {
        if (this.def.allowLoops) return
        const i = path.findIndex((x) => x.locator === n.locator)
        throw new TopologyCycleError([...path.slice(i).map((x) => x.locator), n.locator])
      }
      path.push(n)
      onPath.add(n.locator)
      if (visit(path, n)) for (const c of this.children(n)) step(c)
      path.pop()
      onPath.delete(n.locator)
    }
    step(start)
  }

  /** Throws TopologyCycleError when the graph has a cycle (and loops are not allowed). */
  check(): void {
    if (this.def.allowLoops) return
    const done = new Set<string>()
    const stack: string[] = []
    const onStack = new Set<string>()
    const visit = (n: TopologyNode) => {
      if (onStack.has(n.locator)) throw new TopologyCycleError([...stack.slice(stack.indexOf(n.locator)), n.locator])
      if (done.has(n.locator)) return
      stack.push(n.locator)
      onStack.add(n.locator)
      for (const c of this.children(n)) visit(c)
      stack.pop()
      onStack.delete(n.locator)
      done.add(n.locator)
    }
    for (const n of this.targetables()) visit(n)
  }

  /** Every edge (parent -> child), policy edges (policy -> target) included, sorted. */
  edges(): Array<{ from: string; to: string; policy?: boolean }> {
    const out: Array<{ from: string; to: string; policy?: boolean }> = []
    for (const n of this.targetables()) for (const c of this.children(n)) out.push({ from: n.locator, to: c.locator })
    for (const p of this.policies())
      for (const t of p.targets ?? []) {
        const target = this.node(t)
        if (target) out.push({ from: p.locator, to: target.locator, policy: true })
      }
    return out
  }

  /** Graphviz DOT: targetables as boxes, policies as notes with dashed edges to their targets. */
  toDot(opts: { name?: string; label?: (n: TopologyNode) => string } = {}): string {
    const id = (s: string) => JSON.stringify(s)
    const lines = [`digraph ${id(opts.name ?? 'topology')} {`, '  rankdir=TB;', '  node [shape=box, fontname="sans-serif"];']
    for (const n of this.nodes()) {
      const label = opts.label
        ? opts.label(n)
        : `${n.kind}\\n${n.namespace ? `${n.namespace}/` : ''}${n.name}${n.section ? `#${n.section}` : ''}`
      lines.push(`  ${id(n.locator)} [label=${JSON.stringify(label).replace(/\\\\n/g, '\\n')}${n.policy ? ', shape=note' : ''}];`)
    }
    for (const e of this.edges()) lines.push(`  ${id(e.from)} -> ${id(e.to)}${e.policy ? ' [style=dashed]' : ''};`)
    lines.push('}')
    return `${lines.join('\n')}\n`
  }
}
