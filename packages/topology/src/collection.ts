// A collection of a view's nodes, as policy-machinery's `collection` (All(), Targetables(),
// Policies(), Objects()): its items, and parents, children, roots and paths among its items.
// Invariants:
// - The edges are the view's links and, as in policy-machinery, each policy's attachments to its
//   existing targets (policy -> target): in all() a policy is a parent of what it targets.
// - parents(n)/children(n) keep the other ends that are items of the collection (n itself need not
//   be one); roots() are the items without parents among the items; paths() run over items only.
// - Results are sorted by locator; a cycle on a path throws TopologyCycleError unless loops are allowed.
import type { NodeRole, TopologyDefinition, TopologyNode } from './define.ts'
import { byLocator, pathsBetween } from './walk.ts'

/** What a collection reads of its view (TopologyView is one; the view makes its collections). */
export interface CollectionSource {
  readonly definition: Pick<TopologyDefinition, 'allowLoops'>
  node(loc: string): TopologyNode | undefined
  nodes(): TopologyNode[]
  parents(child: TopologyNode): TopologyNode[]
  children(parent: TopologyNode): TopologyNode[]
  policiesOf(target: TopologyNode): TopologyNode[]
  targetsOf(policy: TopologyNode): TopologyNode[]
}

/** Keeps a node when it returns true (policy-machinery's `FilterFunc`). */
export type NodeFilter = (n: TopologyNode) => boolean

export class TopologyCollection {
  constructor(
    private readonly view: CollectionSource,
    /** The role of the items; undefined: every node. */
    readonly role: NodeRole | undefined,
  ) {}

  private has(n: TopologyNode): boolean {
    return this.role === undefined || n.role === this.role
  }

  /** The items that every filter keeps, sorted by locator. */
  items(...filters: NodeFilter[]): TopologyNode[] {
    return this.view.nodes().filter((n) => this.has(n) && filters.every((f) => f(n)))
  }

  /** Items without parents among the items. */
  roots(): TopologyNode[] {
    return this.items().filter((n) => this.parents(n).length === 0)
  }

  /** A node's parents among the items: its link parents and the policies attached to it. */
  parents(child: TopologyNode | string): TopologyNode[] {
    const n = typeof child === 'string' ? this.view.node(child) : child
    if (!n) return []
    return this.keep([...this.view.parents(n), ...this.view.policiesOf(n)])
  }

  /** A node's children among the items: its link children and, for a policy, its targets. */
  children(parent: TopologyNode | string): TopologyNode[] {
    const n = typeof parent === 'string' ? this.view.node(parent) : parent
    if (!n) return []
    return this.keep([...this.view.children(n), ...(n.policy ? this.view.targetsOf(n) : [])])
  }

  /** Every path from `from` to `to` over items (both must be items), from first. */
  paths(from: TopologyNode | string, to: TopologyNode | string): TopologyNode[][] {
    const a = typeof from === 'string' ? this.view.node(from) : from
    const b = typeof to === 'string' ? this.view.node(to) : to
    if (!a || !b || !this.has(a) || !this.has(b)) return []
    return pathsBetween(a, b, (n) => this.children(n), !!this.view.definition.allowLoops)
  }

  private keep(nodes: TopologyNode[]): TopologyNode[] {
    const out = new Map<string, TopologyNode>()
    for (const n of nodes) if (this.has(n)) out.set(n.locator, n)
    return [...out.values()].sort(byLocator)
  }
}
