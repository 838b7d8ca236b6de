// How a NATS key-value reflector's entries become the rows of its table, on a relist and on watch
// entries:
// - an entry's bytes are decoded (default JSON.parse of UTF-8) and transformed (default the KvRow
//   itself); a value that does not decode, or a transform that throws, is a DecodeError naming
//   bucket, key and revision: that entry is skipped (a relist keeps the row the table had) and the
//   reflector keeps running;
// - DEL and PURGE delete the key's row; one of a key the table never held (its PUT in the same
//   batch) is still a deletion for the table's change iterators (without a transform);
// - the KV revision each key's row came from is remembered, so a relist writes only rows whose
//   revision changed (an idle verification writes nothing); with a transform, the object each key
//   produced is remembered too, to delete it when the key goes or its object's primary key changes;
// - a relist after the first that writes anything found what the watch had missed: `repaired`
//   counts those rows, and it is logged.
import type { KvEntry, KvWatchEntry } from '@nats-io/kv'
import type { PendingEvent, RowWriter, Table, WriteTxn } from '@statewright/statedb'
import { deleteRow, logTo } from '@statewright/statedb'
import { DecodeError } from './errors.ts'
import type { KvRow, NatsKvReflectorOptions } from './reflector-options.ts'

const textDecoder = new TextDecoder()
const jsonDecode = (b: Uint8Array): any => JSON.parse(textDecoder.decode(b))

export class KvReflectedRows<V, Obj> implements RowWriter<KvWatchEntry> {
  /** Rows relists after the first wrote or deleted (what the watch had missed). */
  repaired = 0
  private lists = 0
  private readonly table: Table<Obj>
  private readonly bucket: string
  /** A transform was given: rows are found through byKey, not by the entry's key. */
  private readonly transformed: boolean
  private readonly decode: (bytes: Uint8Array, entry: KvEntry) => V
  private readonly transform: (row: KvRow<V>) => Obj | undefined | null
  /** With a transform: the object each key produced (for deletes). */
  private readonly byKey = new Map<string, Obj>()
  /** The KV revision each key's row came from (a relist skips rows that did not change). */
  private readonly revOf = new Map<string, number>()

  constructor(
    private readonly opts: NatsKvReflectorOptions<V, Obj>,
    private readonly name: string,
    private readonly fail: (err: Error) => void,
  ) {
    this.table = opts.table
    this.bucket = opts.bucket
    this.transformed = !!opts.transform
    this.decode = opts.decode ?? jsonDecode
    this.transform = opts.transform ?? ((row) => row as unknown as Obj)
  }

  /** A list: the listed entries' rows in, every other row out, in `txn`; counts what a relist repaired. */
  replace(txn: WriteTxn, entries: Iterable<KvWatchEntry>): void {
    const changed = this.replaceRows(txn, entries)
    if (this.lists++ === 0 || changed === 0) return
    this.repaired += changed
    const fields = { reflector: this.name, bucket: this.bucket, rows: changed }
    logTo(this.opts.logger, 'warn', fields, 'a relist found rows the watch had not delivered')
  }

  /** One batch of watched entries (the latest of each key), in `txn`. */
  apply(txn: WriteTxn, batch: ReadonlyMap<string, PendingEvent<KvWatchEntry>>): void {
    for (const p of batch.values()) this.applyEntry(txn, p.object)
  }

