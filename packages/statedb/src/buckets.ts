// Non-unique indexes: secondary key -> bucket of the primary keys of the objects that have it.
//
// A bucket holds primary keys, not objects: an update that leaves an object's keys in this index as
// they were writes nothing here (the primary index has the new object and revision, and reads
// resolve primary keys through the primary index of the same snapshot; `Resolver` does that for
// unique secondary indexes too). Without that, every update rewrote a bucket leaf
// even when the key stayed (RandomReplace ran at half the speed of the same table without the index).
//
// A bucket is the primary key itself while the key has one object (the common case of
// high-cardinality indexes costs one tree slot per object), and a tree of primary keys (each the
// value of its own key) once it has two or more (low-cardinality indexes such as a status index).
//
// Invariants of a published index: every bucket tree has at least two entries; every primary key in
// the bucket of key k is in the primary index of the same state, and its object has k among its keys
// in this index. Inside a write transaction a bucket being changed is a TreeWriter (it may hold 0 or
// 1 entries until publish normalizes it).

import { InternalError } from './errors.ts'
import { emptyTree, less, lowerIndex, treeGet, type Leaf, type Tree, type TreeNode } from './btree.ts'
import { TreeIterator } from './treeiterator.ts'
import { GatherPool, TreeWriter } from './treewriter.ts'
import { validateTree } from './treecheck.ts'
import type { EncodedKey } from './encoding.ts'
import type { Bucket, BucketTree, Cursor } from './state.ts'

export type { Bucket, BucketTree }
/** The primary index that resolves a bucket's primary keys. */
export type PrimaryRoot<Obj> = TreeNode<EncodedKey, Obj>

const isTree = (b: Bucket): b is Tree<EncodedKey, EncodedKey> => typeof b === 'object'

function resolve<Obj>(primary: PrimaryRoot<Obj>, pk: EncodedKey): Obj {
  const e = treeGet(primary, pk)
  if (e === undefined) throw new InternalError('statedb internal error: a bucket holds a primary key the primary index lacks')
  return e
}

/**
 * Resolves primary keys through a primary index, remembering the leaf of the last one: a bucket's
 * keys come in primary key order, so the next one is mostly the next slot of the same leaf (a dense
 * bucket resolves at about the speed of a scan), else in the same leaf, else a descent from the root.
 */
export class Resolver<Obj> {
  private leaf: Leaf<EncodedKey, Obj> | undefined
  private i = 0
  constructor(private readonly root: PrimaryRoot<Obj>) {}

  /** The revision of the object the last `get` returned (read on demand: a scan that does not ask never touches the revisions). */
  get revision(): number {
    return this.leaf === undefined ? 0 : this.leaf.revs![this.i - 1]!
  }

  /** The object stored under pk (its revision in `revision`). */
  get(pk: EncodedKey): Obj {
    const leaf = this.leaf
    if (leaf !== undefined) {
      const keys = leaf.keys
      const n = keys.length
      // A few slots forward first (a bucket of every other object skips one), then a search.
      for (let i = this.i, end = Math.min(n, this.i + 4); i < end; i++) {
        if (keys[i] === pk) {
          this.i = i + 1
          return leaf.vals[i]!
        }
      }
      if (n > 0 && !less(keys[n - 1]!, pk) && !less(pk, keys[0]!)) {
        const j = lowerIndex(keys, pk)
        if (keys[j] === pk) {
          this.i = j + 1
          return leaf.vals[j]!
        }
      }
    }
    let node = this.root
    while (!node.leaf) {
      const c = lowerIndex(node.keys, pk)
      if (c === node.keys.length) break
      node = node.children[c]!
    }
    if (node.leaf) {
      const j = lowerIndex(node.keys, pk)
      if (node.keys[j] === pk) {
        this.leaf = node
        this.i = j + 1
        return node.vals[j]!
      }
    }
    throw new InternalError('statedb internal error: a bucket holds a primary key the primary index lacks')
  }
}

