// The immutable per-table state held by a snapshot, and the records readers are handed (an entry:
// an object with its revision; a tombstone: a deletion).
//
// Invariants of a TableState:
// - `primary` holds every object under its encoded primary key, in its leaves, with the revision of
//   its last write beside it (a tree that carries revisions, ./btree.ts): no entry object is stored;
// - `byRevision` holds the same objects under those revisions; a unique secondary index holds the
//   primary key of the object under each of its encoded secondary keys, a non-unique one buckets of
//   primary keys (./buckets.ts): both resolve through the primary index of the same state;
// - every revision is <= `revision`, and no two live objects share a revision;
// - a published TableState is never changed: a write transaction builds a new one.

import { emptyTree, type Tree, type TreeKey } from './btree.ts'
import type { EncodedKey } from './encoding.ts'

/** A non-unique index's bucket (buckets.ts): one primary key, or a tree of them once there are two. */
export type Bucket = EncodedKey | Tree<EncodedKey, EncodedKey>
/** A non-unique index: secondary key -> bucket. */
export type BucketTree = Tree<EncodedKey, Bucket>

/**
 * An object with the table revision of its last write, as readers ask for it (`getEntry`,
 * `Results.entries()`, a refused compare-and-swap) and as a change iterator reports a write
 * (`deleted` false); a Tombstone is the change for a deletion. Made when asked for: the indexes
 * store objects and revisions side by side, not entries.
 */
export class Entry<Obj> {
  /** Whether this records a deletion: false on the prototype (no field per stored entry). */
  declare readonly deleted: boolean

  constructor(
    readonly object: Obj,
    readonly revision: number,
  ) {}

  /** As a change record: what JSON of a change shows (`deleted` lives on the prototype). */
  toJSON(): { object: Obj; revision: number; deleted: boolean } {
    return { object: this.object, revision: this.revision, deleted: this.deleted }
  }
}
Object.defineProperty(Entry.prototype, 'deleted', { value: false })

/**
 * A deletion, kept in the graveyard for change iterators: the deleted object at the revision of its
 * deletion, and its encoded primary key (an iterator checks whether the key came back).
 */
export class Tombstone<Obj> extends Entry<Obj> {
  declare readonly deleted: boolean
  /** @internal The revision of a later deletion of the same key kept in the graveyard (0: none). */
  supersededAt = 0

  constructor(
    object: Obj,
    revision: number,
    /** @internal */ readonly key: EncodedKey,
  ) {
    super(object, revision)
  }
}
Object.defineProperty(Tombstone.prototype, 'deleted', { value: true })

/** A pending table initializer; identity matters, the name is for people. */
export interface Initializer {
  readonly name: string
}

/** A unique secondary index: secondary key -> the primary key of the object that has it. */
export type UniqueTree = Tree<EncodedKey, EncodedKey>

/** What reads need of a table, either from a snapshot or from a write transaction. */
export interface TableView<Obj> {
  readonly revision: number
  /** Objects by primary key, each with its revision (the tree carries revisions). */
  readonly primary: Tree<EncodedKey, Obj>
  /** Objects by revision. */
  readonly byRevision: Tree<number, Obj>
  /** Per secondary index: primary keys (unique) or buckets of them (non-unique) by encoded key. */
  readonly secondary: ReadonlyArray<UniqueTree | BucketTree>
  readonly pendingInit: readonly Initializer[]
}

/**
 * What index readers yield (./queries.ts): objects, in index order, with the revision of the one
 * last yielded in `revision` (read it before calling `next` again). TreeIterator is one.
 */
export interface Cursor<Obj> extends Iterator<Obj> {
  readonly revision: number
}

export type TableState<Obj> = TableView<Obj>

export function emptyState<Obj>(secondaryCount: number): TableState<Obj> {
  const secondary: Tree<EncodedKey, any>[] = []
  for (let i = 0; i < secondaryCount; i++) secondary.push(emptyTree())
  return { revision: 0, primary: emptyTree(true), byRevision: emptyTree(), secondary, pendingInit: [] }
}

export type AnyTree = Tree<TreeKey, unknown>
