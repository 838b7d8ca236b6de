// The changes one write transaction makes to one table.
//
// Invariants:
// - the unique checks of an insert run before it changes anything, so a failed insert leaves the
//   transaction as it was;
// - every insert and delete takes the next table revision;
// - `changed` records the encoded keys touched per index (0 = primary, 1.. = secondary) only while
//   someone watches keys of this table; otherwise commit fires every key watch of the table.

import { TreeIterator, TreeWriter } from './btree.ts'
import { BucketsWriter } from './buckets.ts'
import type { EncodedKey } from './encoding.ts'
import { UniqueConflictError } from './errors.ts'
import { Entry, type Initializer, type TableState, type TableView } from './state.ts'
import type { TableSchema } from './schema.ts'

export class TableWriter<Obj> implements TableView<Obj> {
  revision: number
  readonly primary: TreeWriter<EncodedKey, Entry<Obj>>
  readonly byRevision: TreeWriter<number, Entry<Obj>>
  /** Per secondary index: a tree writer (unique) or a buckets writer (non-unique). */
  private readonly writers: Array<TreeWriter<EncodedKey, Entry<Obj>> | BucketsWriter<Obj>>
  private readonly uniques: Array<TreeWriter<EncodedKey, Entry<Obj>> | undefined>
  /** What reads see: the secondary trees as this transaction has them now. */
  readonly secondary: TableView<Obj>['secondary']
  pendingInit: readonly Initializer[]
  /** Deleted entries, with the revision of their deletion, in order. */
  readonly deletes: Entry<Obj>[] = []
  /** Keys touched per index, or undefined when not recording. */
  changed: Set<EncodedKey>[] | undefined
  /** Every key may have changed (deleteAll). */
  changedAll = false
  dirty = false

  constructor(
    readonly schema: TableSchema<Obj>,
    readonly base: TableState<Obj>,
    recording: boolean,
  ) {
    this.revision = base.revision
    this.primary = new TreeWriter(base.primary)
    this.byRevision = new TreeWriter(base.byRevision)
    this.writers = base.secondary.map((t, i) => (schema.secondary[i]!.unique ? new TreeWriter(t as never) : new BucketsWriter(t as never)))
    this.uniques = this.writers.map((w) => (w instanceof TreeWriter ? w : undefined))
    this.secondary = this.writers.map((w) => (w instanceof TreeWriter ? w : w.outer))
    this.pendingInit = base.pendingInit
    if (recording) this.startRecording()
  }

  startRecording(): void {
    this.changed = []
    for (let i = 0; i <= this.writers.length; i++) this.changed.push(new Set())
  }

  /**
   * Inserts or replaces obj. With `expect`, only if the stored object was last written at that
   * revision (compare-and-swap): then returns undefined and sets `swapFailed` when it was not.
   * One descent of the primary tree either way.
   */
  insert(obj: Obj, expect?: number): Entry<Obj> | undefined {
    const schema = this.schema
    const pk = schema.primaryKey(obj)
    const n = this.writers.length
    let newKeys: EncodedKey[][] | undefined
    if (n > 0) {
      newKeys = new Array(n)
      for (let i = 0; i < n; i++) {
        const keys = schema.secondaryKeys(i, obj)
        newKeys[i] = keys
        if (schema.secondary[i]!.unique) {
          for (const k of keys) {
            const holder = this.uniques[i]!.get(k)
            if (holder !== undefined && holder.key !== pk) {
              if (expect !== undefined && this.primary.get(pk)?.revision !== expect) return this.refuseSwap()
              throw new UniqueConflictError(schema.name, schema.secondary[i]!.name, schema.describeKey(i, obj, k), schema.describeObject(holder.object), schema.describeObject(obj))
            }
          }
        }
      }
    }
    const entry = new Entry(obj, this.revision + 1, pk)
    let old: Entry<Obj> | undefined
    if (expect === undefined) old = this.primary.set(pk, entry)
    else {
      this.expect = expect
      old = this.primary.set(pk, entry, this.casGuard)
    }
    if (this.primary.rejected) return this.refuseSwap()
    this.swapFailed = false
    this.revision++
    this.dirty = true
    if (old !== undefined) this.byRevision.deletePresent(old.revision)
    this.byRevision.set(entry.revision, entry)
    const changed = this.changed
    if (changed) changed[0]!.add(pk)
    for (let i = 0; i < n; i++) {
      const keys = newKeys![i]!
      const w = this.writers[i]!
      if (old !== undefined) {
        const oldKeys = schema.secondaryKeys(i, old.object)
        for (const k of oldKeys.length > 1 ? new Set(oldKeys) : oldKeys) {
          if (keys.length === 1 ? keys[0] === k : keys.includes(k)) continue
          if (w instanceof TreeWriter) w.deletePresent(k)
          else w.remove(k, pk)
          if (changed) changed[i + 1]!.add(k)
        }
      }
      for (const k of keys) {
        if (w instanceof TreeWriter) w.set(k, entry)
        else w.add(k, entry)
        if (changed) changed[i + 1]!.add(k)
      }
    }
    return old
  }

  /** The last insert with `expect` found another revision (or no object) and wrote nothing. */
  swapFailed = false
  private expect = 0
  // One guard for every compare-and-swap of this writer (no closure per call).
  private readonly casGuard = (cur: Entry<Obj> | undefined): boolean => cur !== undefined && cur.revision === this.expect

  private refuseSwap(): undefined {
    this.swapFailed = true
    return undefined
  }

  delete(obj: Obj): Entry<Obj> | undefined {
    return this.deleteKey(this.schema.primaryKey(obj))
  }

  deleteKey(pk: EncodedKey): Entry<Obj> | undefined {
    const old = this.primary.delete(pk)
    if (old === undefined) return undefined
    this.dirty = true
    this.byRevision.deletePresent(old.revision)
    const changed = this.changed
    if (changed) changed[0]!.add(pk)
    for (let i = 0; i < this.writers.length; i++) {
      const w = this.writers[i]!
      const oldKeys = this.schema.secondaryKeys(i, old.object)
      for (const k of oldKeys.length > 1 ? new Set(oldKeys) : oldKeys) {
        if (w instanceof TreeWriter) w.deletePresent(k)
        else w.remove(k, pk)
        if (changed) changed[i + 1]!.add(k)
      }
    }
    this.deletes.push(new Entry(old.object, ++this.revision, pk))
    return old
  }

  deleteAll(): void {
    if (this.primary.size === 0) return
    for (const entry of new TreeIterator(this.primary.root, undefined)) {
      this.deletes.push(new Entry(entry.object, ++this.revision, entry.key))
    }
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
    return this.dirty ? this.snapshot() : this.base
  }
}
