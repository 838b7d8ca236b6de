// A PrimaryController's options, their validation and defaults: the primary's key, its spec (what a
// sync depends on) and the spec hash that decides whether a primary change needs a sync.
// Invariants:
// - Options are validated once, in the constructor, with a ConfigError naming the controller.
// - The default spec leaves out what a status write-back changes (status, resourceVersion,
//   managedFields, generation): a write-back must not trigger a sync of its own (no loop).
import type { Health, Logger, RetryOptions, TracerLike } from '@statewright/statedb'
import type { DB, ReadTxn, Table } from '@statewright/statedb'
import { createHash } from 'node:crypto'
import { ConfigError } from '@statewright/statedb'
import type { EventSink, PrimaryStatusWriter } from './contract.ts'
import type { SecondarySpec } from './contract.ts'

export interface SyncContext {
  /** The snapshot the primary was read from. */
  readonly txn: ReadTxn
  /** Aborted on stop, and when the sync runs past `syncTimeoutMs`. */
  readonly signal: AbortSignal
  readonly key: string
  /**
   * Reads one object of a declared joined table (options.joins) by its primary key, from the
   * sync's snapshot, and records the read: a later change of that object syncs this primary again.
   */
  get<T>(table: Table<T>, key: unknown): T | undefined
  /** Reads a whole joined table, recording it: any change of it syncs this primary again. */
  list<T>(table: Table<T>): T[]
}

export interface SyncResult<S = any> {
  secondaries: S[]
  /** Written back through `status` (when given). */
  status?: unknown
  /** Sync this key again after this long (not an error). */
  requeueAfterMs?: number
}

export interface PrimaryControllerOptions<P> {
  name: string
  /** The primaries' kind: the ownerkind stamp. */
  kind: string
  db: DB
  primaries: Table<P>
  /** The primary's key, the same as its key in the table's primary index (default: `key`, else namespace/name). */
  key?: (p: P) => string
  /** What a sync depends on; a change that leaves it equal (a status write) triggers nothing. Default: the primary without its status. */
  spec?: (p: P) => unknown
  secondaries: SecondarySpec[]
  /**
   * Read-only inputs a sync reads through `ctx.read`/`ctx.list` (a shared config, a catalogue): no
   * sync runs before they are initialized, and a change of what a primary read syncs it again.
   */
  joins?: Array<Table<any>>
  sync: (p: P, ctx: SyncContext) => SyncResult | Promise<SyncResult>
  /** A sync running longer than this is aborted (ctx.signal) and fails with a SyncError, retried with backoff (default 60 000 ms). */
  syncTimeoutMs?: number
  /**
   * Custom cleanup when a primary is deleted, run before its secondaries are deleted (Kumori's
   * delete hook); a throw is retried with backoff and the secondaries stay until it succeeds.
   */
  onDelete?: (key: string, ctx: { signal: AbortSignal }) => void | Promise<void>
  /** Most syncs at once (default 2). */
  concurrency?: number
  /** All primaries synced again and GC every this many ms (0: never; default 0). */
  resyncIntervalMs?: number
  /**
   * The keys the primary store holds now, read from the store itself (a NATS bucket's keys, a LIST):
   * GC then trusts the store over the primaries table, so the secondaries of a primary whose delete
   * the table missed (a delete marker gone from the stream while cut off) are collected, and the
   * primary is not synced again while the store lacks it.
   */
  primaryKeys?: (signal: AbortSignal) => Promise<Iterable<string>>
  /** GC every this many ms (default: 300 000 with primaryKeys, else only with resyncs). */
  gcIntervalMs?: number
  events?: EventSink
  /** The namespace of events about primaries that are not Kubernetes objects (default "default"). */
  eventNamespace?: string
  status?: PrimaryStatusWriter<P>
  /** The status written when a sync fails (default `{ ...status, error }`). */
  errorStatus?: (message: string, status: unknown) => unknown
  /** Stamp prefix: "statewright.io" (default) gives statewright.io/ownerkey; "kumori" gives Kumori's kumori/ownerkey. */
  stampPrefix?: string
  /** Backoff of failed syncs (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter 0.2). */
  retry?: RetryOptions
  /**
   * Logs failures outside a sync at error (a resync, GC, a key or spec function that threw, a status
   * write, a requeue), with `err`, the controller's name and kind, and the primary's key where there
   * is one; its work reconciler's loop failures too.
   */
  logger?: Logger
  /**
   * The tracer of every sync (a span `primary.sync` with the primary's key and kind, its error as
   * the span's status); default @opentelemetry/api's global tracer when that package is installed;
   * false: none.
   */
  tracer?: TracerLike | false
}

/** The controller's health: the shared `Health` and the keys in error. */
export interface PrimaryHealth extends Health {
  readonly errors: Array<{ key: string; error: string }>
}

export interface PrimaryControllerStats {
  syncs: number
  syncErrors: number
  created: number
  updated: number
  deleted: number
  garbage: number
  foreign: number
  requeues: number
  repairs: number
}

/** Throws a ConfigError for options a controller cannot run with. */
export function validateOptions<P>(opts: PrimaryControllerOptions<P>): void {
  if (!opts?.name) throw new ConfigError('PrimaryController: name is required')
  if (!opts.kind) throw new ConfigError(`PrimaryController "${opts.name}": kind is required`)
  if (!opts.db || !opts.primaries) throw new ConfigError(`PrimaryController "${opts.name}": db and primaries (a table) are required`)
  if (typeof opts.sync !== 'function') throw new ConfigError(`PrimaryController "${opts.name}": sync(primary, ctx) is required`)
  for (const [i, s] of (opts.secondaries ?? []).entries()) {
    if (!s.target || !s.observed || !Array.isArray(s.kinds) || s.kinds.length === 0) {
      throw new ConfigError(`PrimaryController "${opts.name}": secondaries[${i}] needs kinds, target and observed`)
    }
  }
}

/** The default key: a KV entry's `key`, else a Kubernetes object's namespace/name. */
export function defaultKey(p: unknown): string {
  const o = p as { key?: unknown; metadata?: { name?: string; namespace?: string } }
  if (typeof o.key === 'string') return o.key
  const m = o.metadata
  if (m?.name) return m.namespace ? `${m.namespace}/${m.name}` : m.name
  throw new ConfigError('PrimaryController: cannot tell the key of a primary: give options.key')
}

/** The default spec: a KV entry's value without its status, else a Kubernetes object without status and server-set metadata. */
export function defaultSpec(p: unknown): unknown {
  const o = p as Record<string, any>
  if (typeof o.key === 'string' && 'value' in o) {
    const v = o.value
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const { status: _s, ...rest } = v
      return rest
    }
    return v
  }
  const { status: _s, metadata, ...rest } = o
  if (metadata && typeof metadata === 'object') {
    const { resourceVersion: _rv, managedFields: _mf, generation: _g, ...meta } = metadata
    return { ...rest, metadata: meta }
  }
  return rest
}

/** The hash a work row keeps of a spec: an equal hash marks nothing. */
export function specHash(v: unknown): string {
  return createHash('sha1')
    .update(JSON.stringify(v) ?? 'undefined')
    .digest('base64')
}
