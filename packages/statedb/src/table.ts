// A table: a schema (primary and secondary indexes) and the operations on it. The data itself lives
// in snapshots (ReadTxn) and write transactions (WriteTxn); a table object only names it.
//
// Query semantics: get = first match; list = all matches of a key; prefix = keys starting with the
// key (strings and bytes are left open at the end); lowerBound = keys >= the key; all = every object
// in primary key order. Results are lazy and in index key order. Each has a *Watch variant whose
// watch fires when the result may have changed after the snapshot.

import { RevisionClock } from './clock.ts'
import { treeGet, treeRevision } from './btree.ts'
import { treeEach, TreeIterator } from './treeiterator.ts'
import { TableBatch } from './batch.ts'
import { ChangeIterator } from './changes.ts'
import type { Graveyard } from './graveyard.ts'
import type { EncodedKey, Key } from './encoding.ts'
import { QueryError } from './errors.ts'
import { REVISION_INDEX, type Index, type Query } from './indexes.ts'
import {
  firstEntry,
  firstObject,
  lowerBoundEntries,
  matchEntries,
  prefixEntries,
  reverseEntries,
  sameEntries,
  type IndexRef,
} from './queries.ts'
import { WatchRegistry } from './registry.ts'
import { Results } from './results.ts'
import { TableSchema } from './schema.ts'
import { emptyState, Entry, type Initializer, type TableState, type TableView } from './state.ts'
import { ReadTxn, type Txn, type TxnHost, type WriteTxn } from './txn.ts'
import { deepFreeze, validating } from './validate.ts'
import { Watch } from './watch.ts'
import { TableWriter } from './writer.ts'

// What a lazy result iterates: the table as it was when the query was made, always. A write
// transaction's trees change in place as it writes, so an iterator over them would skip or repeat
// entries when the transaction writes while it runs (the usual "for each match: delete it"), and
// would see writes made after the query: a query in a write transaction takes a frozen copy of what
// the transaction holds at query time (later writes copy the nodes they change), as cilium clones
// at query time. A writer that wrote nothing reads as its base state: its trees may still hold nodes
// it copied (a refused compare-and-swap copies the path it searched), which later writes change.
function stable<Obj>(view: TableView<Obj>): TableView<Obj> {
  if (!(view instanceof TableWriter)) return view
  return view.dirty ? view.snapshot() : view.base
}

export interface TableOptions<Obj> {
  /** Table name: letters, digits, '.', '_', '-', starting with a letter. */
  name: string
  /** The primary index: unique, exactly one key per object. */
  primary: Index<Obj, any>
  /** Secondary indexes, unique or not. */
  indexes?: ReadonlyArray<Index<Obj, any>>
}

/** What a compare-and-swap or compare-and-delete did. */
export type SwapResult<Obj> =
  /** Written; `old` is the object it replaced or deleted. */
  | { readonly ok: true; readonly old: Obj }
  /** Nothing written: no object has this primary key. */
  | { readonly ok: false; readonly reason: 'notFound' }
  /** Nothing written: the object was written since `revision`; `current` is what is stored now. */
  | { readonly ok: false; readonly reason: 'revisionChanged'; readonly current: Entry<Obj> }

export class Table<Obj> {
  readonly name: string
  /** @internal */ readonly schema: TableSchema<Obj>
  /** @internal */ readonly watches: WatchRegistry
  /**
   * @internal The table's deletions in `db`. Each database keeps its own log for each of its tables:
   * a database numbers the table's revisions from 0, so one log shared by two would hand one's
   * deletions to the other's change iterators (and a log kept here would keep a database alive).
   */
  graveyardOf(db: TxnHost): Graveyard<Obj> {
    return db.graveyardOf(this) as Graveyard<Obj>
  }
  /** @internal When each revision was committed (approximately). */
  readonly clock = new RevisionClock()
  /** @internal The state of the table before its first write. */
  readonly empty: TableState<Obj>
  /** @internal The database this table was last registered with, and its id there (a cache of DB.tableId). */
  home: object | undefined = undefined
  /** @internal */ homeId = -1
  private readonly refs = new Map<string, IndexRef>()
  /** The refs by index position (0 primary, 1.. secondary). */
  private readonly byPos: IndexRef[] = []
  private readonly primaryName: string