  /** The listed entries' rows in, every other row out; returns how many rows it wrote or deleted. */
  private replaceRows(txn: WriteTxn, entries: Iterable<KvWatchEntry>): number {
    const t = this.table
    let changed = 0
    const keep = new Set<unknown>()
    for (const e of entries) {
      if (e.operation !== 'PUT') continue
      // unchanged since it was written: keep the row as it is (a verification writes nothing)
      const old = this.transformed ? this.byKey.get(e.key) : t.get(txn, t.primary.query(e.key as never))
      const same = this.transformed ? this.revOf.get(e.key) === e.revision : (old as KvRow | undefined)?.revision === e.revision
      if (same && old !== undefined) {
        keep.add(t.primary.keyOf(old))
        continue
      }
      const { obj, ok } = this.objectOf(e)
      if (!ok) {
        // keep what the table had for a key whose new value does not decode
        const old = this.transformed ? this.byKey.get(e.key) : t.get(txn, t.primary.query(e.key as never))
        if (old !== undefined) keep.add(t.primary.keyOf(old))
        continue
      }
      if (obj === undefined) continue
      this.put(txn, e.key, obj, e.revision)
      changed++
      keep.add(t.primary.keyOf(obj))
    }
    const stale: Obj[] = []
    for (const o of t.all(txn)) if (!keep.has(t.primary.keyOf(o))) stale.push(o)
    for (const o of stale) t.delete(txn, o)
    changed += stale.length
    if (this.transformed) {
      for (const [k, o] of this.byKey)
        if (!keep.has(t.primary.keyOf(o))) {
          this.byKey.delete(k)
          this.revOf.delete(k)
        }
    } else for (const o of stale) this.revOf.delete(String(t.primary.keyOf(o)))
    return changed
  }

  /** One watched entry, in `txn`: a PUT writes its row, DEL and PURGE delete it. */
  private applyEntry(txn: WriteTxn, e: KvEntry): void {
    if (e.operation === 'PUT') {
      const { obj, ok } = this.objectOf(e)
      if (ok) this.put(txn, e.key, obj, e.revision)
    } else {
      this.removeKey(txn, e.key, e.revision)
    }
  }

  /** The object an entry becomes (undefined: none; an error is reported and the entry skipped). */
  private objectOf(e: KvEntry): { obj: Obj | undefined; ok: boolean } {
    let value: V
    try {
      value = this.decode(e.value, e)
    } catch (err) {
      this.fail(
        new DecodeError(
          `bucket "${this.bucket}", key "${e.key}", revision ${e.revision}: cannot decode the value: ${(err as Error).message}`,
        ),
      )
      return { obj: undefined, ok: false }
    }
    try {
      return { obj: this.transform({ key: e.key, revision: e.revision, value }) ?? undefined, ok: true }
    } catch (err) {
      this.fail(
        new DecodeError(`bucket "${this.bucket}", key "${e.key}", revision ${e.revision}: transform failed: ${(err as Error).message}`),
      )
      return { obj: undefined, ok: false }
    }
  }

  /**
   * Deletes the key's row. A watched DEL or PURGE (`revision`) of a key the table does not hold (its
   * PUT and delete came in one batch) is still a deletion for the table's change iterators, without
   * a transform: its row `{ key, revision, value: undefined }` is written and deleted in `txn`,
   * leaving a tombstone and no row (a controller that wrote the key learns that it is gone). With a
   * transform there is no object to say it with.
   */
  private removeKey(txn: WriteTxn, key: string, revision?: number): void {
    this.revOf.delete(key)
    const t = this.table
    if (this.transformed) {
      const old = this.byKey.get(key)
      if (old !== undefined) {
        t.delete(txn, old)
        this.byKey.delete(key)
      }
      return
    }
    const row = { key, revision: revision ?? 0, value: undefined } as unknown as Obj
    if (revision === undefined) t.delete(txn, row)
    else deleteRow(t, txn, row)
  }

  private put(txn: WriteTxn, key: string, obj: Obj | undefined, revision: number): void {
    if (obj === undefined) return this.removeKey(txn, key)
    this.revOf.set(key, revision)
    if (this.transformed) {
      const old = this.byKey.get(key)
      if (old !== undefined && this.table.primary.keyOf(old) !== this.table.primary.keyOf(obj)) this.table.delete(txn, old)
      this.byKey.set(key, obj)
    }
    this.table.insert(txn, obj)
  }
}
