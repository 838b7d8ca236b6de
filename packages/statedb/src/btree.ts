// A persistent (copy-on-write) B+tree mapping ordered keys to values. Keys are numbers and strings:
// numbers compare as numbers, strings by code units, and every number sorts before every string.
//
// Invariants (checked by `validateTree`, ./treecheck.ts):
// - every leaf is at the same depth; keys within a node are strictly increasing;
// - a branch's keys[i] is the largest key below children[i];
// - every node but the root holds between MIN and MAX entries (the root: 1..MAX children, or a leaf);
// - a node whose `owner` is not the current writer's token is never changed in place: it may be
//   shared by any number of published snapshots. A writer copies such nodes on the path it changes
//   and mutates its own copies freely, so a transaction of N writes copies each touched node once.
//   Publishing a tree (`TreeWriter.publish`) gives the writer a fresh token, which freezes every node
//   it made.
// - a copy shares its original's `keys` array until it changes a key (`sharedKeys`: then it copies
//   them first, see `ownKeys`): a replacement, the commonest write, changes no key, so it copies half
//   of what it used to.
// - between `TreeWriter.append` calls the branch keys along the right edge may lag behind the keys
//   below them; `seal` (which every other writer method calls first) restores the invariant.
import { InternalError } from './errors.ts'

export type TreeKey = string | number

export type Owner = object

export interface Leaf<K extends TreeKey, V> {
  leaf: true
  keys: K[]
  vals: V[]
  owner: Owner | null
  /** `keys` is another node's array: copy it before changing it (ownKeys). */
  sharedKeys: boolean
}

export interface Branch<K extends TreeKey, V> {
  leaf: false
  keys: K[] // keys[i] = largest key under children[i]
  children: TreeNode<K, V>[]
  owner: Owner | null
  /** As Leaf.sharedKeys. */
  sharedKeys: boolean
}

export type TreeNode<K extends TreeKey, V> = Leaf<K, V> | Branch<K, V>

export const MAX = 48
export const MIN = 12
/** How many splits after appends a writer makes with exact-size arrays on both sides (`splitEdgeLeaf`). */
const EXACT_EDGE_SPLITS = 4

/** An immutable tree: the root and the number of entries. */
export interface Tree<K extends TreeKey, V> {
  readonly root: TreeNode<K, V>
  readonly size: number
}

export function emptyTree<K extends TreeKey, V>(): Tree<K, V> {
  return { root: { leaf: true, keys: [], vals: [], owner: null, sharedKeys: false }, size: 0 }
}

/** Index of the first key >= k (keys.length when all are smaller). */
export function lowerIndex<K extends TreeKey>(keys: K[], k: K): number {
  // Two searches, each with one kind of `<` in its loop (they compile to different code).
  return typeof k === 'number' ? lowerNumber(keys, k) : lowerString(keys, k as string)
}

function lowerNumber(keys: TreeKey[], k: number): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const x = keys[mid]!
    if (typeof x === 'number' && x < k)
      lo = mid + 1 // a string is never below a number
    else hi = mid
  }
  return lo
}

function lowerString(keys: TreeKey[], k: string): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const x = keys[mid]!
    if (typeof x !== 'string' || x < k)
      lo = mid + 1 // every number is below a string
    else hi = mid
  }
  return lo
}

/** The key order: numbers before strings. */
export function less(a: TreeKey, b: TreeKey): boolean {
  return typeof a === typeof b ? a < b : typeof a === 'number'
}

/** lowerIndex with a first look at the end: appends (revisions, ordered loads) skip the search. */
function insertIndex<K extends TreeKey>(keys: K[], k: K): number {
  const n = keys.length
  return n > 0 && less(keys[n - 1]!, k) ? n : lowerIndex(keys, k)
}

export function treeGet<K extends TreeKey, V>(root: TreeNode<K, V>, k: K): V | undefined {
  return typeof k === 'number' ? getNumber(root as TreeNode<TreeKey, V>, k) : getString(root as TreeNode<TreeKey, V>, k as string)
}

// Lookups by one kind of key, each with its own copy of the search: a search shared with the writers
// and with both key kinds sees every kind of keys array in the process and runs as generic code
// (measured: table.get at 0.4x of sorted-btree's get, the same descent written out at 1.3x).
function getNumber<V>(root: TreeNode<TreeKey, V>, k: number): V | undefined {
  let node = root
  for (;;) {
    const keys = node.keys
    let lo = 0
    let hi = keys.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const x = keys[mid]!
      if (typeof x === 'number' && x < k) lo = mid + 1
      else hi = mid
    }
    if (node.leaf) return lo < keys.length && keys[lo] === k ? node.vals[lo] : undefined
    if (lo === keys.length) return undefined
    node = node.children[lo]!
  }
}

