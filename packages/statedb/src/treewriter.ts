// The writer of a persistent B+tree (./btree.ts): changes copy shared nodes once and then mutate
// the copies; `publish` freezes what it built. (Over 400 lines for a reason: one class whose every
// method shares the writer's private state: its owner token, the open right edge, the leaf of the
// last replacement and the gathered removals.)
//
// Invariants: those of ./btree.ts, whenever the tree is read through `root` or published (`seal`,
// which both make, brings up to date the right edge's branch keys that `append` and `set`'s append
// shortcut leave lagging, and carries out `deleteLater`'s removals); a node not owned by this writer
// is never changed (a frozen leaf whose values alias its keys included); in a tree
// that carries revisions, every value written comes with its revision and every move of a value
// (insert, split, merge, rebalance, removal) moves its revision with it.
import { InternalError } from './errors.ts'
import { deleteSortedPresent } from './bulkdelete.ts'
import {
  carriesRevisions,
  insertIndex,
  lastKey,
  less,
  lowerIndex,
  MAX,
  MIN,
  mergeInto,
  ownKeys,
  rebalance,
  removeAt,
  setKey,
  splitPoint,
  treeGet,
  treeRevision,
  type Branch,
  type Leaf,
  type Owner,
  type Tree,
  type TreeKey,
  type TreeNode,
} from './btree.ts'

/** How many splits after appends a writer makes with exact-size arrays on both sides (`splitEdgeLeaf`). */
const EXACT_EDGE_SPLITS = 4

const ascending = (a: number, b: number): number => a - b
const byKey = <K extends TreeKey>(a: K, b: K): number => (less(a, b) ? -1 : 1)

/** @internal Tests turn `set`'s two shortcuts off to compare them with the descent they skip. */
export const SET_SHORTCUTS = { enabled: true }

/** Decides whether a guarded set writes: given the current value (or undefined) and its revision (-1: none). */
export type SetGuard<V> = (old: V | undefined, oldRevision: number) => boolean

/**
 * A writer over a tree: changes copy shared nodes once and then mutate the copies.
 * `get` and iteration see the writer's own changes.
 */
export class TreeWriter<K extends TreeKey, V> implements Tree<K, V> {
  /** The root; while appends are open its right edge's branch keys lag (see `append`), hence the accessors. */
  private top: TreeNode<K, V>
  size: number
  private owner: Owner = {}
  /** While appends are open (see `append`): the owned right edge's branches, root first, and its leaf. */
  private edge: Branch<K, V>[] | undefined = undefined
  private edgeLeaf: Leaf<K, V> | undefined = undefined
  private old: V | undefined
  /** The revision of the value the last set, delete or refused guarded set found (trees with revisions). */
  oldRevision = -1
  private guard: SetGuard<V> | undefined
  /** This tree's leaves carry revisions (./btree.ts). */
  private readonly revs: boolean
  /** The last guarded set was refused. */
  rejected = false
  /** Splits of the last leaf after appends, by this writer (see `splitEdgeLeaf`). */
  private edgeSplits = 0

  constructor(tree: Tree<K, V>) {
    this.top = tree.root
    this.size = tree.size
    this.revs = carriesRevisions(tree.root)
  }

  /** The root, with the right edge sealed: what any reader of the tree may descend. */
  get root(): TreeNode<K, V> {
    this.seal()
    return this.top
  }

  set root(node: TreeNode<K, V>) {
    this.seal()
    this.finger = undefined
    this.top = node
  }

  get(k: K): V | undefined {
    this.seal()
    return treeGet(this.top, k)
  }

  /** The revision stored with k (a tree that carries revisions); -1 when k is absent. */
  revisionOf(k: K): number {
    this.seal()
    return treeRevision(this.top, k)
  }

