// Non-unique indexes: secondary key -> bucket of the objects that have it.
//
// A bucket is the object's Entry itself while the key has one object (the common case of
// high-cardinality indexes costs one tree slot per object), and a tree of entries by primary key
// once it has two or more (low-cardinality indexes such as a status index: comparisons stay short,
// and no "secondary + primary" key strings are built per write).
//
// Invariants of a published index: every bucket tree has at least two entries; every entry in the
// bucket of key k has k among its keys, under its own primary key. Inside a write transaction a
// bucket being changed is a TreeWriter (it may hold 0 or 1 entries until publish normalizes it).

import { emptyTree, treeGet, TreeIterator, TreeWriter, validateTree, type Tree, type TreeNode } from './btree.ts'
import type { EncodedKey } from './encoding.ts'
import { Entry } from './state.ts'

export type Bucket<Obj> = Entry<Obj> | Tree<EncodedKey, Entry<Obj>>
export type BucketTree<Obj> = Tree<EncodedKey, Bucket<Obj>>

/** The first entry of a bucket, if any. */
export function bucketFirst<Obj>(b: Bucket<Obj> | undefined): Entry<Obj> | undefined {
  if (b === undefined || b instanceof Entry) return b
  const r = new TreeIterator(b.root, undefined).next()
  return r.done ? undefined : r.value
}

/** The entries of one bucket, in primary key order. */
export function bucketEntries<Obj>(b: Bucket<Obj> | undefined): Iterator<Entry<Obj>> {
  if (b === undefined) return EMPTY
  if (b instanceof Entry) return [b][Symbol.iterator]()
  return new TreeIterator(b.root, undefined)
}

const EMPTY: Iterator<never> = { next: () => ({ done: true, value: undefined }) }

/** Every entry of the buckets from `from` (and under `prefix`), in key order, each object once. */
export class BucketsIterator<Obj> implements Iterator<Entry<Obj>> {
  private readonly outer: TreeIterator<EncodedKey, Bucket<Obj>>
  private inner: TreeIterator<EncodedKey, Entry<Obj>> | undefined
  private readonly seen: Set<EncodedKey> | undefined

  /** `distinct`: objects may have several keys (an index defined with `keys`). */
  constructor(root: TreeNode<EncodedKey, Bucket<Obj>>, from: EncodedKey | undefined, prefix: string | undefined, distinct: boolean) {
    this.outer = new TreeIterator(root, from, prefix)
    this.seen = distinct ? new Set() : undefined
  }

  next(): IteratorResult<Entry<Obj>> {
    for (;;) {
      if (this.inner) {
        const r = this.inner.next()
        if (!r.done) {
          if (this.firstTime(r.value)) return r
          continue
        }
        this.inner = undefined
      }
      const o = this.outer.next()
      if (o.done) return o as IteratorResult<Entry<Obj>>
      const b = o.value
      if (b instanceof Entry) {
        if (this.firstTime(b)) return { done: false, value: b }
      } else {
        this.inner = new TreeIterator(b.root, undefined)
      }
    }
  }

  // An object with several keys in range is yielded at its first.
  private firstTime(e: Entry<Obj>): boolean {
    const seen = this.seen
    if (seen === undefined) return true
    if (seen.has(e.key)) return false
    seen.add(e.key)
    return true
  }
}

/** A non-unique index being changed by a write transaction. */
export class BucketsWriter<Obj> {
  readonly outer: TreeWriter<EncodedKey, Bucket<Obj>>
  /** Buckets turned into trees (or changed trees) in this transaction, by secondary key. */
  private readonly open = new Map<EncodedKey, TreeWriter<EncodedKey, Entry<Obj>>>()

  constructor(base: BucketTree<Obj>) {
    this.outer = new TreeWriter(base)
  }

  add(sk: EncodedKey, entry: Entry<Obj>): void {
    const w = this.open.get(sk)
    if (w !== undefined) {
      w.set(entry.key, entry)
      return
    }
    const pk = entry.key
    // One descent when the key is new or holds just this object (the common cases).
    const cur = this.outer.set(sk, entry, (b) => b === undefined || (b instanceof Entry && b.key === pk))
    if (!this.outer.rejected) return
    const tree = new TreeWriter<EncodedKey, Entry<Obj>>(cur instanceof Entry ? single(cur) : cur!)
    tree.set(pk, entry)
    this.open.set(sk, tree)
    this.outer.set(sk, tree)
  }

  remove(sk: EncodedKey, pk: EncodedKey): void {
    const w = this.open.get(sk)
    if (w !== undefined) {
      w.deletePresent(pk)
      return
    }
    const cur = this.outer.get(sk)
    if (cur instanceof Entry) {
      this.outer.deletePresent(sk)
      return
    }
    const tree = new TreeWriter<EncodedKey, Entry<Obj>>(cur!)
    tree.deletePresent(pk)
    this.open.set(sk, tree)
    this.outer.set(sk, tree)
  }

  clear(): void {
    this.open.clear()
    this.outer.clear()
  }

  /** Normalizes the changed buckets (empty: gone; one entry: inline) and freezes the index. */
  publish(): BucketTree<Obj> {
    for (const [sk, w] of this.open) {
      if (w.size === 0) this.outer.deletePresent(sk)
      else if (w.size === 1) this.outer.set(sk, bucketFirst(w)!)
      else this.outer.set(sk, w.publish())
    }
    this.open.clear()
    return this.outer.publish()
  }
}

function single<Obj>(e: Entry<Obj>): Tree<EncodedKey, Entry<Obj>> {
  const w = new TreeWriter<EncodedKey, Entry<Obj>>(emptyTree())
  w.set(e.key, e)
  return w.publish()
}

/** Checks a published non-unique index; returns how many (key, object) pairs it holds. */
export function validateBuckets<Obj>(tree: BucketTree<Obj>, what: string): number {
  validateTree(tree, what)
  let pairs = 0
  for (const b of new TreeIterator(tree.root, undefined)) {
    if (b instanceof Entry) {
      pairs++
      continue
    }
    validateTree(b, `${what} bucket`)
    if (b.size < 2) throw new Error(`${what}: a bucket tree of ${b.size} entries (want an inline entry)`)
    for (const e of new TreeIterator(b.root, undefined)) {
      if (treeGet(b.root, e.key) !== e) throw new Error(`${what}: bucket entry not under its primary key`)
      pairs++
    }
  }
  return pairs
}
