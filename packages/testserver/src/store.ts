// Storage: one statedb table per resource (storage key "group/plural"), primary key "namespace/name"
// (cluster-scoped objects: "/name"), so a namespace's objects are one key prefix and a full scan is in
// the order a real apiserver lists (etcd key order).
// Invariants:
// - resourceVersion comes from one global counter shared by all tables; every committed change takes
//   the next value, and the stored object carries it in metadata.resourceVersion.
// - Stored objects are immutable (statedb may freeze them): callers clone before changing anything.
// - Every commit is synchronous from the moment its version is taken until its event is published:
//   history and watchers therefore see events in version order, without gaps.
// - The history keeps the last `historySize` events; `compactedRv` is the newest version no longer
//   covered, so a watch may resume from any version >= compactedRv (older: 410 Expired).
import { DB, Table, defineIndex, type ReadTxn } from '@statewright/statedb'
import { TestServerError } from './errors.ts'

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED'
export interface StoreEvent {
  rv: number
  storageKey: string
  namespace: string
  type: EventType
  object: any
  /** The state before a MODIFIED or DELETED (selector transitions; reading a past version). */
  prev?: any
}
export type Listener = (ev: StoreEvent) => void

const byKey = defineIndex<any, string>({
  name: 'key',
  key: (o) => objectKey(o?.metadata?.namespace ?? '', o?.metadata?.name ?? ''),
  unique: true,
})
// Owner uids of each object: the garbage collector finds an owner's dependents without a full scan.
const byOwner = defineIndex<any, string>({
  name: 'owner',
  keys: (o) => (Array.isArray(o?.metadata?.ownerReferences) ? o.metadata.ownerReferences.map((r: any) => String(r?.uid ?? '')) : []),
})

