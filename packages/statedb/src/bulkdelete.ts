// Deleting many keys of a B+tree in one pass (./btree.ts): each leaf is compacted once for all of its
// deleted keys, then each branch repairs its underfull children by merging and borrowing.
//
// Why: deleting keys one at a time from the front of a leaf moves every later element once per
// deleted key, and the revision index deletes exactly that way: an update deletes the stored
// object's revision, and updates mostly hit the oldest revisions first (cilium's rewrite-ids shape,
// the reconciler's status write-back of a round). One by one, this was the top self-time function
// of the rewrite-ids profile.
//
// A leaf all of whose keys go is not copied at all: its parent drops it (the revision index of an
// update-only transaction, cilium's rewrite-ids shape, loses whole leaves of old revisions at once).
//
// Invariants: the keys are strictly increasing and all present; afterwards the tree meets every
// invariant of ./btree.ts (checked by validateTree in the tests and in validation mode), and only
// nodes owned by the writer were changed. A child with no keys (a dropped leaf, or a branch all of
// whose leaves were dropped) never outlives the repair of its parent.

import { InternalError } from './errors.ts'
import { lastKey, lowerIndex, MAX, mergeInto, MIN, ownKeys, rebalance, type Branch, type TreeKey, type TreeNode } from './btree.ts'

/**
 * What bulk deletion needs of a tree's writer (./treewriter.ts's TreeWriter, which calls in here to
 * carry out its gathered removals: so this file names no type of that one).
 */
export interface BulkWriter<K extends TreeKey, V> {
  root: TreeNode<K, V>
  size: number
  seal(): void
  deletePresent(k: K): void
  clear(): void
  own<N extends TreeNode<K, V>>(node: N): N
}

/** Removes the first `n` of `keys` (strictly increasing, every one present) from the writer's tree. */
export function deleteSortedPresent<K extends TreeKey, V>(w: BulkWriter<K, V>, keys: readonly K[], n = keys.length): void {
  if (n === 0) return
  w.seal()
  if (n === 1) {
    w.deletePresent(keys[0]!)
    return
  }
  if (n === w.size) {
    w.clear() // every key goes (they are distinct and all present)
    return
  }
  let root = w.own(w.root)
  removeRun(w, root, keys, 0, n)
  while (!root.leaf && root.children.length === 1) root = w.own(root.children[0]!)
  w.root = root
  w.size -= n
}

// Removes keys[from..to) (all below an owned node).
function removeRun<K extends TreeKey, V>(w: BulkWriter<K, V>, node: TreeNode<K, V>, keys: readonly K[], from: number, to: number): void {
  if (node.leaf) {
    const nk = ownKeys(node)
    const nv = node.vals
    const nr = node.revs
    let k = from
    let out = 0
    for (let i = 0; i < nk.length; i++) {
      if (k < to && nk[i] === keys[k]) {
        k++
        continue
      }
      nk[out] = nk[i]!
      nv[out] = nv[i]!
      if (nr !== undefined) nr[out] = nr[i]!
      out++
    }
    if (k !== to) throw new InternalError('statedb internal error: deleting a key that is not in the tree')
    nk.length = out
    nv.length = out
    if (nr !== undefined) nr.length = out
    return
  }
  // Split the run among the children (keys[i] of a branch is the largest key below children[i]).
  let i = from
  while (i < to) {
    const c = lowerIndex(node.keys, keys[i]!)
    if (c === node.keys.length) throw new InternalError('statedb internal error: deleting a key that is not in the tree')
    const bound = node.keys[c]!
    let j = i + 1
    while (j < to && (keys[j]! === bound || lessKey(keys[j]!, bound))) j++
    const shared = node.children[c]!
    if (shared.leaf && j - i === shared.keys.length) {
      node.children[c] = DROPPED // every key of the leaf goes: no copy (repair removes it)
    } else {
      const child = w.own(shared)
      node.children[c] = child
      removeRun(w, child, keys, i, j)
    }
    i = j
  }
  repair(w, node)
}

// Stands in for a leaf whose keys all went, until repair drops it. Never changed: not owned by any
// writer, and repair removes every child with no keys before it looks at the others.
const DROPPED: TreeNode<never, never> = Object.freeze({
  leaf: true,
  keys: Object.freeze([]) as never[],
  vals: Object.freeze([]) as never[],
  revs: undefined,
  owner: null,
  sharedKeys: false,
})

const lessKey = (a: TreeKey, b: TreeKey): boolean => (typeof a === typeof b ? a < b : typeof a === 'number')

// Brings the children of an owned branch back to MIN..MAX entries, merging a short child with a
// neighbour (when both fit in one node) or evening the two out, then recomputes the branch's keys.
// A branch left with a single child cannot fix that child: the parent merges the branch with a
// neighbour and then repairs the merged node, which gives the short grandchild siblings again.
// Each merge removes a node, so this ends.
function repair<K extends TreeKey, V>(w: BulkWriter<K, V>, node: Branch<K, V>): void {
  const children = node.children
  // Children left with no keys go first (dropped leaves, emptied branches): nothing to merge.
  let out = 0
  for (let c = 0; c < children.length; c++) if (children[c]!.keys.length > 0) children[out++] = children[c]!
  children.length = out
  let i = 0
  while (i < children.length && children.length > 1) {
    if (children[i]!.keys.length >= MIN) {
      i++
      continue
    }
    const l = i + 1 < children.length ? i : i - 1
    const left = w.own(children[l]!)
    const right = w.own(children[l + 1]!)
    children[l] = left
    children[l + 1] = right
    if (left.keys.length + right.keys.length <= MAX) {
      mergeInto(left, right)
      children.splice(l + 1, 1)
      if (!left.leaf) repair(w, left)
    } else {
      rebalance(left, right) // both end with at least MAX/2 >= MIN entries
      if (!left.leaf) {
        repair(w, left)
        repair(w, right as Branch<K, V>)
      }
    }
    i = l // look at the result again: a repair below may have shortened it
  }
  ownKeys(node).length = children.length
  for (let c = 0; c < children.length; c++) {
    const child = children[c]!
    if (child.keys.length > 0) node.keys[c] = lastKey(child)
  }
}