function getString<V>(root: TreeNode<TreeKey, V>, k: string): V | undefined {
  let node = root
  for (;;) {
    const keys = node.keys
    let lo = 0
    let hi = keys.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const x = keys[mid]!
      if (typeof x !== 'string' || x < k) lo = mid + 1
      else hi = mid
    }
    if (node.leaf) return lo < keys.length && keys[lo] === k ? node.vals[lo] : undefined
    if (lo === keys.length) return undefined
    node = node.children[lo]!
  }
}

/**
 * A writer over a tree: changes copy shared nodes once and then mutate the copies.
 * `get` and iteration see the writer's own changes.
 */
export class TreeWriter<K extends TreeKey, V> implements Tree<K, V> {
  root: TreeNode<K, V>
  size: number
  private owner: Owner = {}
  /** While appends are open (see `append`): the owned right edge's branches, root first, and its leaf. */
  private edge: Branch<K, V>[] | undefined = undefined
  private edgeLeaf: Leaf<K, V> | undefined = undefined
  private old: V | undefined
  private guard: ((old: V | undefined) => boolean) | undefined
  /** The last guarded set was refused. */
  rejected = false
  /** Splits of the last leaf after appends, by this writer (see `splitEdgeLeaf`). */
  private edgeSplits = 0

  constructor(tree: Tree<K, V>) {
    this.root = tree.root
    this.size = tree.size
  }

  get(k: K): V | undefined {
    this.seal()
    return treeGet(this.root, k)
  }

  /**
   * Inserts or replaces; returns the value it replaced. With a guard, writes only if
   * guard(current value or undefined) is true; `rejected` tells whether it refused.
   */
  set(k: K, v: V, guard?: (old: V | undefined) => boolean): V | undefined {
    this.seal()
    this.old = undefined
    this.guard = guard
    this.rejected = false
    const root = this.own(this.root)
    const split = this.insert(root, k, v, true)
    if (this.rejected) {
      this.root = root
      return this.old
    }
    if (split) {
      this.root = { leaf: false, keys: [lastKey(root), lastKey(split)], children: [root, split], owner: this.owner, sharedKeys: false }
    } else {
      this.root = root
    }
    if (this.old === undefined) this.size++
    return this.old
  }

  /** Removes a key; returns the removed value. Copies nothing when the key is absent. */
  delete(k: K): V | undefined {
    this.seal()
    const found = treeGet(this.root, k)
    if (found !== undefined) this.deletePresent(k)
    return found
  }

  /** Removes a key the caller knows is present (one descent instead of two). */
  deletePresent(k: K): void {
    this.seal()
    let root = this.own(this.root)
    this.remove(root, k)
    while (!root.leaf && root.children.length === 1) root = this.own(root.children[0]!)
    this.root = root
    this.size--
  }

  /** Removes every entry. */
  clear(): void {
    this.seal()
    this.root = { leaf: true, keys: [], vals: [], owner: this.owner, sharedKeys: false }
    this.size = 0
  }

  /** Freezes what this writer built and returns it as an immutable tree. The writer stays usable. */
  publish(): Tree<K, V> {
    this.seal()
    this.owner = {}
    return { root: this.root, size: this.size }
  }

  /**
   * Appends an entry whose key is above every key in the tree (the revision index's new revisions)
   * without a descent: the writer keeps the owned right edge open between appends, and splits as
   * `set` does, so the tree is the one `set` would build. Until `seal`, the right edge's branch keys
   * may lag behind: every other method seals first (a reader of `root` must call `seal`).
   */
  append(k: K, v: V): void {
    let leaf = this.edgeLeaf
    if (leaf === undefined) leaf = this.openEdge()
    const n = leaf.keys.length
    if (n > 0 && !less(leaf.keys[n - 1]!, k)) throw new InternalError('statedb internal error: appending a key that is not above the tree')
    ownKeys(leaf).push(k)
    leaf.vals.push(v)
    this.size++
    if (n + 1 <= MAX) return
    const right = this.splitEdgeLeaf(leaf, splitPoint(n + 1, true))
    this.pushRight(this.edge!, this.edge!.length - 1, leaf, right)
    this.edgeLeaf = right
  }