  constructor(opts: TableOptions<Obj>) {
    this.schema = new TableSchema(opts.name, opts.primary, opts.indexes ?? [])
    this.name = opts.name
    this.primaryName = opts.primary.name
    this.byPos.push({ pos: 0, unique: true, multi: false })
    this.schema.secondary.forEach((idx, i) => this.byPos.push({ pos: i + 1, unique: idx.unique, multi: idx.multi !== undefined }))
    this.refs.set(opts.primary.name, this.byPos[0]!)
    this.schema.secondary.forEach((idx, i) => this.refs.set(idx.name, this.byPos[i + 1]!))
    this.refs.set(REVISION_INDEX, { pos: -1, unique: true, multi: false })
    this.watches = new WatchRegistry(this.schema.secondary.length + 1)
    this.empty = emptyState(this.schema.secondary.length)
  }

  /** The primary index (its `keyOf(obj)` gives an object's primary key). */
  get primary(): Index<Obj, Key> {
    return this.schema.primary
  }

  /** Names of the indexes, primary first. */
  get indexes(): string[] {
    return [this.schema.primary.name, ...this.schema.secondary.map((i) => i.name)]
  }

  /** @internal The index by name, for tools that take names as text. */
  indexNamed(name: string): Index<Obj, Key> | undefined {
    if (name === this.schema.primary.name) return this.schema.primary
    return this.schema.secondary.find((i) => i.name === name)
  }

  // ---- reads ----

  get(txn: Txn, q: Query<Obj>): Obj | undefined {
    const view = txn.view(this)
    if (q.index === this.primaryName) return treeGet(view.primary.root, q.encoded()) // the hot path: the object is in the leaf
    const ref = this.ref(q)
    return firstObject(view, ref, this.keyOf(ref, q))
  }

  /** The first match with the revision of its last write. */
  getEntry(txn: Txn, q: Query<Obj>): Entry<Obj> | undefined {
    const ref = this.ref(q)
    return firstEntry(txn.view(this), ref, this.keyOf(ref, q))
  }

  getWatch(txn: Txn, q: Query<Obj>): [Obj | undefined, Watch] {
    const view = txn.view(this)
    const ref = this.ref(q)
    return [firstObject(view, ref, this.keyOf(ref, q)), this.keyWatch(txn, view, q)]
  }

  list(txn: Txn, q: Query<Obj>): Results<Obj> {
    return this.listOf(stable(txn.view(this)), q)
  }

  listWatch(txn: Txn, q: Query<Obj>): [Results<Obj>, Watch] {
    const view = txn.view(this)
    return [this.listOf(stable(view), q), this.keyWatch(txn, view, q)]
  }

  prefix(txn: Txn, q: Query<Obj>): Results<Obj> {
    return this.prefixOf(stable(txn.view(this)), q)
  }

  prefixWatch(txn: Txn, q: Query<Obj>): [Results<Obj>, Watch] {
    const view = txn.view(this)
    const ref = this.ref(q)
    if (ref.pos < 0) throw new QueryError(`table "${this.name}": prefix queries do not apply to the revision index`)
    const p = q.encodedPrefix()
    // A number is a prefix only of itself: its prefix query is a key query.
    const watch =
      typeof p === 'number' ? this.keyWatch(txn, view, q) : this.isCurrent(txn, view) ? this.watches.prefix(ref.pos, p) : Watch.closed()
    return [this.prefixOf(stable(view), q), watch]
  }

  lowerBound(txn: Txn, q: Query<Obj>): Results<Obj> {
    return this.lowerBoundOf(stable(txn.view(this)), q)
  }