/** The first object of a bucket, if any. */
export function bucketFirst<Obj>(b: Bucket | undefined, primary: PrimaryRoot<Obj>): Obj | undefined {
  if (b === undefined) return undefined
  if (!isTree(b)) return resolve(primary, b)
  const r = new TreeIterator(b.root, undefined).next()
  return r.done ? undefined : resolve(primary, r.value)
}

/** The objects of one bucket, in primary key order. */
export function bucketEntries<Obj>(b: Bucket | undefined, primary: PrimaryRoot<Obj>): Cursor<Obj> {
  const keys: Iterator<EncodedKey> = b === undefined ? EMPTY : isTree(b) ? new TreeIterator(b.root, undefined) : [b][Symbol.iterator]()
  return new Resolving(keys, new Resolver(primary))
}

const EMPTY: Iterator<never> = { next: () => ({ done: true, value: undefined }) }

/** Primary keys to objects (with revisions). Reuses its result object, like TreeIterator. */
export class Resolving<Obj> implements Cursor<Obj> {
  private readonly result: { done: boolean; value: Obj } = { done: false, value: undefined as never }
  constructor(
    private readonly pks: Iterator<EncodedKey>,
    private readonly primary: Resolver<Obj>,
  ) {}
  get revision(): number {
    return this.primary.revision
  }
  next(): IteratorResult<Obj> {
    const r = this.pks.next()
    if (r.done) return r as IteratorResult<Obj>
    this.result.value = this.primary.get(r.value)
    return this.result
  }
}

/** Every object of the buckets from `from` (and under `prefix`), in key order, each object once. */
export class BucketsIterator<Obj> implements Cursor<Obj> {
  private readonly outer: TreeIterator<EncodedKey, Bucket>
  private inner: TreeIterator<EncodedKey, EncodedKey> | undefined
  private readonly seen: Set<EncodedKey> | undefined
  private readonly primary: Resolver<Obj>
  /** Reused: consumers read `value` before calling next again (as with TreeIterator). */
  private readonly result: { done: false; value: Obj } = { done: false, value: undefined as never }

  /** `distinct`: objects may have several keys (an index defined with `keys`). */
  constructor(
    root: TreeNode<EncodedKey, Bucket>,
    from: EncodedKey | undefined,
    prefix: string | undefined,
    distinct: boolean,
    primary: PrimaryRoot<Obj>,
  ) {
    this.primary = new Resolver(primary)
    this.outer = new TreeIterator(root, from, prefix)
    this.seen = distinct ? new Set() : undefined
  }

  get revision(): number {
    return this.primary.revision
  }

  next(): IteratorResult<Obj> {
    for (;;) {
      if (this.inner) {
        const r = this.inner.next()
        if (!r.done) {
          if (this.firstTime(r.value)) return this.yield(this.primary.get(r.value))
          continue
        }
        this.inner = undefined
      }
      const o = this.outer.next()
      if (o.done) return o as IteratorResult<Obj>
      const b = o.value
      if (!isTree(b)) {
        if (this.firstTime(b)) return this.yield(this.primary.get(b))
      } else {
        this.inner = new TreeIterator(b.root, undefined)
      }
    }
  }

  private yield(e: Obj): IteratorResult<Obj> {
    this.result.value = e
    return this.result
  }

  // An object with several keys in range is yielded at its first.
  private firstTime(pk: EncodedKey): boolean {
    const seen = this.seen
    if (seen === undefined) return true
    if (seen.has(pk)) return false
    seen.add(pk)
    return true
  }
}

/** A non-unique index being changed by a write transaction. */
export class BucketsWriter {
  readonly outer: TreeWriter<EncodedKey, Bucket>
  /** Buckets turned into trees (or changed trees) in this transaction, by secondary key. */
  private readonly open = new Map<EncodedKey, TreeWriter<EncodedKey, EncodedKey>>()

  /** The primary key `add` is adding (read by `inlineGuard`). */
  private adding: EncodedKey = ''
  /** Lets `add` write pk inline: the key is new or its bucket is pk itself. */
  private readonly inlineGuard = (b: Bucket | undefined): boolean => b === undefined || b === this.adding

  /** `pool`: the table's arrays for removals (a status bucket loses 1000 keys in a transaction). */
  constructor(
    base: BucketTree,
    private readonly pool: GatherPool = new GatherPool(),
  ) {
    this.outer = new TreeWriter(base)
  }