  /** Appends entries (keys strictly increasing, all above the tree) and seals. */
  appendSorted(keys: readonly K[], vals: readonly V[]): void {
    for (let i = 0; i < keys.length; i++) this.append(keys[i]!, vals[i]!)
    this.seal()
  }

  /** Brings the right edge's branch keys up to date after appends. Cheap when there were none. */
  seal(): void {
    const path = this.edge
    if (path === undefined) return
    for (let d = path.length - 1; d >= 0; d--) {
      const b = path[d]!
      setKey(b, b.keys.length - 1, lastKey(b.children[b.children.length - 1]!))
    }
    this.edge = undefined
    this.edgeLeaf = undefined
  }

  // Owns the right edge, root to leaf, for appends.
  private openEdge(): Leaf<K, V> {
    const path: Branch<K, V>[] = []
    let node = this.own(this.root)
    this.root = node
    while (!node.leaf) {
      path.push(node)
      const c = node.children.length - 1
      const child = this.own(node.children[c]!)
      node.children[c] = child
      node = child
    }
    this.edge = path
    this.edgeLeaf = node
    return node
  }

  // `left`, the last child of path[d] (the root when d < 0), split off `right`: appends `right` to
  // the parent, splitting upwards as `insert` does; path[d] becomes the new right edge.
  private pushRight(path: Branch<K, V>[], d: number, left: TreeNode<K, V>, right: TreeNode<K, V>): void {
    if (d < 0) {
      const root: Branch<K, V> = {
        leaf: false,
        keys: [lastKey(left), lastKey(right)],
        children: [left, right],
        owner: this.owner,
        sharedKeys: false,
      }
      path.unshift(root)
      this.root = root
      return
    }
    const p = path[d]!
    setKey(p, p.keys.length - 1, lastKey(left))
    ownKeys(p).push(lastKey(right))
    p.children.push(right)
    if (p.keys.length <= MAX) return
    const cut = splitPoint(p.keys.length, true)
    const r: Branch<K, V> = { leaf: false, keys: p.keys.slice(cut), children: p.children.slice(cut), owner: this.owner, sharedKeys: false }
    p.keys = p.keys.slice(0, cut)
    p.children = p.children.slice(0, cut)
    path[d] = r
    this.pushRight(path, d - 1, p, r)
  }

  /** @internal This writer's copy of a node (the node itself when already its own). */
  own<N extends TreeNode<K, V>>(node: N): N {
    if (node.owner === this.owner) return node
    if (node.leaf) return { leaf: true, keys: node.keys, vals: node.vals.slice(), owner: this.owner, sharedKeys: true } as N
    return { leaf: false, keys: node.keys, children: node.children.slice(), owner: this.owner, sharedKeys: true } as N
  }

  // Splits the last leaf of the tree after an append. The left part always moves to fresh arrays of
  // its exact size. The right part, which takes the next appends, gets fresh ones too for the first
  // few splits of a writer; after that it keeps the leaf's own arrays (taking the front off an array
  // is a left trim in V8, no copy), whose grown capacity takes the next appends without regrowing.
  // Measured (scripts/profile-writes.ts, scripts/profile-allocations.ts): keeping the arrays saves
  // about 300 B per object in the reconciler's transactions of 1000 appends, but made transactions
  // of 100 (2-3 splits per tree) 5-25% slower, so it starts only once a transaction appends a lot.
  private splitEdgeLeaf(leaf: Leaf<K, V>, cut: number): Leaf<K, V> {
    if (++this.edgeSplits <= EXACT_EDGE_SPLITS) return this.splitLeaf(leaf, cut)
    const keys = leaf.keys.splice(0, cut)
    const vals = leaf.vals.splice(0, cut)
    const right: Leaf<K, V> = { leaf: true, keys: leaf.keys, vals: leaf.vals, owner: this.owner, sharedKeys: false }
    leaf.keys = keys
    leaf.vals = vals
    return right
  }

  // Splits an owned leaf at `cut` into two leaves of exact-size arrays; returns the right one.
  private splitLeaf(leaf: Leaf<K, V>, cut: number): Leaf<K, V> {
    const right: Leaf<K, V> = { leaf: true, keys: leaf.keys.slice(cut), vals: leaf.vals.slice(cut), owner: this.owner, sharedKeys: false }
    leaf.keys = leaf.keys.slice(0, cut)
    leaf.vals = leaf.vals.slice(0, cut)
    return right
  }