  /**
   * Inserts or replaces; returns the value it replaced (and its revision in `oldRevision`). With a
   * guard, writes only if guard(current value or undefined, its revision) is true; `rejected` tells
   * whether it refused. `rev`: the value's revision, in a tree that carries revisions.
   */
  set(k: K, v: V, guard?: SetGuard<V>, rev = 0): V | undefined {
    if (this.laterCount > 0) this.seal() // the shortcuts below assume no key awaits removal
    this.old = undefined
    this.oldRevision = -1
    // A key above every key (sequential loads; a bucket taking primary keys in order) is an append
    // to the open right edge: no descent, and the same tree the descent would build.
    const e = this.edgeLeaf
    const shortcuts = SET_SHORTCUTS.enabled
    if (!shortcuts) this.seal()
    else if (e !== undefined ? e.keys.length === 0 || less(e.keys[e.keys.length - 1]!, k) : this.size > 0 && less(lastKey(this.top), k)) {
      this.rejected = guard !== undefined && !guard(undefined, -1)
      if (!this.rejected) this.append(k, v, rev)
      return undefined
    }
    // A replacement in the leaf of the last replacement (a write-back in key order) needs no descent
    // either: the leaf is this writer's own, so the path to it is too, and no key changes.
    const f = this.finger
    if (shortcuts && f !== undefined && f.owner === this.owner) {
      const keys = f.keys
      const n = keys.length
      if (n > 0 && !less(k, keys[0]!) && !less(keys[n - 1]!, k)) {
        const i = lowerIndex(keys, k)
        if (keys[i] === k) {
          this.replace(f, i, v, guard, rev)
          return this.old
        }
      }
    }
    this.seal()
    this.rev = rev
    this.guard = guard
    this.rejected = false
    const root = this.own(this.top)
    const split = this.insert(root, k, v, true)
    if (this.rejected) {
      this.top = root
      return this.old
    }
    if (split) {
      this.top = { leaf: false, keys: [lastKey(root), lastKey(split)], children: [root, split], owner: this.owner, sharedKeys: false }
    } else {
      this.top = root
    }
    if (this.old === undefined) this.size++
    return this.old
  }

  /** The revision of the value being set (scratch of `set`, so `insert` keeps its arguments). */
  private rev = 0
  /**
   * The owned leaf of the last replacement, while it is surely in the tree: inserts never take a
   * leaf out; removals and `root =` may (they drop it); `publish` changes the owner (which drops it).
   */
  private finger: Leaf<K, V> | undefined = undefined

  // Replaces the value at i of an owned leaf, if the guard lets it (as `set` does).
  private replace(leaf: Leaf<K, V>, i: number, v: V, guard: SetGuard<V> | undefined, rev: number): void {
    const revs = leaf.revs
    if (revs !== undefined) this.oldRevision = revs[i]!
    this.old = leaf.vals[i]
    this.rejected = guard !== undefined && !guard(this.old, this.oldRevision)
    if (this.rejected) return
    leaf.vals[i] = v
    if (revs !== undefined) revs[i] = rev
  }

  /** Removes a key; returns the removed value (its revision in `oldRevision`). Copies nothing when the key is absent. */
  delete(k: K): V | undefined {
    this.seal()
    const found = treeGet(this.top, k)
    if (found !== undefined) this.deletePresent(k)
    return found
  }

  /** Removes a key the caller knows is present (one descent instead of two). */
  deletePresent(k: K): void {
    this.seal()
    this.finger = undefined
    let root = this.own(this.top)
    this.remove(root, k)
    while (!root.leaf && root.children.length === 1) root = this.own(root.children[0]!)
    this.top = root
    this.size--
  }

  /**
   * Removes a key the caller knows is present and not already removed, later: the keys gather until
   * the next seal (which every other method and a read of `root` make) and go in one sorted pass
   * (./bulkdelete.ts). `size` counts them gone at once. Removing keys one by one from the front of a
   * leaf moves the rest of it each time: a status bucket loses its oldest keys that way (10% of the
   * reconciler bench's profile).
   */
  deleteLater(k: K): void {
    ;(this.later ??= [])[this.laterCount++] = k
    this.size--
  }

