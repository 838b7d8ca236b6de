// A table: a schema (primary and secondary indexes) and the operations on it. The data itself lives
// in snapshots (ReadTxn) and write transactions (WriteTxn); a table object only names it.
//
// Query semantics: get = first match; list = all matches of a key; prefix = keys starting with the
// key (strings and bytes are left open at the end); lowerBound = keys >= the key; all = every object
// in primary key order. Results are lazy and in index key order. Each has a *Watch variant whose
// watch fires when the result may have changed after the snapshot.

import { RevisionClock } from './clock.ts'
import { treeEach, treeGet, TreeIterator, type Tree, type TreeKey } from './btree.ts'
import { TableBatch } from './batch.ts'
import { ChangeIterator } from './changes.ts'
import type { Graveyard } from './graveyard.ts'
import type { Key } from './encoding.ts'
import { bucketEntries, bucketFirst, BucketsIterator, type Bucket } from './buckets.ts'
import { QueryError } from './errors.ts'
import { REVISION_INDEX, type Index, type Query } from './indexes.ts'
import { WatchRegistry } from './registry.ts'
import { Results } from './results.ts'
import { TableSchema } from './schema.ts'
import { emptyState, type Entry, type Initializer, type TableState, type TableView } from './state.ts'
import { ReadTxn, type Txn, type TxnHost, type WriteTxn } from './txn.ts'
import { deepFreeze, validating } from './validate.ts'
import { Watch } from './watch.ts'
import { TableWriter } from './writer.ts'

// What a lazy result iterates. A write transaction's trees change in place as it writes, so an
// iterator over them would skip or repeat entries when the transaction writes while it runs (the
// usual "for each match: delete it"): it iterates a frozen copy of them instead (what the
// transaction holds when the iteration starts; later writes copy the nodes they change). A writer
// that wrote nothing reads as its base state: its trees may still hold nodes it copied (a refused
// compare-and-swap copies the path it searched), which its later writes change in place.
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

