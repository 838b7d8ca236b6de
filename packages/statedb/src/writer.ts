// The changes one write transaction makes to one table.
//
// Invariants:
// - the unique checks of an insert run before it changes anything, so a failed insert leaves the
//   transaction as it was;
// - every insert and delete takes the next table revision; an insert stores the object and that
//   revision side by side in the primary index's leaf and the object under the revision in the
//   revision index (no entry object per write);
// - a secondary index holds primary keys, so it is written only where the object's keys changed;
// - `changed` records the encoded keys touched per index (0 = primary, 1.. = secondary), only for the
//   indexes someone watched keys of when the transaction began; commit fires every key watch of an
//   index that has no record (watched since).

import { TreeIterator } from './treeiterator.ts'
import { TreeWriter, type SetGuard } from './treewriter.ts'
import { BucketsWriter } from './buckets.ts'
import type { EncodedKey } from './encoding.ts'
import { UniqueConflictError } from './errors.ts'
import { Tombstone, type Initializer, type TableState, type TableView } from './state.ts'
import type { TableSchema } from './schema.ts'
import type { Watch } from './watch.ts'

const hasKey = (keys: EncodedKey | EncodedKey[], k: EncodedKey): boolean => (typeof keys === 'object' ? keys.includes(k) : keys === k)

export class TableWriter<Obj> implements TableView<Obj> {
  revision: number
  readonly primary: TreeWriter<EncodedKey, Obj>
  /**
   * The revision index as the transaction has it. New revisions are appended to its open right edge
   * (TreeWriter.append: no descent per write); the revisions of replaced and deleted entries leave
   * it later (TreeWriter.deleteLater, in an array of the table's GatherPool), in one sorted pass when
   * the index is read or published, instead of one removal per write (updates mostly remove the
   * oldest revisions, from the front of a leaf).
   */
  readonly byRevision: TreeWriter<number, Obj>
  /** Per secondary index: a tree writer (unique) or a buckets writer (non-unique). */
  private readonly writers: Array<TreeWriter<EncodedKey, EncodedKey> | BucketsWriter>
  private readonly uniques: Array<TreeWriter<EncodedKey, EncodedKey> | undefined>
  /** What reads see: the secondary trees as this transaction has them now. */
  readonly secondary: TableView<Obj>['secondary']
  pendingInit: readonly Initializer[]
  /** Deleted entries, with the revision of their deletion, in order. */
  readonly deletes: Tombstone<Obj>[] = []
  /** Keys touched per index (undefined for an index not recorded), or undefined when none is. */
  changed: Array<Set<EncodedKey> | undefined> | undefined
  /** Every key may have changed (deleteAll). */
  changedAll = false
  /** Watches handed out by insertWatch, registered at commit (fired at abort). */
  insertWatches: Array<{ key: EncodedKey; revision: number; watch: Watch }> | undefined = undefined
  dirty = false

  constructor(
    readonly schema: TableSchema<Obj>,
    readonly base: TableState<Obj>,
    /** Per index position: record the keys touched (someone watches keys there); undefined: none. */
    recording: readonly boolean[] | undefined,
  ) {
    this.revision = base.revision
    this.primary = new TreeWriter(base.primary)
    this.byRevision = new TreeWriter(base.byRevision)
    this.writers = base.secondary.map((t, i) =>
      schema.secondary[i]!.unique ? new TreeWriter(t as never) : new BucketsWriter(t as never, schema.gatherPool),
    )
    this.uniques = this.writers.map((w) => (w instanceof TreeWriter ? w : undefined))
    this.secondary = this.writers.map((w) => (w instanceof TreeWriter ? w : w.outer))
    this.pendingInit = base.pendingInit
    schema.gatherPool.lend(this.byRevision)
    this.newKeys = new Array(this.writers.length)
    if (recording) this.changed = recording.map((on) => (on ? new Set<EncodedKey>() : undefined))
  }

  /**
   * Inserts or replaces obj; returns the object it replaced (its revision in `oldRevision`). With
   * `expect`, only if the stored object was last written at that revision (compare-and-swap): then
   * returns undefined and sets `swapFailed` when it was not. One descent of the primary tree either
   * way. A secondary index is written only where the object's keys changed (it holds primary keys).
   */
  insert(obj: Obj, expect?: number): Obj | undefined {
    const schema = this.schema
    const pk = schema.primaryKey(obj)
    const n = this.writers.length
    const newKeys = this.newKeys
    for (let i = 0; i < n; i++) {
      const keys = schema.secondaryKeysOf(i, obj)
      newKeys[i] = keys
      const u = this.uniques[i]
      if (u === undefined) continue
      for (const k of typeof keys === 'object' ? keys : [keys]) {
        const holder = u.get(k)
        // The holder is the primary key of the object that has k: this object's own, or a conflict.
        // (Recorded at write time, not derived again from a stored object: one mutated in place, a
        // misuse that validation mode catches, cannot pass as another's.)
        if (holder === undefined || holder === pk) continue
        if (expect !== undefined && this.primary.revisionOf(pk) !== expect) return this.refuseSwap()
        throw new UniqueConflictError(
          schema.name,
          schema.secondary[i]!.name,
          schema.describeKey(i, obj, k),
          schema.describeObject(this.primary.get(holder)!),
          schema.describeObject(obj),
        )
      }
    }
    const revision = this.revision + 1
    const primary = this.primary
    let old: Obj | undefined
    if (expect === undefined) old = primary.set(pk, obj, undefined, revision)
    else {
      this.expect = expect
      old = primary.set(pk, obj, (this.casGuard ??= this.newCasGuard()), revision)
    }
    if (primary.rejected) return this.refuseSwap()
    this.swapFailed = false
    this.revision = revision
    this.dirty = true
    if (old !== undefined) this.byRevision.deleteLater((this.oldRevision = primary.oldRevision))
    this.byRevision.append(revision, obj)
    const changed = this.changed
    if (changed) changed[0]?.add(pk)
    for (let i = 0; i < n; i++) {
      const keys = newKeys[i]!
      newKeys[i] = undefined // holds no object's keys past the write
      const oldKeys = old === undefined ? undefined : schema.secondaryKeysOf(i, old)
      const seen = changed?.[i + 1]
      if (oldKeys !== undefined) this.removeKeys(i, oldKeys, keys, pk)
      const u = this.uniques[i]
      if (u !== undefined) {
        if (typeof keys !== 'object') {
          if (oldKeys === undefined || !hasKey(oldKeys, keys)) u.set(keys, pk)
        } else for (const k of keys) if (oldKeys === undefined || !hasKey(oldKeys, k)) u.set(k, pk)
      } else {
        const b = this.writers[i] as BucketsWriter
        if (typeof keys !== 'object') {
          if (oldKeys === undefined || !hasKey(oldKeys, keys)) b.add(keys, pk)
        } else for (const k of keys) if (oldKeys === undefined || !hasKey(oldKeys, k)) b.add(k, pk)
      }
      // Key watches fire for every key the object has or had, changed or not: the object changed.
      if (seen) {
        if (typeof keys !== 'object') seen.add(keys)
        else for (const k of keys) seen.add(k)
      }
    }
    return old
  }

