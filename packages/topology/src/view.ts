// A read-only view of a topology at one snapshot: nodes, parents, children, roots, paths, policies.
// Every method reads through indexes of the graph's tables; the view never changes (its read txn).
// The view's own parents/children/paths follow links (declared links and object -> section), policy
// nodes' links included; a policy's attachment to its targets is read with policiesOf() and shown
// by edges() and toDot(). The collections (all(), targetables(), policies(), objects()) are
// policy-machinery's: there a policy is also a parent of its targets.
// Cycles: a traversal that meets a node already on its path throws TopologyCycleError naming the
// cycle, unless the definition allows loops (then the closing edge is skipped).
import type { ReadTxn, Table } from '@statewright/statedb'
import { TopologyCycleError, type TopologyDefinition, type TopologyNode } from './define.ts'
import type { Attachment, GraphTables } from './rows.ts'
import { TopologyCollection } from './collection.ts'
import { dotOf } from './dot.ts'
import { byLocator, pathsBetween, walk } from './walk.ts'

export class TopologyView {
  // a view never changes, so what it computed once holds (a state-of-world run asks the same
  // questions for every path through a node)
  private readonly memo = {
    parents: new Map<string, TopologyNode[]>(),
    children: new Map<string, TopologyNode[]>(),
    policies: new Map<string, TopologyNode[]>(),
  }
  private cycleMemo: { error: TopologyCycleError | undefined } | undefined

  constructor(
    /** The topology's definition (its kinds, links and policy kinds' merge functions). */
    readonly definition: TopologyDefinition,
    private readonly t: GraphTables,
    readonly txn: ReadTxn,
    /** False when the kinds' graph has no cycle: then the nodes' graph has none either. */
    private readonly mayCycle = true,
  ) {}

  private q<T>(table: Table<T>, index: string, key: string): T[] {
    return table.list(this.txn, table.indexNamed(index)!.query(key as never)).toArray()
  }

  /** The node at a locator (a section: `<its object's locator>#<section>`). */
  node(loc: string): TopologyNode | undefined {
    return this.t.nodes.get(this.txn, this.t.nodes.primary.query(loc as never))
  }

  /** Every node, or those of a kind, sorted by locator. */
  nodes(kind?: string): TopologyNode[] {
    const all = kind === undefined ? this.t.nodes.all(this.txn).toArray() : this.q(this.t.nodes, 'kind', kind)
    return all.sort(byLocator)
  }

  /** Every node, where a policy is also the parent of its targets (policy-machinery's `All()`). */
  all(): TopologyCollection {
    return new TopologyCollection(this, undefined)
  }
  /** Targetable nodes, sections included (policy-machinery's `Targetables()`). */
  targetables(): TopologyCollection {
    return new TopologyCollection(this, 'targetable')
  }
  /** Policy nodes (policy-machinery's `Policies()`). */
  policies(): TopologyCollection {
    return new TopologyCollection(this, 'policy')
  }
  /** Nodes of the definition's `objects` kinds (policy-machinery's `Objects()`). */
  objects(): TopologyCollection {
    return new TopologyCollection(this, 'object')
  }

  /** The parents of a node by links, sorted by locator. */
  parents(child: TopologyNode | string): TopologyNode[] {
    return this.linked(child, 'parents')
  }

  /** The children of a node by links, sorted by locator. */
  children(parent: TopologyNode | string): TopologyNode[] {
    return this.linked(parent, 'children')
  }

