// What a reflector core is given: a source of events (a cluster's list and watch, a KV bucket's
// watch) and a writer of rows (how a source item becomes table rows). kube-rs's lesson: the source
// knows its protocol and nothing of tables, the writer knows rows and nothing of the protocol, and
// the core (core.ts) joins them: sessions, resume, relist, batching, backoff, health.
//
// Invariants of a source's session (`session(from, ctx)`):
// - `from` undefined: it lists, and yields exactly one `list` (every item there is, and the position
//   to resume from) before any `event`; `from` given: it resumes after that position, yielding only
//   `event`s and `bookmark`s;
// - it yields `watch` when its watch phase begins (before the request goes out: the inactivity bound
//   applies from there) and `connected` once the watch is established;
// - when the position cannot be resumed from (410 Gone, history purged, a server that went back in
//   time) it calls `ctx.listNext(why)` and ends: the core lists next, at once, and counts a relist
//   (however the session ended); any other throw is a failure the core retries with backoff;
// - it honours `ctx.signal`: once aborted (stop, a relist requested, a silent watch) it ends soon,
//   by returning or throwing.
import type { WriteTxn } from '../txn.ts'
import type { Table } from '../table.ts'

/** One event of a watch, coalesced by key in a batch: the latest of a key wins. */
export interface PendingEvent<T> {
  type: 'upsert' | 'delete'
  object: T
}

/** What a source's session yields. `P` is its position (a resourceVersion, a revision). */
export type SourceEvent<Item, P> =
  /** A complete list: it replaces the rows in one transaction; resume from `position`. */
  | { type: 'list'; items: Iterable<Item>; position: P }
  /** The watch phase begins: from here, silence longer than the inactivity bound restarts the session. */
  | { type: 'watch' }
  /** The watch is established (counted in `watches`; open for a second, it counts as working). */
  | { type: 'connected' }
  /** An item changed or went away; `position` (when given) is where to resume after it. */
  | { type: 'upsert' | 'delete'; key: string; item: Item; position?: P }
  /** Nothing changed, but the watch is alive (and at `position`, when given). */
  | { type: 'bookmark'; position?: P }

/** The core's side of one session, handed to the source. */
export interface SessionContext {
  /** Aborted when the session must end: a stop, a requested list, a silent watch. */
  readonly signal: AbortSignal
  /**
   * The next session lists instead of resuming (the source's history may be another one now).
   * `refused` says why this session's position cannot be resumed from: then it is a relist, at once,
   * and the session's end (a return or a throw) is no failure.
   */
  listNext(refused?: string): void
}

/** Where events come from. */
export interface ReflectorSource<Item, P> {
  /** One session: a list (from undefined) or a resume, then the watch until it ends. See the header. */
  session(from: P | undefined, ctx: SessionContext): AsyncIterable<SourceEvent<Item, P>>
}

/** How items become rows. Both run inside the core's write transaction and must not throw for one bad item. */
export interface RowWriter<Item> {
  /**
   * A list: the listed items' rows in, every other row this reflector owns out; `position` is where
   * the list was taken (a row written after it, the answer to a controller's own write, may stay).
   */
  replace(txn: WriteTxn, items: Iterable<Item>, position: unknown): void
  /** A batch of watch events, by key (the latest event of each key). */
  apply(txn: WriteTxn, batch: ReadonlyMap<string, PendingEvent<Item>>): void
}

/**
 * A watched deletion of `obj`, for a RowWriter: deletes its row; when the table holds none (the
 * object's creation and deletion came in one batch, coalesced to the deletion) it writes and deletes
 * the object in `txn`, leaving a deletion for the table's change iterators and no row. An informer's
 * handlers get both events: a controller that made the object must learn that it is gone. An object
 * the table cannot store (a unique key another row holds, an index that cannot key it) records nothing.
 */
export function deleteRow<Obj>(table: Table<Obj>, txn: WriteTxn, obj: Obj): void {
  if (table.delete(txn, obj) !== undefined) return
  try {
    table.insert(txn, obj)
  } catch {
    return
  }
  table.delete(txn, obj)
}
