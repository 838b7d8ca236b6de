// Ascending iteration of a B+tree (./btree.ts): a plain walk (`treeEach`) and an iterator from a
// lower bound, optionally under a prefix.
//
// Invariant: both yield the values in key order, each once, with the revision stored with it in a
// tree that carries revisions (`TreeIterator.revision`; for the revision index, whose keys are the
// revisions, the key itself when asked with `revisionIsKey`).
import { lowerIndex, revisionAt, type Branch, type Leaf, type TreeKey, type TreeNode } from './btree.ts'

/**
 * Calls fn with every value in key order and its revision (0 in a tree without revisions): a plain
 * walk, no iterator protocol (Results.forEach).
 */
export function treeEach<K extends TreeKey, V>(node: TreeNode<K, V>, fn: (v: V, revision: number) => void): void {
  if (node.leaf) {
    const vals = node.vals
    const revs = node.revs
    if (revs === undefined) for (let i = 0; i < vals.length; i++) fn(vals[i]!, 0)
    else for (let i = 0; i < vals.length; i++) fn(vals[i]!, revs[i]!)
    return
  }
  const children = node.children
  for (let i = 0; i < children.length; i++) treeEach(children[i]!, fn)
}

/**
 * Iterates values in key order from the first key >= `from` (all when undefined); stops before
 * the first key that does not start with `prefix` when one is given (string keys only).
 * The iterator reuses its result object: read `value` (and `key`, `revision`) before calling `next` again.
 */
export class TreeIterator<K extends TreeKey, V> implements IterableIterator<V> {
  private readonly stack: Branch<K, V>[] = []
  private readonly pos: number[] = []
  private leaf: Leaf<K, V> | undefined
  private i = 0
  private readonly result: { done: boolean; value: V } = { done: false, value: undefined as V }
  key: K | undefined

  constructor(
    root: TreeNode<K, V>,
    from: K | undefined,
    private readonly prefix?: string,
    /** The keys are revisions (the revision index): `revision` is the key. */
    private readonly revisionIsKey = false,
  ) {
    let node = root
    while (!node.leaf) {
      let i = from === undefined ? 0 : lowerIndex(node.keys, from)
      if (i === node.keys.length) {
        this.leaf = undefined
        return
      }
      this.stack.push(node)
      this.pos.push(i)
      node = node.children[i]!
    }
    this.leaf = node
    this.i = from === undefined ? 0 : lowerIndex(node.keys, from)
  }

  [Symbol.iterator](): this {
    return this
  }

  next(): IteratorResult<V> {
    const r = this.result
    for (;;) {
      const leaf = this.leaf
      if (leaf === undefined) {
        r.done = true
        r.value = undefined as V
        return r
      }
      const i = this.i
      if (i < leaf.keys.length) {
        const key = leaf.keys[i]!
        if (this.prefix !== undefined && (typeof key !== 'string' || !key.startsWith(this.prefix))) {
          this.leaf = undefined
          continue
        }
        this.key = key
        this.i = i + 1
        r.value = leaf.vals[i]!
        return r
      }
      this.advanceLeaf()
    }
  }

  /**
   * The revision of the value last yielded (trees with revisions, or `revisionIsKey`; else 0). Read
   * on demand: a scan that does not ask never touches the revisions.
   */
  get revision(): number {
    return revisionAt(this.leaf, this.i - 1, this.revisionIsKey)
  }

  private advanceLeaf(): void {
    const stack = this.stack
    const pos = this.pos
    let depth = stack.length - 1
    while (depth >= 0 && pos[depth]! + 1 >= stack[depth]!.children.length) depth--
    if (depth < 0) {
      this.leaf = undefined
      return
    }
    pos[depth]!++
    let node = stack[depth]!.children[pos[depth]!]!
    stack.length = depth + 1
    pos.length = depth + 1
    while (!node.leaf) {
      stack.push(node)
      pos.push(0)
      node = node.children[0]!
    }
    this.leaf = node
    this.i = 0
  }
}
