// Walking a topology's graph: the order nodes are listed in, and depth-first paths. Shared by the
// view (links) and its collections (links and policy attachments).
// Invariant: meeting a node already on the current path is a cycle: TopologyCycleError naming it,
// or (allowLoops) the closing edge is skipped; a node reached twice on different paths is no cycle.
import { TopologyCycleError, type TopologyNode } from './define.ts'

/** Nodes are listed by locator. */
export const byLocator = (a: TopologyNode, b: TopologyNode) => (a.locator < b.locator ? -1 : a.locator > b.locator ? 1 : 0)

/**
 * Depth-first from `start` following `next`; `visit` sees each path (ending at its node) and says
 * whether to go on below it.
 */
export function walk(
  start: TopologyNode,
  next: (n: TopologyNode) => TopologyNode[],
  visit: (path: readonly TopologyNode[], n: TopologyNode) => boolean,
  allowLoops: boolean,
): void {
  const path: TopologyNode[] = []
  const onPath = new Set<string>()
  const step = (n: TopologyNode) => {
    if (onPath.has(n.locator)) {
      if (allowLoops) return
      const i = path.findIndex((x) => x.locator === n.locator)
      throw new TopologyCycleError([...path.slice(i).map((x) => x.locator), n.locator])
    }
    path.push(n)
    onPath.add(n.locator)
    if (visit(path, n)) for (const c of next(n)) step(c)
    path.pop()
    onPath.delete(n.locator)
  }
  step(start)
}

/** Every path from `from` to `to` following `next`, as node lists from `from`. */
export function pathsBetween(
  from: TopologyNode,
  to: TopologyNode,
  next: (n: TopologyNode) => TopologyNode[],
  allowLoops: boolean,
): TopologyNode[][] {
  const out: TopologyNode[][] = []
  walk(
    from,
    next,
    (path, n) => {
      if (n.locator !== to.locator) return true
      out.push([...path])
      return false
    },
    allowLoops,
  )
  return out
}