  /** Keys `deleteLater` gathered (the first `laterCount`). */
  private later: K[] | undefined = undefined
  private laterCount = 0

  /** Gives this writer the array `deleteLater` gathers in (a table hands one writer's on to the next). */
  gatherIn(keys: K[]): void {
    if (this.laterCount > 0) throw new InternalError('statedb internal error: a new gather array while removals are pending')
    this.later = keys
  }

  /**
   * Hands over the array `deleteLater` gathered in, when nothing awaits removal (else undefined);
   * the writer lets go of it, so that no two writers ever gather in one array.
   */
  takeGathered(): K[] | undefined {
    if (this.laterCount > 0) return undefined
    const keys = this.later
    this.later = undefined
    return keys
  }

  // The gathered keys out, in one pass: sorted first unless they came in order (mostly they do:
  // the oldest revisions, a bucket's oldest keys).
  private deleteGathered(): void {
    const n = this.laterCount
    const keys = this.later!
    this.laterCount = 0
    let sorted = true
    let numbers = true
    for (let i = 0; i < n; i++) {
      const k = keys[i]!
      if (typeof k !== 'number') numbers = false
      if (i > 0 && sorted) sorted = less(keys[i - 1]!, k)
    }
    this.size += n // deleteSortedPresent counts them itself
    const oldRevision = this.oldRevision // a read that seals must not change what the last write found
    if (sorted) deleteSortedPresent(this, keys, n)
    else {
      const run = n === keys.length ? keys : keys.slice(0, n)
      run.sort(numbers ? (ascending as unknown as (a: K, b: K) => number) : byKey)
      deleteSortedPresent(this, run, n)
    }
    this.oldRevision = oldRevision
  }

  /** Removes every entry. */
  clear(): void {
    this.laterCount = 0
    this.seal()
    this.finger = undefined
    this.top = { leaf: true, keys: [], vals: [], revs: this.revs ? [] : undefined, owner: this.owner, sharedKeys: false }
    this.size = 0
  }

  /** Freezes what this writer built and returns it as an immutable tree. The writer stays usable. */
  publish(): Tree<K, V> {
    this.seal()
    if (this.keyIsValue) aliasValues(this.top, this.owner)
    this.owner = {}
    return { root: this.top, size: this.size }
  }

  /** @internal Every value is its own key (a bucket): published leaves share one array for both. */
  keyIsValue = false

  /**
   * Appends an entry whose key is above every key in the tree (the revision index's new revisions)
   * without a descent: the writer keeps the owned right edge open between appends, and splits as
   * `set` does, so the tree is the one `set` would build. Until `seal`, the right edge's branch keys
   * may lag behind: `root`, `get`, `delete` and `publish` seal first, and `set` does unless it appends.
   */
  append(k: K, v: V, rev = 0): void {
    let leaf = this.edgeLeaf
    if (leaf === undefined) leaf = this.openEdge()
    const n = leaf.keys.length
    if (n > 0 && !less(leaf.keys[n - 1]!, k)) throw new InternalError('statedb internal error: appending a key that is not above the tree')
    ownKeys(leaf).push(k)
    leaf.vals.push(v)
    if (leaf.revs !== undefined) leaf.revs.push(rev)
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
    if (this.laterCount > 0) this.deleteGathered()
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
    let node = this.own(this.top)
    this.top = node
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
      this.top = root
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
    if (node.leaf) {
      const revs = node.revs
      return {
        leaf: true,
        keys: node.keys,
        vals: node.vals.slice(),
        revs: revs === undefined ? undefined : revs.slice(),
        owner: this.owner,
        sharedKeys: true,
      } as N
    }
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
    const revs = leaf.revs === undefined ? undefined : leaf.revs.splice(0, cut)
    const right: Leaf<K, V> = { leaf: true, keys: leaf.keys, vals: leaf.vals, revs: leaf.revs, owner: this.owner, sharedKeys: false }
    leaf.keys = keys
    leaf.vals = vals
    leaf.revs = revs
    return right
  }

