// How a reflector's cluster objects become the rows of its table, on a relist and on watch events:
// - a cluster object becomes zero, one or several table objects (the transform; default: the object
//   itself, compacted); core Secrets (or `sensitive`) are marked sensitive whatever a transform made;
// - with a transform, the outputs of each source object are remembered (by namespace/name, with the
//   source's resourceVersion) so that a changed or deleted source removes its stale outputs;
// - a relist replaces in one transaction: the listed objects in, everything else this reflector owns
//   (queryAll, default the whole table) out; an object whose resourceVersion did not change is not
//   written again, and a row newer than the list (our own write's answer) is neither replaced by an
//   older listed version nor deleted (the watch from the list's resourceVersion brings its events);
// - one object's failure (a transform that throws, a refused insert) skips that object and is
//   reported through `objectFailed`; it never fails the transaction;
// - a watch event never replaces a newer version of its object, nor writes again the version stored
//   (numeric resourceVersions): a controller may have put the answer to its own write there first;
// - a deleted object is a deletion for the table's change iterators even when the table never held
//   it (its ADDED and DELETED coalesced in one batch): client-go's handlers get both events, and a
//   controller that created the object must learn that it is gone;
// - a transform's outputs keep their source's cause (the traced watch event or list that brought it).
import type { PendingEvent, RowWriter, Table, Txn, WriteTxn } from '@statewright/statedb'
import { causeOf, deleteRow, markSensitive, rememberCause } from '@statewright/statedb'
import { ReflectorError } from './errors.ts'
import { describe, namespacedName, newerResourceVersion, type KubeObject } from './gvk.ts'
import { MapPool, StringPool, compactObject, stripManagedFields } from './compact.ts'
import type { ReflectorOptions } from './reflector-options.ts'

type Transform<Obj> = (obj: KubeObject) => Obj | Obj[] | undefined | null

export class ReflectedRows<Obj> implements RowWriter<KubeObject> {
  readonly keyOf: (obj: Obj) => string
  private readonly table: Table<Obj>
  private readonly transform: Transform<Obj>
  private readonly merge: ((old: Obj, obj: Obj) => Obj) | undefined
  private readonly queryAll: ((txn: Txn) => Iterable<Obj>) | undefined
  /** Outputs per source object, kept when a transform is given (to delete stale outputs). */
  private readonly sources: Map<string, { rv: string | undefined; outs: Obj[] }> | undefined

  constructor(
    opts: ReflectorOptions<Obj>,
    private readonly name: string,
    private readonly objectFailed: (err: Error) => void,
  ) {
    this.table = opts.table
    this.merge = opts.merge
    this.queryAll = opts.queryAll
    this.keyOf = opts.key ?? ((obj: Obj) => namespacedName(obj as unknown as KubeObject))
    const keep = !!opts.keepManagedFields
    const sensitive = opts.sensitive ?? (opts.kind.kind === 'Secret' && opts.kind.apiVersion === 'v1')
    const pool = new StringPool()
    // Identical maps shared, not for sensitive objects: the pool's keys would keep their contents
    // (a Secret's last-applied-configuration annotation) after the objects are gone.
    const maps = opts.compact === false || sensitive ? undefined : new MapPool()
    // Objects come fresh from JSON.parse and are not shared yet: compact them in place.
    const transform: Transform<Obj> =
      opts.transform ??
      (opts.compact === false
        ? keep
          ? (obj) => obj as unknown as Obj
          : (obj) => stripManagedFields(obj) as unknown as Obj
        : (obj) => compactObject(obj, pool, keep, maps) as unknown as Obj)
    this.transform = sensitive ? (obj) => markAll(transform(obj)) : transform
    this.sources = opts.transform ? new Map() : undefined
  }

  /** The newest resourceVersion the server sent (a list's, an event's): a later list older than it is a restarted history. */
  private seenRv: string | undefined

  /**
   * The newest resourceVersion whose state the table holds: the last list's, or the newest watch
   * event written since (numeric resourceVersions; undefined before the first list).
   */
  get writtenResourceVersion(): string | undefined {
    return this.seenRv
  }

  /** The objects this reflector owns in the table. */
  count(txn: Txn): number {
    if (!this.queryAll) return this.table.count(txn)
    let n = 0
    for (const _ of this.queryAll(txn)) n++
    return n
  }

