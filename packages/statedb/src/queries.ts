// Reading one index of a table view by index position and encoded key: the first match, every
// match, a prefix, a lower bound, forwards or backwards. The table's queries (./table.ts) and the
// precise watch checks at commit (whether a watched key's result changed) both read through these.
//
// Invariants:
// - position 0 is the primary index, 1.. the secondary indexes, -1 the revision index;
// - readers yield objects with their revisions (a Cursor, ./state.ts): the primary index stores
//   both in its leaves, the revision index's key is the revision, and a secondary index holds
//   primary keys (unique: one per key; non-unique: buckets, ./buckets.ts) that resolve through the
//   view's primary tree, so every reader yields the objects of one view only;
// - on a non-unique index whose objects may have several keys, a scan yields each object once.

import { leafWith, lowerIndex, treeGet, type Tree, type TreeKey } from './btree.ts'
import { bucketFirst, bucketEntries, BucketsIterator, Resolving, Resolver, type Bucket } from './buckets.ts'
import type { EncodedKey } from './encoding.ts'
import { prefixEnd, ReverseTreeIterator } from './reverse.ts'
import { Entry, type Cursor, type TableView } from './state.ts'
import { TreeIterator } from './treeiterator.ts'

/** How a query reaches an index. */
export interface IndexRef {
  /** 0 primary, 1.. secondary, -1 the revision index. */
  readonly pos: number
  readonly unique: boolean
  /** Objects may have several keys in it (an index defined with `keys`): scans skip repeats. */
  readonly multi: boolean
}

/** A cursor over at most one object. */
class OneCursor<Obj> implements Cursor<Obj> {
  private done: boolean
  constructor(
    private readonly object: Obj | undefined,
    readonly revision: number,
  ) {
    this.done = object === undefined
  }
  next(): IteratorResult<Obj> {
    if (this.done) return DONE
    this.done = true
    return { done: false, value: this.object! }
  }
}

const DONE: IteratorResult<never> = { done: true, value: undefined }

export function indexTree<Obj>(view: TableView<Obj>, pos: number): Tree<TreeKey, unknown> {
  return (pos < 0 ? view.byRevision : pos === 0 ? view.primary : view.secondary[pos - 1]!) as Tree<TreeKey, unknown>
}

/** The object stored under a primary key, with its revision, as a cursor. */
function primaryMatch<Obj>(view: TableView<Obj>, pk: EncodedKey): Cursor<Obj> {
  const leaf = leafWith(view.primary.root, pk)
  if (leaf === undefined) return new OneCursor<Obj>(undefined, 0)
  const i = lowerIndex(leaf.keys, pk)
  return new OneCursor(leaf.vals[i], leaf.revs![i]!)
}

/** The first object whose key equals `key`. */
export function firstObject<Obj>(view: TableView<Obj>, ref: IndexRef, key: TreeKey): Obj | undefined {
  const pos = ref.pos
  if (pos === 0) return treeGet(view.primary.root, key as EncodedKey)
  if (pos < 0) return treeGet(view.byRevision.root, key as number)
  const found = treeGet(view.secondary[pos - 1]!.root, key as EncodedKey)
  if (ref.unique) return found === undefined ? undefined : treeGet(view.primary.root, found as EncodedKey)
  return bucketFirst(found as Bucket | undefined, view.primary.root)
}

/** The first match as an entry (made here: the indexes store no entries). */
export function firstEntry<Obj>(view: TableView<Obj>, ref: IndexRef, key: TreeKey): Entry<Obj> | undefined {
  const c = matchEntries(view, ref, key)
  const r = c.next()
  return r.done ? undefined : new Entry(r.value, c.revision)
}

/** Every object whose key equals `key`. */
export function matchEntries<Obj>(view: TableView<Obj>, ref: IndexRef, key: TreeKey): Cursor<Obj> {
  const pos = ref.pos
  if (pos === 0) return primaryMatch(view, key as EncodedKey)
  if (pos < 0) return new OneCursor(treeGet(view.byRevision.root, key as number), key as number)
  const found = treeGet(view.secondary[pos - 1]!.root, key as EncodedKey)
  if (ref.unique) return found === undefined ? new OneCursor<Obj>(undefined, 0) : primaryMatch(view, found as EncodedKey)
  return bucketEntries(found as Bucket | undefined, view.primary.root)
}

/** Every object whose key starts with `prefix` (a number is a prefix only of itself). */
export function prefixEntries<Obj>(view: TableView<Obj>, ref: IndexRef, prefix: EncodedKey): Cursor<Obj> {
  if (typeof prefix === 'number') return matchEntries(view, ref, prefix)
  return scan(view, ref, prefix, prefix)
}

/** Every object whose key is >= `from`. */
export function lowerBoundEntries<Obj>(view: TableView<Obj>, ref: IndexRef, from: TreeKey): Cursor<Obj> {
  return scan(view, ref, from, undefined)
}

function scan<Obj>(view: TableView<Obj>, ref: IndexRef, from: TreeKey, prefix: string | undefined): Cursor<Obj> {
  const pos = ref.pos
  const root = indexTree(view, pos).root
  if (pos <= 0) return new TreeIterator(root, from, prefix, pos < 0) as Cursor<Obj>
  if (ref.unique) return new Resolving(new TreeIterator(root as never, from as EncodedKey, prefix), new Resolver<Obj>(view.primary.root))
  return new BucketsIterator<Obj>(root as never, from as EncodedKey, prefix, ref.multi, view.primary.root)
}

/**
 * Descending scans of a unique index (undefined for a non-unique one: its results are reversed
 * by collecting them). `prefix`: keys starting with it; `from`: keys >= it; neither: every key.
 */
export function reverseEntries<Obj>(
  view: TableView<Obj>,
  ref: IndexRef,
  range: { prefix?: EncodedKey; from?: TreeKey },
): (() => Cursor<Obj>) | undefined {
  if (!ref.unique) return undefined
  const pos = ref.pos
  const root = indexTree(view, pos).root as never
  const { prefix, from } = range
  if (typeof prefix === 'number') return () => matchEntries(view, ref, prefix)
  const make =
    prefix !== undefined
      ? () => new ReverseTreeIterator<TreeKey, unknown>(root, prefixEnd(prefix), prefix, undefined, pos < 0)
      : () => new ReverseTreeIterator<TreeKey, unknown>(root, undefined, undefined, from, pos < 0)
  if (pos <= 0) return make as () => Cursor<Obj>
  return () => new Resolving(make() as Iterator<EncodedKey>, new Resolver<Obj>(view.primary.root))
}

/** Whether two readers yield the same objects at the same revisions (checks up to `limit`; beyond: says no). */
export function sameEntries<Obj>(a: Cursor<Obj>, b: Cursor<Obj>, limit = 64): boolean {
  for (let i = 0; i < limit; i++) {
    const x = a.next()
    const xv = x.value
    const xr = a.revision
    const y = b.next()
    if (x.done || y.done) return !!x.done && !!y.done
    if (xv !== y.value || xr !== b.revision) return false
  }
  return false
}