  // Inserts below an owned node; returns a new right sibling when the node split. `edge`: the node is
  // on the tree's right edge (the last node of its level).
  private insert(node: TreeNode<K, V>, k: K, v: V, edge: boolean): TreeNode<K, V> | undefined {
    if (node.leaf) {
      const i = insertIndex(node.keys, k)
      const found = i < node.keys.length && node.keys[i] === k
      if (this.guard !== undefined && !this.guard(found ? node.vals[i] : undefined)) {
        this.rejected = true
        if (found) this.old = node.vals[i]
        return undefined
      }
      if (found) {
        this.old = node.vals[i]
        node.vals[i] = v
        return undefined
      }
      const appended = i === node.keys.length
      ownKeys(node)
      if (appended) {
        node.keys.push(k)
        node.vals.push(v)
      } else {
        node.keys.splice(i, 0, k)
        node.vals.splice(i, 0, v)
      }
      if (node.keys.length <= MAX) return undefined
      const cut = splitPoint(node.keys.length, appended)
      return appended && edge ? this.splitEdgeLeaf(node, cut) : this.splitLeaf(node, cut)
    }
    let i = insertIndex(node.keys, k)
    if (i === node.keys.length) i--
    const child = this.own(node.children[i]!)
    node.children[i] = child
    const split = this.insert(child, k, v, edge && i === node.keys.length - 1)
    if (this.rejected) return undefined
    setKey(node, i, lastKey(child))
    if (!split) return undefined
    ownKeys(node)
    node.keys.splice(i + 1, 0, lastKey(split))
    node.children.splice(i + 1, 0, split)
    if (node.keys.length <= MAX) return undefined
    const cut = splitPoint(node.keys.length, i + 2 === node.keys.length)
    const right: Branch<K, V> = {
      leaf: false,
      keys: node.keys.slice(cut),
      children: node.children.slice(cut),
      owner: this.owner,
      sharedKeys: false,
    }
    node.keys = node.keys.slice(0, cut)
    node.children = node.children.slice(0, cut)
    return right
  }

  // Removes k (known to be present) below an owned node, rebalancing children that run low.
  private remove(node: TreeNode<K, V>, k: K): void {
    if (node.leaf) {
      const i = lowerIndex(node.keys, k)
      if (node.keys[i] !== k) throw new InternalError('statedb internal error: deleting a key that is not in the tree')
      removeAt(ownKeys(node), i)
      removeAt(node.vals, i)
      return
    }
    const i = lowerIndex(node.keys, k)
    const child = this.own(node.children[i]!)
    node.children[i] = child
    this.remove(child, k)
    if (child.keys.length >= MIN) {
      setKey(node, i, lastKey(child))
      return
    }
    // Child ran low: merge with a neighbour when both fit in one node, else borrow from it.
    const j = i > 0 ? i - 1 : i + 1
    if (j >= node.children.length) {
      if (child.keys.length > 0) setKey(node, i, lastKey(child))
      else {
        removeAt(ownKeys(node), i)
        removeAt(node.children, i)
      }
      return
    }
    const left = this.own(node.children[Math.min(i, j)]!)
    const right = this.own(node.children[Math.max(i, j)]!)
    const l = Math.min(i, j)
    node.children[l] = left
    node.children[l + 1] = right
    if (left.keys.length + right.keys.length <= MAX) {
      mergeInto(left, right)
      removeAt(ownKeys(node), l + 1)
      removeAt(node.children, l + 1)
      node.keys[l] = lastKey(left)
      return
    }
    rebalance(left, right)
    setKey(node, l, lastKey(left))
    setKey(node, l + 1, lastKey(right))
  }
}

// Where an overfull node splits: in half, or, when the insertion was at its end (sequential loads,
// and always in the revision index), leaving the left node three-quarters full and the right one
// just above the minimum. Both halves are fresh arrays of their exact size (a spliced array keeps
// its old capacity, which a published node would carry forever), except from a writer's fifth split
// of the tree's last leaf after an append on: that leaf keeps its arrays, spare capacity and all,
// for the appends to come (`splitEdgeLeaf`). (A leaf that grew by an insert without splitting keeps
// its grown arrays too, as it always has.)
function splitPoint(n: number, appended: boolean): number {
  return appended ? n - MIN - 1 : n >>> 1
}

