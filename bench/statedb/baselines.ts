// The stores bench/statedb.ts runs side by side with statedb, on the same objects and workloads.
//
// - "Map": plain mutable Maps (one per index), no snapshots at all: the upper bound;
// - "immutable": `immutable` Maps (one per index; a non-unique index is a Map of key -> Map of primary
//   key -> object), `asMutable()` per transaction and `asImmutable()` at commit, so every commit
//   publishes a snapshot like statedb does;
// - "sorted-btree": the B+tree a JS engineer would pick (npm sorted-btree, default comparator and
//   node size): `clone()` (O(1), copy-on-write) of each index per transaction, the clone becomes the
//   published tree at commit, so every commit publishes a snapshot like statedb does. A non-unique
//   index is a tree of key -> tree of primary key -> object, inner trees cloned once per transaction.
//
// None keeps a revision index or change tracking, and the two Map-based ones keep no order (no prefix
// or lower-bound queries): every baseline does less work per write than statedb.
//
// Invariant: an insert reads the stored object only when it has a secondary index to update (the
// old object's tags must leave it); statedb does the same, so neither side does work the other skips.

import { Map as IMap } from 'immutable'
import sortedBtree from 'sorted-btree'

// sorted-btree is CommonJS with `exports.default = BTree`: under Node's ESM interop the default
// import is the exports object.
const BTree = sortedBtree.default
type BT<K, V> = import('sorted-btree').default<K, V>

export interface TestObject {
  readonly id: number
  readonly tags: readonly string[]
}

export interface BaselineTxn {
  get(id: number): TestObject | undefined
  insert(o: TestObject): void
  delete(o: TestObject): void
  commit(): void
}

export interface Baseline {
  readonly name: string
  txn(): BaselineTxn
  get(id: number): TestObject | undefined
  /** Objects with the tag (exact key: the Map-based baselines are not ordered, so no prefix search). */
  list(tag: string): Iterable<TestObject>
  all(): Iterable<TestObject>
  /** Calls fn for every object: each store's own fastest full scan. */
  each(fn: (o: TestObject) => void): void
  count(): number
}

/** Mutable Maps, no snapshots: the transaction is the store itself. */
class MapStore implements Baseline, BaselineTxn {
  readonly name = 'Map'
  private readonly primary = new Map<number, TestObject>()
  private readonly byTag: Map<string, Map<number, TestObject>> | undefined

  constructor(withTags: boolean) {
    this.byTag = withTags ? new Map() : undefined
  }
  txn(): BaselineTxn {
    return this
  }
  get(id: number): TestObject | undefined {
    return this.primary.get(id)
  }
  insert(o: TestObject): void {
    const byTag = this.byTag
    if (!byTag) {
      this.primary.set(o.id, o)
      return
    }
    const old = this.primary.get(o.id)
    this.primary.set(o.id, o)
    if (old) for (const t of old.tags) if (!o.tags.includes(t)) this.untag(t, o.id)
    for (const t of o.tags) {
      let m = byTag.get(t)
      if (!m) byTag.set(t, (m = new Map()))
      m.set(o.id, o)
    }
  }
  delete(o: TestObject): void {
    const old = this.primary.get(o.id)
    if (!old) return
    this.primary.delete(o.id)
    if (this.byTag) for (const t of old.tags) this.untag(t, o.id)
  }
  private untag(t: string, id: number): void {
    const m = this.byTag!.get(t)
    if (!m) return
    m.delete(id)
    if (m.size === 0) this.byTag!.delete(t)
  }
  commit(): void {}
  list(tag: string): Iterable<TestObject> {
    return this.byTag?.get(tag)?.values() ?? []
  }
  all(): Iterable<TestObject> {
    return this.primary.values()
  }
  each(fn: (o: TestObject) => void): void {
    this.primary.forEach(fn)
  }
  count(): number {
    return this.primary.size
  }
}

type IM<K, V> = IMap<K, V>

/** immutable Maps, one snapshot per transaction. */
class ImmutableStore implements Baseline {
  readonly name = 'immutable'
  primary: IM<number, TestObject> = IMap()
  byTag: IM<string, IM<number, TestObject>> | undefined

  constructor(withTags: boolean) {
    this.byTag = withTags ? IMap() : undefined
  }
  txn(): BaselineTxn {
    return new ImmutableTxn(this)
  }
  get(id: number): TestObject | undefined {
    return this.primary.get(id)
  }
  list(tag: string): Iterable<TestObject> {
    return this.byTag?.get(tag)?.values() ?? []
  }
  all(): Iterable<TestObject> {
    return this.primary.values()
  }
  each(fn: (o: TestObject) => void): void {
    this.primary.forEach((o) => void fn(o))
  }
  count(): number {
    return this.primary.size
  }
}