/** How a query reaches an index: position 0 is the primary index, -1 the revision index. */
interface IndexRef {
  pos: number
  unique: boolean
}

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
  private readonly primaryName: string

  constructor(opts: TableOptions<Obj>) {
    this.schema = new TableSchema(opts.name, opts.primary, opts.indexes ?? [])
    this.name = opts.name
    this.primaryName = opts.primary.name
    this.refs.set(opts.primary.name, { pos: 0, unique: true })
    this.schema.secondary.forEach((idx, i) => this.refs.set(idx.name, { pos: i + 1, unique: idx.unique }))
    this.refs.set(REVISION_INDEX, { pos: -1, unique: true })
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
    if (q.index === this.primaryName) return treeGet(view.primary.root, q.encoded())?.object // the hot path
    return this.first(view, q)?.object
  }

  /** The first match with the revision of its last write. */
  getEntry(txn: Txn, q: Query<Obj>): Entry<Obj> | undefined {
    return this.first(txn.view(this), q)
  }

  getWatch(txn: Txn, q: Query<Obj>): [Obj | undefined, Watch] {
    const view = txn.view(this)
    return [this.first(view, q)?.object, this.keyWatch(txn, view, q)]
  }

  list(txn: Txn, q: Query<Obj>): Results<Obj> {
    const view = txn.view(this)
    return new Results(() => this.listIter(stable(view), q))
  }

  listWatch(txn: Txn, q: Query<Obj>): [Results<Obj>, Watch] {
    const view = txn.view(this)
    return [new Results(() => this.listIter(stable(view), q)), this.keyWatch(txn, view, q)]
  }

  prefix(txn: Txn, q: Query<Obj>): Results<Obj> {
    const view = txn.view(this)
    return new Results(() => this.prefixIter(stable(view), q))
  }

  prefixWatch(txn: Txn, q: Query<Obj>): [Results<Obj>, Watch] {
    const view = txn.view(this)
    const ref = this.ref(q)
    if (ref.pos < 0) throw new QueryError(`table "${this.name}": prefix queries do not apply to the revision index`)
    const p = q.encodedPrefix()
    // A number is a prefix only of itself: its prefix query is a key query.
    const watch =
      typeof p === 'number' ? this.keyWatch(txn, view, q) : this.isCurrent(txn, view) ? this.watches.prefix(ref.pos, p) : Watch.closed()
    return [new Results(() => this.prefixIter(stable(view), q)), watch]
  }

  lowerBound(txn: Txn, q: Query<Obj>): Results<Obj> {
    const view = txn.view(this)
    return new Results(() => this.lowerBoundIter(stable(view), q))
  }

  lowerBoundWatch(txn: Txn, q: Query<Obj>): [Results<Obj>, Watch] {
    const view = txn.view(this)
    return [new Results(() => this.lowerBoundIter(stable(view), q)), this.anyWatchOf(txn, view)]
  }

  all(txn: Txn): Results<Obj> {
    return this.allOf(txn.view(this))
  }

  allWatch(txn: Txn): [Results<Obj>, Watch] {
    const view = txn.view(this)
    return [this.allOf(view), this.anyWatchOf(txn, view)]
  }

  private allOf(view: TableView<Obj>): Results<Obj> {
    return new Results(
      () => new TreeIterator(stable(view).primary.root, undefined),
      (fn) => treeEach(stable(view).primary.root, fn),
      () => new TreeIterator(stable(view).primary.root, undefined, undefined, true) as unknown as Iterator<Obj>,
    )
  }

  /** The table's revision in this snapshot: grows with every insert and delete. */
  revision(txn: Txn): number {
    return txn.view(this).revision
  }

  /** Number of objects in this snapshot. */
  count(txn: Txn): number {
    return txn.view(this).primary.size
  }

  /** Whether every registered initializer is done, and a watch that fires when that becomes so. */
  initialized(txn: Txn): [boolean, Watch] {
    const view = txn.view(this)
    if (view.pendingInit.length === 0) return [true, Watch.closed()]
    const current = this.currentView(txn)
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
    return w.insert(obj)?.object
  }

  /** Inserts an object, or when one with its primary key exists, inserts merge(old, obj). */
  modify(txn: WriteTxn, obj: Obj, merge: (old: Obj, obj: Obj) => Obj): Obj | undefined {
    const w = txn.writer(this)
    const old = w.primary.get(this.schema.primaryKey(obj))
    const next = old === undefined ? obj : merge(old.object, obj)
    if (validating) deepFreeze(next)
    return w.insert(next)?.object
  }

  /**
   * Replaces the object only if the stored one was last written at `revision`. Returns false (and
   * changes nothing) when the object is gone or was written since.
   */
  compareAndSwap(txn: WriteTxn, revision: number, obj: Obj): boolean {
    const w = txn.writer(this)
    if (validating) deepFreeze(obj)
    w.insert(obj, revision)
    return !w.swapFailed
  }

  /** A handle for many writes to this table in `txn`, without the per-call lookups (./batch.ts). */
  batch(txn: WriteTxn): TableBatch<Obj> {
    return new TableBatch(txn, txn.writer(this))
  }

  /** Deletes the object with obj's primary key; returns the deleted object. */
  delete(txn: WriteTxn, obj: Obj): Obj | undefined {
    return txn.writer(this).delete(obj)?.object
  }

  /** Deletes the object only if it was last written at `revision`. */
  compareAndDelete(txn: WriteTxn, revision: number, obj: Obj): boolean {
    const w = txn.writer(this)
    const pk = this.schema.primaryKey(obj)
    const old = w.primary.get(pk)
    if (old === undefined || old.revision !== revision) return false
    w.deleteKey(pk)
    return true
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

  /** @internal After the commit released its locks: fires the watches the write closed. */
  notify(w: TableWriter<Obj>): void {
    if (w.revision !== w.base.revision) {
      const stale = w.changedAll || (w.changed === undefined && this.watches.hasKeyWatches())
      this.watches.fire(stale ? undefined : w.changed)
    }
    if (w.pendingInit.length === 0 && w.base.pendingInit.length > 0) this.watches.fireInitialized()
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

  private treeOf(view: TableView<Obj>, pos: number): Tree<TreeKey, unknown> {
    return (pos < 0 ? view.byRevision : pos === 0 ? view.primary : view.secondary[pos - 1]!) as Tree<TreeKey, unknown>
  }

  private revisionKey(q: Query<Obj>): number {
    if (typeof q.key !== 'number') throw new QueryError(`table "${this.name}": the revision index takes a number, got ${typeof q.key}`)
    return q.key
  }

  private first(view: TableView<Obj>, q: Query<Obj>): Entry<Obj> | undefined {
    const ref = this.ref(q)
    if (ref.pos < 0) return treeGet(view.byRevision.root, this.revisionKey(q))
    const tree = this.treeOf(view, ref.pos)
    if (ref.unique) return treeGet(tree.root, q.encoded()) as Entry<Obj> | undefined
    return bucketFirst(treeGet(tree.root, q.encoded()) as Bucket | undefined, view.primary.root)
  }

  private listIter(view: TableView<Obj>, q: Query<Obj>): Iterator<Entry<Obj>> {
    const ref = this.ref(q)
    if (ref.unique) {
      const e = this.first(view, q)
      return (e === undefined ? [] : [e])[Symbol.iterator]()
    }
    return bucketEntries(treeGet(this.treeOf(view, ref.pos).root, q.encoded()) as Bucket | undefined, view.primary.root)
  }

  private prefixIter(view: TableView<Obj>, q: Query<Obj>): Iterator<Entry<Obj>> {
    const ref = this.ref(q)
    if (ref.pos < 0) throw new QueryError(`table "${this.name}": prefix queries do not apply to the revision index`)
    const p = q.encodedPrefix()
    if (typeof p === 'number') return this.listIter(view, q) // a number is a prefix only of itself
    const root = this.treeOf(view, ref.pos).root
    if (ref.unique) return new TreeIterator(root, p, p) as Iterator<Entry<Obj>>
    return new BucketsIterator<Obj>(root as never, p, p, this.multiKey(ref.pos), view.primary.root)
  }

  private lowerBoundIter(view: TableView<Obj>, q: Query<Obj>): Iterator<Entry<Obj>> {
    const ref = this.ref(q)
    if (ref.pos < 0) return new TreeIterator(view.byRevision.root, this.revisionKey(q))
    const root = this.treeOf(view, ref.pos).root
    if (ref.unique) return new TreeIterator(root, q.encodedPrefix()) as Iterator<Entry<Obj>>
    return new BucketsIterator<Obj>(root as never, q.encodedPrefix(), undefined, this.multiKey(ref.pos), view.primary.root)
  }

  /** Whether objects may have several keys in a secondary index (then scans skip repeats). */
  private multiKey(pos: number): boolean {
    return pos > 0 && this.schema.secondary[pos - 1]!.multi !== undefined
  }

  private keyWatch(txn: Txn, view: TableView<Obj>, q: Query<Obj>): Watch {
    const ref = this.ref(q)
    if (ref.pos < 0) return this.anyWatchOf(txn, view)
    if (!this.isCurrent(txn, view) && !this.sameResult(txn, view, q)) return Watch.closed()
    return this.watches.key(ref.pos, q.encoded())
  }

  // For a stale snapshot: whether the query's result is still what the latest state holds, so the
  // watch may be registered without missing a change (checks up to 64 entries, else says no).
  private sameResult(txn: Txn, view: TableView<Obj>, q: Query<Obj>): boolean {
    const a = this.listIter(view, q)
    const b = this.listIter(this.currentView(txn), q)
    for (let i = 0; i < 64; i++) {
      const x = a.next()
      const xv = x.value
      const y = b.next()
      if (x.done || y.done) return !!x.done && !!y.done
      if (xv !== y.value) return false
    }
    return false
  }
}