// Removes one element in place (splice would allocate an array of the removed elements).
function removeAt<T>(a: T[], i: number): void {
  const n = a.length - 1
  for (let j = i; j < n; j++) a[j] = a[j + 1]!
  a.pop()
}

export function lastKey<K extends TreeKey, V>(node: TreeNode<K, V>): K {
  return node.keys[node.keys.length - 1]!
}

// The node's keys, its own to change (a copy of the shared array the first time). Owned nodes only.
export function ownKeys<K extends TreeKey, V>(node: TreeNode<K, V>): K[] {
  if (node.sharedKeys) {
    node.keys = node.keys.slice()
    node.sharedKeys = false
  }
  return node.keys
}

// Sets a key of an owned node, copying shared keys only when the key really changes.
function setKey<K extends TreeKey, V>(node: TreeNode<K, V>, i: number, k: K): void {
  if (node.keys[i] !== k) ownKeys(node)[i] = k
}

export function mergeInto<K extends TreeKey, V>(left: TreeNode<K, V>, right: TreeNode<K, V>): void {
  ownKeys(left)
  for (const key of right.keys) left.keys.push(key)
  if (left.leaf) for (const v of (right as Leaf<K, V>).vals) left.vals.push(v)
  else for (const c of (right as Branch<K, V>).children) left.children.push(c)
}

// Evens out two siblings in place. No splice/shift/unshift: those allocate an array of the moved
// elements (or shift one at a time), and deleting the oldest revision (every update of the revision
// index) takes this path on every few writes.
export function rebalance<K extends TreeKey, V>(left: TreeNode<K, V>, right: TreeNode<K, V>): void {
  ownKeys(left)
  ownKeys(right)
  const total = left.keys.length + right.keys.length
  const wantLeft = total >>> 1
  if (left.keys.length < wantLeft) {
    const n = wantLeft - left.keys.length
    moveFront(right.keys, left.keys, n)
    if (left.leaf) moveFront((right as Leaf<K, V>).vals, left.vals, n)
    else moveFront((right as Branch<K, V>).children, left.children, n)
  } else {
    const n = left.keys.length - wantLeft
    moveBack(left.keys, right.keys, n)
    if (left.leaf) moveBack(left.vals, (right as Leaf<K, V>).vals, n)
    else moveBack(left.children, (right as Branch<K, V>).children, n)
  }
}

/** Moves the first n elements of `from` to the end of `to`. */
function moveFront<T>(from: T[], to: T[], n: number): void {
  for (let i = 0; i < n; i++) to.push(from[i]!)
  const m = from.length - n
  for (let i = 0; i < m; i++) from[i] = from[i + n]!
  from.length = m
}

/** Moves the last n elements of `from` to the front of `to`. */
function moveBack<T>(from: T[], to: T[], n: number): void {
  const m = to.length
  const start = from.length - n
  // Grow by pushing existing values (setting length would make the array holey for good).
  for (let i = 0; i < n; i++) to.push(m > 0 ? to[0]! : from[start]!)
  for (let i = m - 1; i >= 0; i--) to[i + n] = to[i]!
  for (let i = 0; i < n; i++) to[i] = from[start + i]!
  from.length = start
}

/** Calls fn with every value in key order: a plain walk, no iterator protocol (Results.forEach). */
export function treeEach<K extends TreeKey, V>(node: TreeNode<K, V>, fn: (v: V) => void): void {
  if (node.leaf) {
    const vals = node.vals
    for (let i = 0; i < vals.length; i++) fn(vals[i]!)
    return
  }
  const children = node.children
  for (let i = 0; i < children.length; i++) treeEach(children[i]!, fn)
}

/**
 * Iterates values in key order from the first key >= `from` (all when undefined); stops before
 * the first key that does not start with `prefix` when one is given (string keys only).
 * The iterator reuses its result object: read `value` before calling `next` again.
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
    /** Yield each value's `object` instead of the value (a full scan's objects, with no wrapper iterator). */
    private readonly objects = false,
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
      if (this.i < leaf.keys.length) {
        const key = leaf.keys[this.i]!
        if (this.prefix !== undefined && (typeof key !== 'string' || !key.startsWith(this.prefix))) {
          this.leaf = undefined
          continue
        }
        this.key = key
        const v = leaf.vals[this.i++]!
        r.value = this.objects ? (v as unknown as { object: V }).object : v
        return r
      }
      this.advanceLeaf()
    }
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