  // A writer for a bucket being changed, gathering its removals in a pooled array if there is one.
  private openBucket(sk: EncodedKey, base: Tree<EncodedKey, EncodedKey>): TreeWriter<EncodedKey, EncodedKey> {
    const w = new TreeWriter<EncodedKey, EncodedKey>(base)
    w.keyIsValue = true
    this.pool.lend(w)
    this.open.set(sk, w)
    this.outer.set(sk, w)
    return w
  }

  /** Adds pk to the bucket of sk (nothing changes when it is there already). */
  add(sk: EncodedKey, pk: EncodedKey): void {
    const w = this.open.get(sk)
    if (w !== undefined) {
      w.set(pk, pk)
      return
    }
    // One descent when the key is new or holds just this object (the common cases). The guard reads
    // pk from a field: a closure over it would cost a context and a function per call (80 B).
    this.adding = pk
    const cur = this.outer.set(sk, pk, this.inlineGuard)
    if (!this.outer.rejected) return
    this.openBucket(sk, isTree(cur!) ? cur : single(cur!)).set(pk, pk)
  }

  /** Removes pk (known to be there) from the bucket of sk. */
  remove(sk: EncodedKey, pk: EncodedKey): void {
    const w = this.open.get(sk)
    if (w !== undefined) {
      w.deleteLater(pk)
      return
    }
    const cur = this.outer.get(sk)!
    if (!isTree(cur)) {
      this.outer.deletePresent(sk)
      return
    }
    this.openBucket(sk, cur).deleteLater(pk)
  }

  clear(): void {
    this.open.clear()
    this.outer.clear()
  }

  /** Normalizes the changed buckets (empty: gone; one entry: inline) and freezes the index. */
  publish(): BucketTree {
    for (const [sk, w] of this.open) {
      if (w.size === 0) {
        this.outer.deletePresent(sk)
        w.clear() // its pending removals need not be carried out: the bucket is gone (and its array is free)
      } else if (w.size === 1) this.outer.set(sk, new TreeIterator(w.root, undefined).next().value as EncodedKey)
      else this.outer.set(sk, w.publish())
      this.pool.reclaim(w) // the removals are out: cleared, or sealed by `root` and `publish`
    }
    this.open.clear()
    return this.outer.publish()
  }
}

function single(pk: EncodedKey): Tree<EncodedKey, EncodedKey> {
  const w = new TreeWriter<EncodedKey, EncodedKey>(emptyTree())
  w.set(pk, pk)
  return w.publish()
}

/**
 * Checks a published non-unique index against the primary index of the same state: every primary
 * key resolves, and `hasKey(object, sk)` holds for its bucket's key. Returns the (key, object) pairs.
 */
export function validateBuckets<Obj>(
  tree: BucketTree,
  primary: PrimaryRoot<Obj>,
  hasKey: (obj: Obj, sk: EncodedKey) => boolean,
  what: string,
): number {
  validateTree(tree, what)
  let pairs = 0
  const check = (sk: EncodedKey, pk: EncodedKey) => {
    const e = treeGet(primary, pk)
    if (e === undefined) throw new InternalError(`${what}: bucket of ${String(sk)} holds a primary key the primary index lacks`)
    if (!hasKey(e, sk)) throw new InternalError(`${what}: bucket of ${String(sk)} holds an object without that key`)
    pairs++
  }
  const it = new TreeIterator(tree.root, undefined)
  for (let r = it.next(); !r.done; r = it.next()) {
    const b = r.value
    const sk = it.key!
    if (!isTree(b)) {
      check(sk, b)
      continue
    }
    validateTree(b, `${what} bucket`)
    if (b.size < 2) throw new InternalError(`${what}: a bucket tree of ${b.size} entries (want an inline key)`)
    const inner = new TreeIterator(b.root, undefined)
    for (let x = inner.next(); !x.done; x = inner.next()) {
      if (inner.key !== x.value) throw new InternalError(`${what}: bucket entry not under its own primary key`)
      check(sk, x.value)
    }
  }
  return pairs
}