  lowerBoundWatch(txn: Txn, q: Query<Obj>): [Results<Obj>, Watch] {
    const view = txn.view(this)
    return [this.lowerBoundOf(stable(view), q), this.anyWatchOf(txn, view)]
  }

  all(txn: Txn): Results<Obj> {
    return this.allOf(stable(txn.view(this)))
  }

  allWatch(txn: Txn): [Results<Obj>, Watch] {
    const view = txn.view(this)
    return [this.allOf(stable(view)), this.anyWatchOf(txn, view)]
  }

  private allOf(view: TableView<Obj>): Results<Obj> {
    const root = view.primary.root
    return new Results(
      () => new TreeIterator(root, undefined),
      reverseEntries(view, this.byPos[0]!, {}),
      (fn) => treeEach(root, fn),
    )
  }

  private listOf(view: TableView<Obj>, q: Query<Obj>): Results<Obj> {
    const ref = this.ref(q)
    if (ref.pos < 0) {
      const key = this.revisionKey(q)
      return new Results(() => matchEntries(view, ref, key))
    }
    const key = q.encoded()
    return new Results(() => matchEntries(view, ref, key))
  }

  private prefixOf(view: TableView<Obj>, q: Query<Obj>): Results<Obj> {
    const ref = this.ref(q)
    if (ref.pos < 0) throw new QueryError(`table "${this.name}": prefix queries do not apply to the revision index`)
    const p = q.encodedPrefix()
    return new Results(() => prefixEntries(view, ref, p), reverseEntries(view, ref, { prefix: p }))
  }

  private lowerBoundOf(view: TableView<Obj>, q: Query<Obj>): Results<Obj> {
    const ref = this.ref(q)
    const from = ref.pos < 0 ? this.revisionKey(q) : q.encodedPrefix()
    return new Results(() => lowerBoundEntries(view, ref, from), reverseEntries(view, ref, { from }))
  }

  /** The table's revision in this snapshot: grows with every insert and delete. */
  revision(txn: Txn): number {
    return txn.view(this).revision
  }

  /** Number of objects in this snapshot. */
  count(txn: Txn): number {
    return txn.view(this).primary.size
  }

  /**
   * Whether every registered initializer is done in this snapshot, and a watch that fires when that
   * answer changes: when the table becomes initialized (or at once, when it already is in a newer
   * snapshot), and, for an initialized table, only when an initializer is registered again. So a
   * loop that waits on it beside other watches sleeps once the table is initialized (cilium's
   * channel is closed then: see docs/statedb.md, differences).
   */
  initialized(txn: Txn): [boolean, Watch] {
    const view = txn.view(this)
    const current = this.currentView(txn)
    if (view.pendingInit.length === 0) return [true, current.pendingInit.length === 0 ? this.watches.uninitialized() : Watch.closed()]
    if (current.pendingInit.length === 0) return [false, Watch.closed()]
    return [false, this.watches.initialized()]
  }

  /** Names of the initializers not done yet. */
  pendingInitializers(txn: Txn): string[] {
    return txn.view(this).pendingInit.map((i) => i.name)
  }

  // ---- writes ----

  /** Inserts or replaces an object (by primary key); returns the object it replaced. */
  insert(txn: WriteTxn, obj: Obj): Obj | undefined {
    const w = txn.writer(this)
    if (validating) deepFreeze(obj)
    return w.insert(obj)
  }

  /** Inserts an object, or when one with its primary key exists, inserts merge(old, obj). */
  modify(txn: WriteTxn, obj: Obj, merge: (old: Obj, obj: Obj) => Obj): Obj | undefined {
    const w = txn.writer(this)
    const old = w.primary.get(this.schema.primaryKey(obj))
    const next = old === undefined ? obj : merge(old, obj)
    if (validating) deepFreeze(next)
    return w.insert(next)
  }

