// The immutable per-table state held by a snapshot, and the entry stored in every index.
//
// Invariants of a TableState:
// - `primary` holds one entry per object under its encoded primary key; `byRevision` holds the same
//   entries under their revisions; a unique secondary index holds them under their encoded
//   secondary keys, a non-unique one holds buckets of primary keys (./buckets.ts) under them;
// - every entry's revision is <= `revision`, and no two live entries share a revision;
// - a published TableState is never changed: a write transaction builds a new one.

import { emptyTree, type Tree, type TreeKey } from './btree.ts'
import type { EncodedKey } from './encoding.ts'

/** A non-unique index's bucket (buckets.ts): one primary key, or a tree of them once there are two. */
export type Bucket = EncodedKey | Tree<EncodedKey, EncodedKey>
/** A non-unique index: secondary key -> bucket. */
export type BucketTree = Tree<EncodedKey, Bucket>

/**
 * An object as stored: the object and the table revision of its last write. An entry is also the
 * change a change iterator reports for that write (`deleted` false), and a Tombstone the change for
 * a deletion: no change record is allocated per change. An entry does not keep its primary key (the
 * index holds it, and `schema.primaryKey` gives it again): one field less is 8 bytes less per
 * stored object and per write.
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

/** What reads need of a table, either from a snapshot or from a write transaction. */
export interface TableView<Obj> {
  readonly revision: number
  readonly primary: Tree<EncodedKey, Entry<Obj>>
  readonly byRevision: Tree<number, Entry<Obj>>
  /** Per secondary index: entries (unique) or buckets (non-unique) by encoded key. */
  readonly secondary: ReadonlyArray<Tree<EncodedKey, Entry<Obj>> | BucketTree>
  readonly pendingInit: readonly Initializer[]
}

export type TableState<Obj> = TableView<Obj>

export function emptyState<Obj>(secondaryCount: number): TableState<Obj> {
  const secondary: Tree<EncodedKey, any>[] = []
  for (let i = 0; i < secondaryCount; i++) secondary.push(emptyTree())
  return { revision: 0, primary: emptyTree(), byRevision: emptyTree(), secondary, pendingInit: [] }
}

export type AnyTree = Tree<TreeKey, unknown>