class ImmutableTxn implements BaselineTxn {
  private readonly primary: IM<number, TestObject>
  private readonly byTag: IM<string, IM<number, TestObject>> | undefined
  /** The inner maps this transaction made mutable. */
  private readonly inner = new Map<string, IM<number, TestObject>>()

  constructor(private readonly store: ImmutableStore) {
    this.primary = store.primary.asMutable()
    this.byTag = store.byTag?.asMutable()
  }
  get(id: number): TestObject | undefined {
    return this.primary.get(id)
  }
  private tagMap(t: string): IM<number, TestObject> {
    let m = this.inner.get(t)
    if (!m) this.inner.set(t, (m = (this.byTag!.get(t) ?? IMap<number, TestObject>()).asMutable()))
    return m
  }
  insert(o: TestObject): void {
    if (!this.byTag) {
      this.primary.set(o.id, o)
      return
    }
    const old = this.primary.get(o.id)
    this.primary.set(o.id, o)
    if (old) for (const t of old.tags) if (!o.tags.includes(t)) this.tagMap(t).delete(o.id)
    for (const t of o.tags) this.tagMap(t).set(o.id, o)
  }
  delete(o: TestObject): void {
    const old = this.primary.get(o.id)
    if (!old) return
    this.primary.delete(o.id)
    if (this.byTag) for (const t of old.tags) this.tagMap(t).delete(o.id)
  }
  commit(): void {
    this.store.primary = this.primary.asImmutable()
    if (this.byTag) {
      for (const [t, m] of this.inner) {
        if (m.size === 0) this.byTag.delete(t)
        else this.byTag.set(t, m.asImmutable())
      }
      this.store.byTag = this.byTag.asImmutable()
    }
  }
}

/** sorted-btree, one O(1) clone per index per transaction; the clone is published at commit. */
class BTreeStore implements Baseline {
  readonly name = 'sorted-btree'
  primary: BT<number, TestObject> = new BTree()
  byTag: BT<string, BT<number, TestObject>> | undefined

  constructor(withTags: boolean) {
    this.byTag = withTags ? new BTree() : undefined
  }
  txn(): BaselineTxn {
    return new BTreeTxn(this)
  }
  get(id: number): TestObject | undefined {
    return this.primary.get(id)
  }
  list(tag: string): Iterable<TestObject> {
    return this.byTag?.get(tag)?.values() ?? []
  }
  all(): Iterable<TestObject> {
    return this.primary.values()
  }
  each(fn: (o: TestObject) => void): void {
    this.primary.forEach((o) => void fn(o))
  }
  count(): number {
    return this.primary.size
  }
}

class BTreeTxn implements BaselineTxn {
  private readonly primary: BT<number, TestObject>
  private readonly byTag: BT<string, BT<number, TestObject>> | undefined
  /** The inner trees this transaction cloned (each written in place afterwards). */
  private readonly inner = new Map<string, BT<number, TestObject>>()

  constructor(private readonly store: BTreeStore) {
    this.primary = store.primary.clone()
    this.byTag = store.byTag?.clone()
  }
  get(id: number): TestObject | undefined {
    return this.primary.get(id)
  }
  private tagTree(t: string): BT<number, TestObject> {
    let m = this.inner.get(t)
    if (!m) {
      const cur = this.byTag!.get(t)
      m = cur ? cur.clone() : new BTree<number, TestObject>()
      this.inner.set(t, m)
      this.byTag!.set(t, m)
    }
    return m
  }
  insert(o: TestObject): void {
    if (!this.byTag) {
      this.primary.set(o.id, o)
      return
    }
    const old = this.primary.get(o.id)
    this.primary.set(o.id, o)
    if (old) for (const t of old.tags) if (!o.tags.includes(t)) this.tagTree(t).delete(o.id)
    for (const t of o.tags) this.tagTree(t).set(o.id, o)
  }
  delete(o: TestObject): void {
    const old = this.primary.get(o.id)
    if (!old) return
    this.primary.delete(o.id)
    if (this.byTag) for (const t of old.tags) this.tagTree(t).delete(o.id)
  }
  commit(): void {
    this.store.primary = this.primary
    if (this.byTag) {
      for (const [t, m] of this.inner) if (m.size === 0) this.byTag.delete(t)
      this.store.byTag = this.byTag
    }
  }
}

export const BASELINES: ReadonlyArray<(withTags: boolean) => Baseline> = [
  (t) => new MapStore(t),
  (t) => new ImmutableStore(t),
  (t) => new BTreeStore(t),
]