  /**
   * Inserts the object and returns what it replaced, with a watch that fires when the object
   * inserted here is next written or deleted (cilium's InsertWatch). The watch never fires at this
   * transaction's own commit; it fires at once if the transaction aborts (nothing was inserted) or
   * writes the object again before it commits.
   */
  insertWatch(txn: WriteTxn, obj: Obj): [Obj | undefined, Watch] {
    const w = txn.writer(this)
    if (validating) deepFreeze(obj)
    const old = w.insert(obj)
    const watch = new Watch()
    ;(w.insertWatches ??= []).push({ key: this.schema.primaryKey(obj), revision: w.revision, watch })
    return [old, watch]
  }

  /**
   * Replaces the object only if the stored one was last written at `revision`. Says what happened:
   * written (with the object replaced), not found, or written since (with the current entry); only
   * a write changes anything. (A batch's compareAndSwap returns a boolean: the fast path.)
   */
  compareAndSwap(txn: WriteTxn, revision: number, obj: Obj): SwapResult<Obj> {
    const w = txn.writer(this)
    if (validating) deepFreeze(obj)
    const old = w.insert(obj, revision)
    if (!w.swapFailed) return { ok: true, old: old! }
    return this.refused(w, this.schema.primaryKey(obj))
  }

  /** A handle for many writes to this table in `txn`, without the per-call lookups (./batch.ts). */
  batch(txn: WriteTxn): TableBatch<Obj> {
    return new TableBatch(txn, txn.writer(this))
  }

  /** Deletes the object with obj's primary key; returns the deleted object. */
  delete(txn: WriteTxn, obj: Obj): Obj | undefined {
    return txn.writer(this).delete(obj)
  }

  /** Deletes the object only if it was last written at `revision`; says what happened, as compareAndSwap. */
  compareAndDelete(txn: WriteTxn, revision: number, obj: Obj): SwapResult<Obj> {
    const w = txn.writer(this)
    const pk = this.schema.primaryKey(obj)
    if (w.primary.revisionOf(pk) !== revision) return this.refused(w, pk)
    return { ok: true, old: w.deleteKey(pk)! }
  }

  private refused(w: TableWriter<Obj>, pk: EncodedKey): SwapResult<Obj> {
    const current = w.primary.get(pk)
    if (current === undefined) return NOT_FOUND
    return { ok: false, reason: 'revisionChanged', current: new Entry(current, w.primary.revisionOf(pk)) }
  }

  /** Deletes every object. */
  deleteAll(txn: WriteTxn): void {
    txn.writer(this).deleteAll()
  }

  /**
   * Registers an initializer: the table reports not initialized until the returned function has been
   * called (with a write transaction on this table). Register before starting anything that waits
   * for initialization, so it cannot see the table initialized too early.
   */
  registerInitializer(txn: WriteTxn, name: string): (txn: WriteTxn) => void {
    const w = txn.writer(this)
    const init: Initializer = { name }
    w.pendingInit = [...w.pendingInit, init]
    w.dirty = true
    return (done: WriteTxn) => {
      const dw = done.writer(this)
      if (!dw.pendingInit.includes(init)) return
      dw.pendingInit = dw.pendingInit.filter((i) => i !== init)
      dw.dirty = true
    }
  }

  /** @internal After a commit published `w`, before anything runs: the revision gets its time, the deletions go to the graveyard. */
  committed(graveyard: Graveyard<unknown>, w: TableWriter<Obj>, now: number): void {
    if (w.revision !== w.base.revision) this.clock.mark(w.revision, now)
    graveyard.append(w.deletes)
    graveyard.collect()
  }

  /**
   * @internal After the commit released its locks: fires the watches the write closed. Where the
   * writer recorded no keys (nobody watched that index when it began, or deleteAll), each watch is
   * checked against the results before and after: a watch fires only when its result changed.
   */
  notify(w: TableWriter<Obj>): void {
    if (w.revision !== w.base.revision) {
      this.watches.fire<TableView<Obj>>(w.changedAll ? undefined : w.changed, this, w.base, w)
    }
    if (w.pendingInit.length === 0 && w.base.pendingInit.length > 0) this.watches.fireInitialized()
    if (w.pendingInit.length > 0 && w.base.pendingInit.length === 0) this.watches.fireUninitialized()
    const inserted = w.insertWatches
    if (inserted !== undefined) {
      // Registered after this commit's watches fired: they fire at the next write of the key.
      for (const { key, revision, watch } of inserted) {
        if (treeRevision(w.primary.root, key) !== revision) watch.close()
        else this.watches.key(0, key).onClose(() => watch.close())
      }
    }
  }