  /**
   * A relist: the listed objects in, everything else this reflector owns out, in `txn`; but a row
   * newer than the list (`listRv`: the answer to our own write, put there after the list was taken)
   * is neither replaced by an older listed version nor deleted: the watch from `listRv` brings its
   * events (deleting it would make a function that reads it act as if it were gone).
   */
  replace(txn: WriteTxn, items: Iterable<KubeObject>, listRv?: unknown): void {
    const table = this.table
    // a list older than what the server sent before is a server whose history restarted (a restore, a
    // new test server): then nothing of ours can be newer than it, and the list is the whole truth
    const reset = newerResourceVersion(this.seenRv, listRv)
    if (typeof listRv === 'string' && /^\d+$/.test(listRv)) this.seenRv = listRv
    const ownNewer = (rv: unknown) => !reset && newerResourceVersion(rv, listRv)
    if (!this.sources && !this.queryAll && table.count(txn) === 0) {
      // The first list into an empty table: nothing to compare with or delete. Lists come sorted by
      // key, and statedb packs nodes seven-eighths full on ascending inserts.
      for (const item of items) for (const o of this.outputs(item)) this.put(txn, o)
      return
    }
    const existing = new Map<string, Obj>()
    for (const obj of this.queryAll ? this.queryAll(txn) : table.all(txn)) existing.set(this.keyOf(obj), obj)
    const keep = new Set<string>()
    if (this.sources) {
      const old = this.sources
      const next = new Map<string, { rv: string | undefined; outs: Obj[] }>()
      for (const src of items) {
        const sk = namespacedName(src)
        const rv = src.metadata.resourceVersion
        const prev = old.get(sk)
        let outs: Obj[]
        if (prev && rv !== undefined && prev.rv === rv) outs = prev.outs
        else {
          outs = this.outputs(src)
          for (const o of outs) this.put(txn, o)
        }
        for (const o of outs) keep.add(this.keyOf(o))
        next.set(sk, { rv, outs })
      }
      old.clear()
      for (const [k, v] of next) old.set(k, v)
    } else {
      for (const src of items) {
        const outs = this.outputs(src)
        for (const o of outs) {
          const k = this.keyOf(o)
          keep.add(k)
          const cur = existing.get(k) as KubeObject | undefined
          const rv = (o as KubeObject).metadata?.resourceVersion
          if (cur && rv !== undefined && cur.metadata?.resourceVersion === rv) continue // unchanged
          if (cur && !this.merge && !reset && newerResourceVersion(cur.metadata?.resourceVersion, rv)) continue // our own newer write
          this.put(txn, o)
        }
      }
    }
    for (const [k, obj] of existing) {
      if (keep.has(k)) continue
      if (!this.sources && !this.merge && ownNewer((obj as KubeObject).metadata?.resourceVersion)) continue // written after the list
      table.delete(txn, obj)
    }
  }

  /** One coalesced batch of watch events (source namespace/name to its latest event), in `txn`. */
  apply(txn: WriteTxn, batch: ReadonlyMap<string, PendingEvent<KubeObject>>): void {
    const table = this.table
    for (const [sk, p] of batch) {
      const rv = p.object.metadata?.resourceVersion
      if (newerResourceVersion(rv, this.seenRv)) this.seenRv = rv!
      if (this.sources) {
        const prev = this.sources.get(sk)
        if (p.type === 'delete') {
          for (const o of prev?.outs ?? this.outputs(p.object)) deleteRow(this.table, txn, o)
          this.sources.delete(sk)
          continue
        }
        const outs = this.outputs(p.object)
        if (prev) {
          const keys = new Set(outs.map((o) => this.keyOf(o)))
          for (const o of prev.outs) if (!keys.has(this.keyOf(o))) table.delete(txn, o)
        }
        for (const o of outs) this.put(txn, o)
        this.sources.set(sk, { rv: p.object.metadata.resourceVersion, outs })
      } else if (p.type === 'delete') {
        for (const o of this.outputs(p.object)) deleteRow(this.table, txn, o)
      } else {
        for (const o of this.outputs(p.object)) if (!this.newerStored(txn, o)) this.put(txn, o)
      }
    }
  }

  /**
   * Whether the table already holds this version of the object or a newer one (numeric
   * resourceVersions): our own write's answer, put there before its watch event (the controller's
   * reads of its own writes). The event of the same version is not written again: it is no change.
   */
  private newerStored(txn: WriteTxn, obj: Obj): boolean {
    if (this.merge) return false
    const rv = (obj as KubeObject).metadata?.resourceVersion
    const cur = this.table.get(txn, this.table.primary.query(this.keyOf(obj) as never)) as KubeObject | undefined
    const have = cur?.metadata?.resourceVersion
    return have !== undefined && (have === rv || newerResourceVersion(have, rv))
  }

  private outputs(src: KubeObject): Obj[] {
    try {
      const out = this.transform(src)
      if (out === undefined || out === null) return []
      const outs = Array.isArray(out) ? out : [out]
      const cause = causeOf(src) // the watch event or list that brought it, when traced
      if (cause) for (const o of outs) if ((o as unknown) !== src) rememberCause(o, cause)
      return outs
    } catch (err) {
      this.objectFailed(new ReflectorError(`reflector ${this.name}: transform of ${safeDescribe(src)} failed: ${(err as Error).message}`))
      return []
    }
  }

  private put(txn: WriteTxn, obj: Obj): void {
    try {
      if (this.merge) this.table.modify(txn, obj, this.merge)
      else this.table.insert(txn, obj)
    } catch (err) {
      this.objectFailed(new ReflectorError(`reflector ${this.name}: cannot store an object: ${(err as Error).message}`))
    }
  }
}

function markAll<T>(out: T | T[] | undefined | null): T | T[] | undefined | null {
  for (const o of Array.isArray(out) ? out : [out]) if (typeof o === 'object' && o !== null) markSensitive(o)
  return out
}

function safeDescribe(obj: KubeObject): string {
  try {
    return describe(obj)
  } catch {
    return 'an object'
  }
}