export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`
}

/** A consistent read view: a statedb snapshot plus the global version it corresponds to. */
export interface Snapshot {
  rv: number
  txn: ReadTxn
}

export class Store {
  readonly db = new DB({ tables: [] })
  private readonly tables = new Map<string, Table<any>>()
  private rvCounter = 0
  private readonly history: StoreEvent[] = []
  private historyStart = 0 // index of the oldest kept event in a ring-less array (trimmed in chunks)
  compactedRv = 0
  private readonly listeners = new Map<string, Set<Listener>>()
  private tableSeq = 0

  constructor(readonly historySize = 10_000) {}

  get rv(): number {
    return this.rvCounter
  }

  /** Creates the table for a storage key if it does not exist yet. */
  ensure(storageKey: string): void {
    if (this.tables.has(storageKey)) return
    // table names allow letters, digits, '.', '_', '-': encode the key and keep it unique
    const name = `t${++this.tableSeq}-${storageKey.replace(/[^a-zA-Z0-9._-]/g, '_')}`.slice(0, 60)
    const t = new Table<any>({ name, primary: byKey, indexes: [byOwner] })
    this.db.register(t)
    this.tables.set(storageKey, t)
  }
  /** Forgets a table's contents (its CRD is gone); the statedb table itself is emptied, not removed. */
  async drop(storageKey: string): Promise<void> {
    const t = this.tables.get(storageKey)
    if (!t) return
    const w = await this.db.writeTxn(t)
    t.deleteAll(w)
    w.commit()
    this.tables.delete(storageKey)
  }
  has(storageKey: string): boolean {
    return this.tables.has(storageKey)
  }

  snapshot(): Snapshot {
    return { rv: this.rvCounter, txn: this.db.readTxn() }
  }

  private table(storageKey: string): Table<any> {
    const t = this.tables.get(storageKey)
    if (!t) throw new TestServerError(`no table for ${storageKey}`, 'Internal') // every registered kind has one (objects.ts)
    return t
  }

  get(storageKey: string, namespace: string, name: string, snap?: Snapshot): any {
    const t = this.tables.get(storageKey)
    if (!t) return undefined
    return t.get(snap?.txn ?? this.db.readTxn(), byKey.query(objectKey(namespace, name)))
  }

  /** Objects in key order, optionally one namespace, starting after key `after`. */
  *scan(storageKey: string, namespace: string | undefined, after: string | undefined, snap: Snapshot): Generator<[string, any]> {
    const t = this.tables.get(storageKey)
    if (!t) return
    let it: Iterable<any>
    if (after !== undefined) it = t.lowerBound(snap.txn, byKey.query(after + '\u0000'))
    else if (namespace !== undefined) it = t.prefix(snap.txn, byKey.query(namespace + '/'))
    else it = t.all(snap.txn)
    for (const o of it) {
      const ns = o.metadata?.namespace ?? ''
      if (namespace !== undefined && ns !== namespace) {
        if (after !== undefined && ns > namespace) return
        continue
      }
      yield [objectKey(ns, o.metadata.name), o]
    }
  }

  /** Every stored object (any table) with an ownerReference naming `uid`, as [storageKey, object]. */
  dependents(uid: string): Array<[string, any]> {
    const txn = this.db.readTxn()
    const out: Array<[string, any]> = []
    for (const [storageKey, t] of this.tables) for (const o of t.list(txn, byOwner.query(uid))) out.push([storageKey, o])
    return out
  }

  count(storageKey: string): number {
    const t = this.tables.get(storageKey)
    return t ? t.count(this.db.readTxn()) : 0
  }

  /**
   * Commits a batch of changes to one table. `change(put, del)` is given functions that stamp the next
   * resourceVersion on each object: put(obj) for creates/updates, del(obj) for deletes. Returns the
   * stored objects in order (deletes: the last state with the deletion's version).
   */
  write(storageKey: string, change: (put: (obj: any) => any, del: (obj: any) => any) => void): any[] {
    const t = this.table(storageKey)
    const w = this.db.tryWriteTxn(t)
    if (!w) throw new TestServerError(`table ${storageKey} is locked`, 'Internal') // never: all writes here are synchronous
    const events: StoreEvent[] = []
    const out: any[] = []
    try {
      change(
        (obj) => {
          const rv = ++this.rvCounter
          const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } }
          const prev = t.insert(w, stored)
          events.push({
            rv,
            storageKey,
            namespace: stored.metadata.namespace ?? '',
            type: prev ? 'MODIFIED' : 'ADDED',
            object: stored,
            ...(prev ? { prev } : {}),
          })
          out.push(stored)
          return stored
        },
        (obj) => {
          const rv = ++this.rvCounter
          const old = t.delete(w, obj)
          if (!old) {
            this.rvCounter--
            return undefined
          }
          const last = { ...old, metadata: { ...old.metadata, resourceVersion: String(rv) } }
          events.push({ rv, storageKey, namespace: last.metadata.namespace ?? '', type: 'DELETED', object: last, prev: old })
          out.push(last)
          return last
        },
      )
    } catch (err) {
      w.abort()
      // versions taken by the aborted batch are not reused: the counter only grows
      throw err
    }
    w.commit()
    for (const ev of events) this.publish(ev)
    return out
  }

  private publish(ev: StoreEvent): void {
    this.history.push(ev)
    if (this.history.length - this.historyStart > this.historySize) {
      this.compactedRv = this.history[this.historyStart]!.rv
      this.history[this.historyStart++] = undefined as never
      // trim in chunks so eviction stays O(1) amortized
      if (this.historyStart > 4096 && this.historyStart * 2 > this.history.length) {
        this.history.splice(0, this.historyStart)
        this.historyStart = 0
      }
    }
    const ls = this.listeners.get(ev.storageKey)
    if (ls) for (const l of ls) l(ev)
  }

  /** Events with version > rv for one storage key, or 'expired' when the history no longer covers rv. */
  since(storageKey: string, rv: number): StoreEvent[] | 'expired' {
    if (rv < this.compactedRv) return 'expired'
    const out: StoreEvent[] = []
    // binary search for the first event after rv
    let lo = this.historyStart,
      hi = this.history.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.history[mid]!.rv <= rv) lo = mid + 1
      else hi = mid
    }
    for (let i = lo; i < this.history.length; i++) {
      const ev = this.history[i]!
      if (ev.storageKey === storageKey) out.push(ev)
    }
    return out
  }

  /**
   * One table as it was at version `rv`, in key order: the current contents with every later event
   * undone (as etcd reads a past revision). 'expired' once the history no longer covers rv.
   */
  rowsAt(storageKey: string, rv: number): Array<[string, any]> | 'expired' {
    const later = this.since(storageKey, rv)
    if (later === 'expired') return 'expired'
    const rows = new Map<string, any>()
    for (const [k, o] of this.scan(storageKey, undefined, undefined, this.snapshot())) rows.set(k, o)
    for (let i = later.length - 1; i >= 0; i--) {
      const ev = later[i]!
      const key = objectKey(ev.namespace, ev.object.metadata.name)
      if (ev.type === 'ADDED') rows.delete(key)
      else rows.set(key, ev.prev)
    }
    return [...rows].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  }

  /** Drops the whole history: any resume from an older version gets 410 Expired. */
  compact(): void {
    this.compactedRv = this.rvCounter
    this.history.length = 0
    this.historyStart = 0
  }

  subscribe(storageKey: string, l: Listener): () => void {
    let ls = this.listeners.get(storageKey)
    if (!ls) this.listeners.set(storageKey, (ls = new Set()))
    ls.add(l)
    return () => {
      ls!.delete(l)
    }
  }
}