  /** A node's parents or children, from the stored links (computed once per view). */
  private linked(node: TopologyNode | string, side: 'parents' | 'children'): TopologyNode[] {
    const n = typeof node === 'string' ? this.node(node) : node
    if (!n) return []
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

  /** Nodes without parents by links (policies excluded), sorted. */
  roots(): TopologyNode[] {
    return this.nodes().filter((n) => !n.policy && this.parents(n).length === 0)
  }

  /** Policies attached to a node (by its locator). */
  policiesOf(target: TopologyNode | string): TopologyNode[] {
    const n = typeof target === 'string' ? this.node(target) : target
    if (!n) return []
    let r = this.memo.policies.get(n.locator)
    if (!r) {
      const out = new Map<string, TopologyNode>()
      for (const a of this.q<Attachment>(this.t.attachments, 'target', n.locator)) {
        const p = this.node(a.policy)
        if (p) out.set(p.locator, p)
      }
      this.memo.policies.set(n.locator, (r = [...out.values()].sort(byLocator)))
    }
    return [...r]
  }

  /** The existing targets of a policy, sorted. */
  targetsOf(policy: TopologyNode | string): TopologyNode[] {
    const p = typeof policy === 'string' ? this.node(policy) : policy
    const out = new Map<string, TopologyNode>()
    for (const t of p?.targets ?? []) {
      const n = this.node(t)
      if (n) out.set(n.locator, n)
    }
    return [...out.values()].sort(byLocator)
  }

  /** Policies with a target that does not exist, with the missing targets. */
  unattached(): Array<{ policy: TopologyNode; missing: string[] }> {
    const out: Array<{ policy: TopologyNode; missing: string[] }> = []
    for (const p of this.nodes().filter((n) => n.policy)) {
      const missing = (p.targets ?? []).filter((t) => !this.node(t))
      if (missing.length || (p.targets ?? []).length === 0) out.push({ policy: p, missing })
    }
    return out
  }

  /**
   * Every path from `from` down to `to` by links (node lists, from first). Depth-first over children;
   * a cycle throws TopologyCycleError unless allowed.
   */
  paths(from: TopologyNode | string, to: TopologyNode | string): TopologyNode[][] {
    const a = typeof from === 'string' ? this.node(from) : from
    const b = typeof to === 'string' ? this.node(to) : to
    if (!a || !b) return []
    return pathsBetween(a, b, (n) => this.children(n), !!this.definition.allowLoops)
  }

  /** Every path from any root to any node without children (leaves), or to a node of the given kinds. */
  allPaths(opts: { leafKinds?: string[] } = {}): TopologyNode[][] {
    const out: TopologyNode[][] = []
    for (const r of this.roots()) {
      walk(
        r,
        (n) => this.children(n),
        (path, n) => {
          const leaf = opts.leafKinds ? opts.leafKinds.includes(n.kind) : this.children(n).length === 0
          if (leaf) out.push([...path])
          return !leaf
        },
        !!this.definition.allowLoops,
      )
    }
    return out
  }

  /** Throws TopologyCycleError when the links make a cycle (and loops are not allowed). */
  check(): void {
    if (this.definition.allowLoops) return
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
    for (const n of this.nodes()) visit(n)
  }

  /**
   * The cycle the links make, as the error check() throws, or undefined (always when loops are
   * allowed). Free while the kinds' graph has no cycle; else one walk of the graph, once per view.
   */
  cycle(): TopologyCycleError | undefined {
    if (!this.mayCycle || this.definition.allowLoops) return undefined
    if (!this.cycleMemo) {
      try {
        this.check()
        this.cycleMemo = { error: undefined }
      } catch (err) {
        if (!(err instanceof TopologyCycleError)) throw err
        this.cycleMemo = { error: err }
      }
    }
    return this.cycleMemo.error
  }

  /** Every edge, sorted by node: links (parent -> child), then attachments (policy -> target, `policy: true`). */
  edges(): Array<{ from: string; to: string; policy?: boolean }> {
    const out: Array<{ from: string; to: string; policy?: boolean }> = []
    const nodes = this.nodes()
    for (const n of nodes) for (const c of this.children(n)) out.push({ from: n.locator, to: c.locator })
    for (const p of nodes) if (p.policy) for (const t of this.targetsOf(p)) out.push({ from: p.locator, to: t.locator, policy: true })
    return out
  }

  /** Graphviz DOT, as policy-machinery draws it: targetables filled boxes, objects ellipses, policies dashed notes with dashed edges to their targets. */
  toDot(opts: { name?: string; label?: (n: TopologyNode) => string } = {}): string {
    return dotOf(this.nodes(), this.edges(), opts)
  }
}
