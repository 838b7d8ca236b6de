// Reading one index of a table view by index position and encoded key: the first match, every
// match, a prefix, a lower bound, forwards or backwards. The table's queries (./table.ts) and the
// precise watch checks at commit (whether a watched key's result changed) both read through these.
//
// Invariants:
// - position 0 is the primary index, 1.. the secondary indexes, -1 the revision index;
// - a unique index holds entries, a non-unique one buckets of primary keys (./buckets.ts) that
//   resolve through the view's primary tree, so every reader yields entries of one view only;
// - on an index whose objects may have several keys, a scan yields each object once.

import { treeGet, TreeIterator, type Tree, type TreeKey } from './btree.ts'
import { bucketEntries, bucketFirst, BucketsIterator, type Bucket } from './buckets.ts'
import type { EncodedKey } from './encoding.ts'
import { prefixEnd, ReverseTreeIterator } from './reverse.ts'
import type { Entry, TableView } from './state.ts'

/** How a query reaches an index. */
export interface IndexRef {
  /** 0 primary, 1.. secondary, -1 the revision index. */
  readonly pos: number
  readonly unique: boolean
  /** Objects may have several keys in it (an index defined with `keys`): scans skip repeats. */
  readonly multi: boolean
}

const NONE: Iterator<never> = { next: () => ({ done: true, value: undefined }) }

export function indexTree<Obj>(view: TableView<Obj>, pos: number): Tree<TreeKey, unknown> {
  return (pos < 0 ? view.byRevision : pos === 0 ? view.primary : view.secondary[pos - 1]!) as Tree<TreeKey, unknown>
}

export function firstEntry<Obj>(view: TableView<Obj>, ref: IndexRef, key: TreeKey): Entry<Obj> | undefined {
  const tree = indexTree(view, ref.pos)
  if (ref.unique) return treeGet(tree.root, key) as Entry<Obj> | undefined
  return bucketFirst(treeGet(tree.root, key) as Bucket | undefined, view.primary.root)
}

/** Every entry whose key equals `key`. */
export function matchEntries<Obj>(view: TableView<Obj>, ref: IndexRef, key: TreeKey): Iterator<Entry<Obj>> {
  if (ref.unique) {
    const e = firstEntry(view, ref, key)
    return e === undefined ? NONE : [e][Symbol.iterator]()
  }
  return bucketEntries(treeGet(indexTree(view, ref.pos).root, key) as Bucket | undefined, view.primary.root)
}

/** Every entry whose key starts with `prefix` (a number is a prefix only of itself). */
export function prefixEntries<Obj>(view: TableView<Obj>, ref: IndexRef, prefix: EncodedKey): Iterator<Entry<Obj>> {
  if (typeof prefix === 'number') return matchEntries(view, ref, prefix)
  const root = indexTree(view, ref.pos).root
  if (ref.unique) return new TreeIterator(root, prefix, prefix) as Iterator<Entry<Obj>>
  return new BucketsIterator<Obj>(root as never, prefix, prefix, ref.multi, view.primary.root)
}

/** Every entry whose key is >= `from`. */
export function lowerBoundEntries<Obj>(view: TableView<Obj>, ref: IndexRef, from: TreeKey): Iterator<Entry<Obj>> {
  const root = indexTree(view, ref.pos).root
  if (ref.unique) return new TreeIterator(root, from) as Iterator<Entry<Obj>>
  return new BucketsIterator<Obj>(root as never, from as EncodedKey, undefined, ref.multi, view.primary.root)
}

/**
 * Descending scans of a unique index (undefined for a non-unique one: its results are reversed
 * by collecting them). `prefix`: keys starting with it; `from`: keys >= it; neither: every key.
 */
export function reverseEntries<Obj>(
  view: TableView<Obj>,
  ref: IndexRef,
  range: { prefix?: EncodedKey; from?: TreeKey },
): (() => Iterator<Entry<Obj>>) | undefined {
  if (!ref.unique) return undefined
  const root = indexTree(view, ref.pos).root as never
  const { prefix, from } = range
  if (prefix !== undefined) {
    if (typeof prefix === 'number') return () => matchEntries(view, ref, prefix)
    return () => new ReverseTreeIterator<TreeKey, Entry<Obj>>(root, prefixEnd(prefix), prefix)
  }
  return () => new ReverseTreeIterator<TreeKey, Entry<Obj>>(root, undefined, undefined, from)
}

/** Whether two readers yield the same entries (checks up to `limit` of them; beyond: says no). */
export function sameEntries<Obj>(a: Iterator<Entry<Obj>>, b: Iterator<Entry<Obj>>, limit = 64): boolean {
  for (let i = 0; i < limit; i++) {
    const x = a.next()
    const xv = x.value
    const y = b.next()
    if (x.done || y.done) return !!x.done && !!y.done
    if (xv !== y.value) return false
  }
  return false
}
