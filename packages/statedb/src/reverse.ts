// Descending iteration of a B+tree (./btree.ts), for reverse scans: every entry below an exclusive
// upper bound (or all of them), greatest key first, optionally only keys starting with a prefix or
// down to an inclusive lower bound.
//
// Invariant: it yields exactly the entries the ascending TreeIterator yields over the same range,
// in the opposite order, with the same revisions (a property test in test/reverse.test.ts holds it to that).

import { less, lowerIndex, revisionAt, type Branch, type Leaf, type TreeKey, type TreeNode } from './btree.ts'

export class ReverseTreeIterator<K extends TreeKey, V> implements IterableIterator<V> {
  private readonly stack: Branch<K, V>[] = []
  private readonly pos: number[] = []
  private leaf: Leaf<K, V> | undefined
  private i = -1
  private readonly result: { done: boolean; value: V } = { done: false, value: undefined as V }

  constructor(
    root: TreeNode<K, V>,
    /** Exclusive upper bound; undefined: from the greatest key. */
    before: K | undefined,
    /** Yield only keys that start with this (stop at the first that does not). */
    private readonly prefix?: string,
    /** Inclusive lower bound: stop at the first key below it. */
    private readonly floor?: K,
    /** As TreeIterator's. */
    private readonly revisionIsKey = false,
  ) {
    let node = root
    while (!node.leaf) {
      // The child holding the first key >= before also holds the last key below it (or the previous one does).
      const i = before === undefined ? node.children.length - 1 : Math.min(lowerIndex(node.keys, before), node.children.length - 1)
      this.stack.push(node)
      this.pos.push(i)
      node = node.children[i]!
    }
    this.leaf = node
    this.i = (before === undefined ? node.keys.length : lowerIndex(node.keys, before)) - 1
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
      if (this.i >= 0) {
        const key = leaf.keys[this.i]!
        if (
          (this.prefix !== undefined && (typeof key !== 'string' || !key.startsWith(this.prefix))) ||
          (this.floor !== undefined && less(key, this.floor))
        ) {
          this.leaf = undefined
          continue
        }
        r.value = leaf.vals[this.i--]!
        return r
      }
      this.previousLeaf()
    }
  }

  /** As TreeIterator's: the revision of the value last yielded, read on demand. */
  get revision(): number {
    return revisionAt(this.leaf, this.i + 1, this.revisionIsKey)
  }

  private previousLeaf(): void {
    const stack = this.stack
    const pos = this.pos
    let depth = stack.length - 1
    while (depth >= 0 && pos[depth]! === 0) depth--
    if (depth < 0) {
      this.leaf = undefined
      return
    }
    pos[depth]!--
    let node = stack[depth]!.children[pos[depth]!]!
    stack.length = depth + 1
    pos.length = depth + 1
    while (!node.leaf) {
      stack.push(node)
      pos.push(node.children.length - 1)
      node = node.children[node.children.length - 1]!
    }
    this.leaf = node
    this.i = node.keys.length - 1
  }
}

/**
 * The least string greater than every string that starts with `prefix` (undefined when there is
 * none: an empty prefix or one of U+FFFF only covers every string up to the end).
 */
export function prefixEnd(prefix: string): string | undefined {
  let p = prefix
  while (p.length > 0) {
    const last = p.charCodeAt(p.length - 1)
    if (last < 0xffff) return p.slice(0, -1) + String.fromCharCode(last + 1)
    p = p.slice(0, -1)
  }
  return undefined
}