  // Splits an owned leaf at `cut` into two leaves of exact-size arrays; returns the right one.
  private splitLeaf(leaf: Leaf<K, V>, cut: number): Leaf<K, V> {
    const revs = leaf.revs
    const right: Leaf<K, V> = {
      leaf: true,
      keys: leaf.keys.slice(cut),
      vals: leaf.vals.slice(cut),
      revs: revs === undefined ? undefined : revs.slice(cut),
      owner: this.owner,
      sharedKeys: false,
    }
    leaf.keys = leaf.keys.slice(0, cut)
    leaf.vals = leaf.vals.slice(0, cut)
    if (revs !== undefined) leaf.revs = revs.slice(0, cut)
    return right
  }

  // Inserts below an owned node; returns a new right sibling when the node split. `edge`: the node is
  // on the tree's right edge (the last node of its level).
  private insert(node: TreeNode<K, V>, k: K, v: V, edge: boolean): TreeNode<K, V> | undefined {
    if (node.leaf) {
      const i = insertIndex(node.keys, k)
      if (i < node.keys.length && node.keys[i] === k) {
        this.replace(node, i, v, this.guard, this.rev)
        this.finger = node
        return undefined
      }
      const revs = node.revs
      if (this.guard !== undefined && !this.guard(undefined, -1)) {
        this.rejected = true
        return undefined
      }
      const appended = i === node.keys.length
      ownKeys(node)
      if (appended) {
        node.keys.push(k)
        node.vals.push(v)
        if (revs !== undefined) revs.push(this.rev)
      } else {
        node.keys.splice(i, 0, k)
        node.vals.splice(i, 0, v)
        if (revs !== undefined) revs.splice(i, 0, this.rev)
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
      const revs = node.revs
      if (revs !== undefined) {
        this.oldRevision = revs[i]!
        removeAt(revs, i)
      }
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

// A set's leaves (value = key) made by this writer keep one array for keys and values once frozen
// (a writer's copy, `own`, always copies the values, so no writer changes a shared array).
function aliasValues<K extends TreeKey, V>(node: TreeNode<K, V>, owner: Owner): void {
  if (node.owner !== owner) return
  if (node.leaf) {
    node.vals = node.keys as unknown as V[]
    return
  }
  for (const c of node.children) aliasValues(c, owner)
}

/**
 * The arrays a table's writers gather removals in (`deleteLater`): a writer's trees take one each
 * when they start removing and give it back when they publish, so a transaction of 1000 updates does
 * not grow fresh arrays of 1000 by pushes every time (about 30 B per update in the reconciler's
 * write-back, by scripts/profile-allocations.ts). One pool per table schema, shared by the revision
 * index and the buckets; a writer that aborts keeps its arrays, a very large one is let go.
 */
export class GatherPool {
  private readonly arrays: TreeKey[][] = []

  /** Gives the writer a pooled array, if there is one. */
  lend<K extends TreeKey, V>(w: TreeWriter<K, V>): void {
    const keys = this.arrays.pop()
    if (keys !== undefined) w.gatherIn(keys as K[])
  }

  /** Takes the writer's array back, once its removals are out (published or cleared). */
  reclaim<K extends TreeKey, V>(w: TreeWriter<K, V>): void {
    const keys = w.takeGathered()
    if (keys !== undefined && keys.length <= GATHER_MAX && this.arrays.length < GATHER_ARRAYS) this.arrays.push(keys)
  }
}

/** How many gather arrays a table keeps for its next writers, and the largest it keeps (64 KB). */
const GATHER_ARRAYS = 8
const GATHER_MAX = 8192