  /** The revision of the object the last insert replaced, or the last delete removed. */
  oldRevision = -1

  /** Per secondary index: the keys of the object being inserted (scratch, no array per write). */
  private readonly newKeys: Array<EncodedKey | EncodedKey[] | undefined>

  /** Removes pk from index i under the old keys it no longer has (each once). */
  private removeKeys(i: number, oldKeys: EncodedKey | EncodedKey[], keys: EncodedKey | EncodedKey[] | undefined, pk: EncodedKey): void {
    if (typeof oldKeys !== 'object') {
      if (keys === undefined || !hasKey(keys, oldKeys)) this.removeKey(i, oldKeys, pk)
      return
    }
    for (const k of oldKeys.length > 1 ? new Set(oldKeys) : oldKeys) if (keys === undefined || !hasKey(keys, k)) this.removeKey(i, k, pk)
  }

  private removeKey(i: number, k: EncodedKey, pk: EncodedKey): void {
    const u = this.uniques[i]
    if (u !== undefined) u.deletePresent(k)
    else (this.writers[i] as BucketsWriter).remove(k, pk)
    this.changed?.[i + 1]?.add(k)
  }

  /** The last insert with `expect` found another revision (or no object) and wrote nothing. */
  swapFailed = false
  private expect = 0
  // One guard for every compare-and-swap of this writer (no closure per call), made at the first one:
  // a writer that never swaps makes none (a closure per transaction shows in WriteTxn_1's profile).
  private casGuard: SetGuard<Obj> | undefined = undefined
  // Made here, not inline in `insert`: an arrow there that reads `this` makes V8 allocate a context
  // on every call of `insert`, guard or not (40 B per write, by scripts/profile-allocations.ts).
  private newCasGuard(): SetGuard<Obj> {
    return (cur, rev) => cur !== undefined && rev === this.expect
  }

  private refuseSwap(): undefined {
    this.swapFailed = true
    return undefined
  }

  /** Deletes the object with obj's primary key; returns the deleted object (its revision in `oldRevision`). */
  delete(obj: Obj): Obj | undefined {
    return this.deleteKey(this.schema.primaryKey(obj))
  }

  deleteKey(pk: EncodedKey): Obj | undefined {
    const old = this.primary.delete(pk)
    if (old === undefined) return undefined
    this.dirty = true
    this.byRevision.deleteLater((this.oldRevision = this.primary.oldRevision))
    const changed = this.changed
    if (changed) changed[0]?.add(pk)
    for (let i = 0; i < this.writers.length; i++) this.removeKeys(i, this.schema.secondaryKeysOf(i, old), undefined, pk)
    this.deletes.push(new Tombstone(old, ++this.revision, pk))
    return old
  }

  deleteAll(): void {
    if (this.primary.size === 0) return
    // The keys come from the index (no key function runs, so nothing can throw halfway).
    const it = new TreeIterator(this.primary.root, undefined)
    for (const obj of it) this.deletes.push(new Tombstone(obj, ++this.revision, it.key!))
    this.primary.clear()
    this.byRevision.clear()
    for (const w of this.writers) w.clear()
    this.changedAll = true
    this.dirty = true
  }

  /**
   * What the transaction holds now, frozen (for iterators): later writes copy what they change.
   * Costs O(1) per tree, plus the normalization of the buckets changed since the last freeze.
   */
  snapshot(): TableView<Obj> {
    return {
      revision: this.revision,
      primary: this.primary.publish(),
      byRevision: this.byRevision.publish(),
      secondary: this.writers.map((w) => w.publish()),
      pendingInit: this.pendingInit,
    }
  }

  /** The state this writer built, frozen; the base state when nothing changed. */
  publish(): TableState<Obj> {
    const state = this.dirty ? this.snapshot() : this.base
    // Its removal array, emptied by the snapshot, goes to the table's next writer.
    this.schema.gatherPool.reclaim(this.byRevision)
    return state
  }
}