  /** @internal Whether the result of a key (or prefix) of index `pos` differs between two states. */
  resultChanged(before: TableView<Obj>, after: TableView<Obj>, pos: number, key: EncodedKey, prefix: boolean): boolean {
    const ref = this.byPos[pos]!
    if (prefix) return !sameEntries(prefixEntries(before, ref, key), prefixEntries(after, ref, key))
    return !sameEntries(matchEntries(before, ref, key), matchEntries(after, ref, key))
  }

  /**
   * Epoch ms at which `revision` of this table was committed, within 100 ms; undefined for a
   * revision older than the times kept (the last 4096 windows of 100 ms with a commit).
   */
  revisionTime(revision: number): number | undefined {
    return this.clock.timeOf(revision)
  }

  /**
   * A change iterator: every current object, then every insert, update and delete after it, in
   * revision order. Close it when done (a dropped iterator is collected too, later). It starts at the
   * latest snapshot: `next()` with a snapshot older than that yields nothing (and a fired watch).
   */
  changes(txn: Txn): ChangeIterator<Obj> {
    const floor = this.currentView(txn).revision
    return new ChangeIterator<Obj>(this, txn.db, floor)
  }

  // ---- internals ----

  /** @internal A watch on any change after the snapshot (closed if it is already stale). */
  anyWatch(txn: ReadTxn): Watch {
    return this.anyWatchOf(txn, txn.view(this))
  }

  private anyWatchOf(txn: Txn, view: TableView<Obj>): Watch {
    return this.isCurrent(txn, view) ? this.watches.any() : Watch.closed()
  }

  private currentView(txn: Txn): TableView<Obj> {
    return txn.db.readTxn().view(this)
  }

  /**
   * Whether nothing was written to the table since the snapshot. A write transaction's own tables
   * are current (it holds their locks); the others it reads as they were when it began.
   */
  private isCurrent(txn: Txn, view: TableView<Obj>): boolean {
    if (!(txn instanceof ReadTxn) && txn.tables.includes(this)) return true
    return this.currentView(txn).revision === view.revision
  }

  private ref(q: Query<Obj>): IndexRef {
    const ref = this.refs.get(q.index)
    if (ref === undefined)
      throw new QueryError(`table "${this.name}" has no index "${q.index}" (indexes: ${[...this.refs.keys()].join(', ')})`)
    return ref
  }

  private revisionKey(q: Query<Obj>): number {
    if (typeof q.key !== 'number') throw new QueryError(`table "${this.name}": the revision index takes a number, got ${typeof q.key}`)
    return q.key
  }

  private keyOf(ref: IndexRef, q: Query<Obj>): EncodedKey {
    return ref.pos < 0 ? this.revisionKey(q) : q.encoded()
  }

  private keyWatch(txn: Txn, view: TableView<Obj>, q: Query<Obj>): Watch {
    const ref = this.ref(q)
    if (ref.pos < 0) return this.anyWatchOf(txn, view)
    // A stale snapshot: the watch may be registered only if the result is still what the latest
    // state holds (else a change would be missed).
    if (
      !this.isCurrent(txn, view) &&
      !sameEntries(matchEntries(view, ref, q.encoded()), matchEntries(this.currentView(txn), ref, q.encoded()))
    )
      return Watch.closed()
    return this.watches.key(ref.pos, q.encoded())
  }
}

const NOT_FOUND: SwapResult<never> = Object.freeze({ ok: false, reason: 'notFound' })
