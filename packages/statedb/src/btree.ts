// A persistent (copy-on-write) B+tree mapping ordered keys to values: the nodes, the key order, the
// lookups and the node operations writers share. Keys are numbers and strings: numbers compare as
// numbers, strings by code units, and every number sorts before every string. The writer is in
// ./treewriter.ts, the iterators in ./treeiterator.ts and ./reverse.ts, bulk deletion in ./bulkdelete.ts.
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
// - a tree either carries revisions or not (`Leaf.revs`, decided when the tree is made, see
//   `emptyTree`): in one that does, every leaf has a `revs` array parallel to `keys` and `vals`
//   (the revision of the table write that stored each value: the primary index keeps its objects
//   in its leaves with their revisions, no entry object per write); in one that does not, no leaf
//   has one. Every operation that moves a value moves its revision with it.
// - between `TreeWriter.append` calls the branch keys along the right edge may lag behind the keys
//   below them; `seal` (which reading `root` and publishing make) restores the invariant.
import { InternalError } from './errors.ts'

export type TreeKey = string | number

export type Owner = object

export interface Leaf<K extends TreeKey, V> {
  leaf: true
  keys: K[]
  vals: V[]
  /** The revision of each value, parallel to `vals`, in a tree that carries revisions; else undefined. */
  revs: number[] | undefined
  owner: Owner | null
  /** `keys` is another node's array: copy it before changing it (ownKeys). */
  sharedKeys: boolean
}

/** The revision of a leaf's value at `i`: its revs entry, or the key itself in the revision index (`revisionIsKey`), else 0. */
export function revisionAt(leaf: Leaf<TreeKey, unknown> | undefined, i: number, revisionIsKey: boolean): number {
  if (leaf === undefined) return 0
  const revs = leaf.revs
  if (revs !== undefined) return revs[i]!
  return revisionIsKey ? (leaf.keys[i] as number) : 0
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

// 64/8 rather than 48/12 (measured, scripts/ab-statedb.ts and the reconciler bench): fuller leaves
// after sequential loads (56 of 64) retain 6 B less per object in three trees, lookups and random
// replacements were no slower.
export const MAX = 64
export const MIN = 8

/** An immutable tree: the root and the number of entries. */
export interface Tree<K extends TreeKey, V> {
  readonly root: TreeNode<K, V>
  readonly size: number
}

/** An empty tree; `revisions`: its leaves carry a revision per value (the primary index). */
export function emptyTree<K extends TreeKey, V>(revisions = false): Tree<K, V> {
  return { root: { leaf: true, keys: [], vals: [], revs: revisions ? [] : undefined, owner: null, sharedKeys: false }, size: 0 }
}

/** Whether a tree's leaves carry revisions (its leftmost leaf tells: all do or none). */
export function carriesRevisions(root: TreeNode<TreeKey, unknown>): boolean {
  let node = root
  while (!node.leaf) node = node.children[0]!
  return node.revs !== undefined
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
export function insertIndex<K extends TreeKey>(keys: K[], k: K): number {
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

/** The leaf that holds k, or undefined when k is not in the tree (callers find k's slot with lowerIndex). */
export function leafWith<K extends TreeKey, V>(root: TreeNode<K, V>, k: K): Leaf<K, V> | undefined {
  let node = root
  while (!node.leaf) {
    const i = lowerIndex(node.keys, k)
    if (i === node.keys.length) return undefined
    node = node.children[i]!
  }
  const i = lowerIndex(node.keys, k)
  return i < node.keys.length && node.keys[i] === k ? node : undefined
}

/** The revision stored with k in a tree that carries revisions; -1 when k is absent. */
export function treeRevision<K extends TreeKey, V>(root: TreeNode<K, V>, k: K): number {
  const leaf = leafWith(root, k)
  return leaf === undefined ? -1 : leaf.revs![lowerIndex(leaf.keys, k)]!
}

// Where an overfull node splits: in half, or, when the insertion was at its end (sequential loads,
// and always in the revision index), leaving the left node seven-eighths full and the right one
// just above the minimum. Both halves are fresh arrays of their exact size (a spliced array keeps
// its old capacity, which a published node would carry forever), except from a writer's fifth split
// of the tree's last leaf after an append on: that leaf keeps its arrays, spare capacity and all,
// for the appends to come (`splitEdgeLeaf`). (A leaf that grew by an insert without splitting keeps
// its grown arrays too, as it always has.)
export function splitPoint(n: number, appended: boolean): number {
  return appended ? n - MIN - 1 : n >>> 1
}

// Removes one element in place (splice would allocate an array of the removed elements).
export function removeAt<T>(a: T[], i: number): void {
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
export function setKey<K extends TreeKey, V>(node: TreeNode<K, V>, i: number, k: K): void {
  if (node.keys[i] !== k) ownKeys(node)[i] = k
}

export function mergeInto<K extends TreeKey, V>(left: TreeNode<K, V>, right: TreeNode<K, V>): void {
  ownKeys(left)
  for (const key of right.keys) left.keys.push(key)
  if (left.leaf) {
    const r = right as Leaf<K, V>
    for (const v of r.vals) left.vals.push(v)
    if (left.revs !== undefined) for (const rev of r.revs!) left.revs.push(rev)
  } else for (const c of (right as Branch<K, V>).children) left.children.push(c)
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
    if (left.leaf) {
      moveFront((right as Leaf<K, V>).vals, left.vals, n)
      if (left.revs !== undefined) moveFront((right as Leaf<K, V>).revs!, left.revs, n)
    } else moveFront((right as Branch<K, V>).children, left.children, n)
  } else {
    const n = left.keys.length - wantLeft
    moveBack(left.keys, right.keys, n)
    if (left.leaf) {
      moveBack(left.vals, (right as Leaf<K, V>).vals, n)
      if (left.revs !== undefined) moveBack(left.revs, (right as Leaf<K, V>).revs!, n)
    } else moveBack(left.children, (right as Branch<K, V>).children, n)
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
