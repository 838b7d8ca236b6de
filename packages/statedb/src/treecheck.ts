// Checks a B+tree (./btree.ts) against the invariants stated at the top of that file: used by
// validation mode (./validate.ts) and the tests. In a tree that carries revisions, every leaf has
// one revision (a whole number >= 1) per value; in one that does not, none has an array of them.

import { InternalError } from './errors.ts'
import { carriesRevisions, less, MAX, MIN, lastKey, type Tree, type TreeKey, type TreeNode } from './btree.ts'

/** Checks the invariants at the top of ./btree.ts; throws with a description of the first breach. */
export function validateTree<K extends TreeKey, V>(tree: Tree<K, V>, what: string): void {
  const revisions = carriesRevisions(tree.root)
  let leafDepth = -1
  let count = 0
  let prev: K | undefined
  const visit = (node: TreeNode<K, V>, depth: number, isRoot: boolean): void => {
    const n = node.keys.length
    if (!isRoot && (n < MIN || n > MAX)) throw new InternalError(`${what}: node of ${n} entries at depth ${depth}`)
    if (isRoot && !node.leaf && n < 1) throw new InternalError(`${what}: empty branch root`)
    if (node.leaf) {
      if (node.vals.length !== n) throw new InternalError(`${what}: leaf has ${n} keys and ${node.vals.length} values`)
      const revs = node.revs
      if ((revs !== undefined) !== revisions) throw new InternalError(`${what}: some leaves carry revisions and some do not`)
      if (revs !== undefined) {
        if (revs.length !== n) throw new InternalError(`${what}: leaf has ${n} keys and ${revs.length} revisions`)
        for (const r of revs) if (!Number.isInteger(r) || r < 1) throw new InternalError(`${what}: leaf holds revision ${r}`)
      }
      if (leafDepth === -1) leafDepth = depth
      else if (leafDepth !== depth) throw new InternalError(`${what}: leaves at depths ${leafDepth} and ${depth}`)
      for (const key of node.keys) {
        if (prev !== undefined && !less(prev, key)) throw new InternalError(`${what}: keys out of order`)
        prev = key
        count++
      }
      return
    }
    if (node.children.length !== n) throw new InternalError(`${what}: branch has ${n} keys and ${node.children.length} children`)
    for (let i = 0; i < n; i++) {
      const child = node.children[i]!
      visit(child, depth + 1, false)
      if (child.keys.length === 0 || lastKey(child) !== node.keys[i])
        throw new InternalError(`${what}: branch key ${i} is not its child's largest key`)
    }
  }
  visit(tree.root, 0, true)
  if (count !== tree.size) throw new InternalError(`${what}: size ${tree.size} but ${count} entries`)
}
