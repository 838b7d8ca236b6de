// Reconciler configuration: the operations on the target, how to read and write an object's
// status, and the knobs. `resolveConfig` fills the defaults and rejects bad configurations at
// construction with a message that names the option, so nothing fails later inside the loop.

import { ConfigError } from './errors.ts'
import { checkRateLimit, type RateLimitOptions } from './ratelimit.ts'
import { resolveRetry, type DB, type Key, type ReadTxn, type RetryOptions, type Table } from '@statewright/statedb'
import type { Metrics } from './metrics.ts'
import type { Logger } from '@statewright/statedb'
import type { Status, StatusIndex } from './status.ts'

/** What every operation gets besides the object. */
export interface OpContext {
  /** Aborted when the reconciler stops: long operations should give up. */
  readonly signal: AbortSignal
  /** The snapshot the object was read from (for looking up other tables without a call out). */
  readonly txn: ReadTxn
  /** True during full reconciliation. */
  readonly full: boolean
}

/** What Update and Delete get besides the object: the context and the object's revision. */
export interface ObjectOpContext extends OpContext {
  /**
   * Update: the table revision of the object as the operation got it (the one its result is written
   * back against). Delete: the revision of the deletion. Never 0. As cilium's Update and Delete get
   * it, and as `BatchEntry.revision`.
   */
  readonly revision: number
}

/**
 * How one object is reconciled. Update and Delete must be idempotent; deleting what is already gone
 * is success. An operation fails by throwing (or rejecting).
 */
export interface Operations<Obj> {
  /**
   * Makes the target hold `obj`. `obj` is a clone: the operation may set fields on it to record what
   * reconciliation produced (kept when the status is written back). Return true when the target had
   * to change: during full reconciliation that counts the object as out of sync.
   */
  update(obj: Obj, ctx: ObjectOpContext): boolean | void | Promise<boolean | void>
  /** Removes `obj` (the deleted object, as it last was in the table) from the target. */
  delete(obj: Obj, ctx: ObjectOpContext): void | Promise<void>
  /**
   * Removes from the target everything that is not in `desired` (every object of the table, in
   * primary key order; iterate it as often as needed). Run at the start of full reconciliation.
   */
  prune?(desired: Iterable<Obj>, ctx: OpContext): void | Promise<void>
  /**
   * Optional listing hook for full reconciliation: what the target holds now, as objects of the
   * table's shape (at least the primary key and what `inSync` compares). With it, a full
   * reconciliation diffs the desired objects against the listing: Update only for objects that are
   * missing or differ (and objects in error), Delete for listed objects the table does not hold,
   * instead of Update per object and `prune`. Needs `inSync`. A listing that fails is retried with
   * the reconciler's backoff; nothing is updated or deleted on a failed listing.
   */
  list?(ctx: OpContext): Iterable<Obj> | Promise<Iterable<Obj>>
  /**
   * With `list`: whether `listed` (the target's object with the same primary key) is what `desired`
   * wants. One that throws counts as "differs" (Update runs).
   */
  inSync?(desired: Obj, listed: Obj): boolean
}

/** One object of a batch; the operation sets `error` on the entries that failed. */
export interface BatchEntry<Obj> {
  readonly object: Obj
  readonly revision: number
  error?: unknown
  /** Set by updateBatch on entries whose target had to change (Update's `true`: out of sync in a full reconciliation). */
  changed?: boolean
}

/**
 * Optional batch operations, used for the new changes of a round (deletes first) and by full
 * reconciliation (its updates, and the deletes of what a listing found extra).
 */
export interface BatchOperations<Obj> {
  updateBatch(entries: BatchEntry<Obj>[], ctx: OpContext): void | Promise<void>
  deleteBatch(entries: BatchEntry<Obj>[], ctx: OpContext): void | Promise<void>
}

export interface RefreshOptions {
  /** Update done objects whose status is older than this, ms. */
  intervalMs: number
  /** At most this many objects are marked for refresh per second (default 100). */
  maxPerSecond?: number
}

/**
 * How often a reconciler repairs what drifted outside its table when nobody asks (a full
 * reconciliation): one default for the embedded reconciler and the Manager's (controller-runtime's
 * SyncPeriod plays this part).
 */
export const DEFAULT_FULL_RECONCILIATION_INTERVAL_MS = 300_000

export interface ReconcilerConfig<Obj> {
  db: DB
  /** The table of desired objects. */
  table: Table<Obj>
  /** The table's status index (newStatusIndex / newStatusSetIndex), which the table must have. */
  statusIndex: StatusIndex<Obj>
  /**
   * The object's key in the table's primary index. Used to look an object up again and to key the
   * retry queue. Default: the primary index's own key function (`table.primary.keyOf`).
   */
  primaryKey?: (obj: Obj) => Key
  /** Reconciler name: metrics label, health, and its name in a status set. Default: the table name. */
  name?: string
  /** Reads this reconciler's status from an object. */
  getObjectStatus: (obj: Obj) => Status
  /** Returns the object with this reconciler's status set; called on a clone, may mutate it. */
  setObjectStatus: (obj: Obj, status: Status) => Obj
  /** A shallow copy (default: same prototype, own properties copied). */
  cloneObject?: (obj: Obj) => Obj
  operations: Operations<Obj>
  batchOperations?: BatchOperations<Obj>
  /** Most objects per incremental round (default 1000). */
  roundSize?: number
  /** Backoff of failed objects (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter 0.2). */
  retry?: RetryOptions
  /**
   * Full reconciliation (prune, then Update of every object, or a diff against `operations.list`)
   * every this many ms (default DEFAULT_FULL_RECONCILIATION_INTERVAL_MS, 5 minutes, the Manager's
   * too); 0: only on demand.
   */
  fullReconciliationIntervalMs?: number
  /**
   * Prune alone every this many ms (cilium's PruneInterval); 0 or absent: none besides the others.
   * With `operations.prune`, a prune also runs as soon as the table is initialized, at each full
   * reconciliation and on `triggerPrune()`.
   */
  pruneIntervalMs?: number
  refresh?: RefreshOptions
  /**
   * Token buckets (`{ qps, burst }`, owned and stopped by the reconciler): `rounds` is waited on
   * before each round, `operations` before each operation.
   */
  rateLimit?: { rounds?: RateLimitOptions; operations?: RateLimitOptions }
  metrics?: Metrics
  /**
   * Logs failures that are not an object's (a health listener that threw, the loop failing) at
   * error, with `err` and `reconciler` (its name). Default: a process warning (process.emitWarning),
   * so a library never writes to the console.
   */
  logger?: Logger
  /**
   * @deprecated Use `logger`; removed in the next release. Told of the same failures when no
   * `logger` is given.
   */
  onError?: (err: unknown, what: string) => void
}

/** A reconciler's configuration with every default filled in (`Reconciler.config`). */
export interface ResolvedReconcilerConfig<Obj> {
  db: DB
  table: Table<Obj>
  statusIndex: StatusIndex<Obj>
  primaryKey: (obj: Obj) => Key
  name: string
  getObjectStatus: (obj: Obj) => Status
  setObjectStatus: (obj: Obj, status: Status) => Obj
  cloneObject: (obj: Obj) => Obj
  operations: Operations<Obj>
  batchOperations: BatchOperations<Obj> | undefined
  roundSize: number
  retry: Required<RetryOptions>
  fullIntervalMs: number
  pruneIntervalMs: number
  refreshIntervalMs: number
  refreshPerSecond: number
  rateLimit: { rounds?: RateLimitOptions; operations?: RateLimitOptions }
  metrics: Metrics | undefined
}

/** Plain objects are spread (fast); others keep their prototype. */
export function defaultClone<Obj>(obj: Obj): Obj {
  const proto = Object.getPrototypeOf(obj)
  if (proto === Object.prototype || proto === null) return { ...(obj as object) } as Obj
  return Object.assign(Object.create(proto), obj)
}

function fn(v: unknown): boolean {
  return typeof v === 'function'
}

function ms(what: string, v: number | undefined, dflt: number, allowZero: boolean): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (!allowZero && v === 0)) {
    throw new ConfigError(`reconciler: ${what} must be a ${allowZero ? 'non-negative' : 'positive'} number of ms, got ${String(v)}`)
  }
  return v
}

export function resolveConfig<Obj>(cfg: ReconcilerConfig<Obj>): ResolvedReconcilerConfig<Obj> {
  if (cfg === null || typeof cfg !== 'object') throw new ConfigError('reconciler: config missing')
  const who = `reconciler${cfg.name ? ` "${cfg.name}"` : cfg.table?.name ? ` of table "${cfg.table.name}"` : ''}`
  if (!cfg.db || typeof cfg.db.readTxn !== 'function') throw new ConfigError(`${who}: config.db (a statedb DB) is missing`)
  if (!cfg.table || typeof cfg.table.changes !== 'function') throw new ConfigError(`${who}: config.table (a statedb Table) is missing`)
  if (!cfg.statusIndex) throw new ConfigError(`${who}: config.statusIndex is missing (make one with newStatusIndex)`)
  if (!cfg.table.indexes.includes(cfg.statusIndex.name)) {
    throw new ConfigError(
      `${who}: table "${cfg.table.name}" has no index "${cfg.statusIndex.name}" (its indexes: ${cfg.table.indexes.join(', ')}); add the status index to the table's indexes`,
    )
  }
  try {
    cfg.table.revision(cfg.db.readTxn()) // throws when the table is not registered with the db
  } catch (err) {
    throw new ConfigError(`${who}: ${(err as Error).message}`)
  }
  if (cfg.primaryKey !== undefined && !fn(cfg.primaryKey)) throw new ConfigError(`${who}: config.primaryKey must be a function`)
  if (!fn(cfg.getObjectStatus)) throw new ConfigError(`${who}: config.getObjectStatus(obj) is missing`)
  if (!fn(cfg.setObjectStatus)) throw new ConfigError(`${who}: config.setObjectStatus(obj, status) is missing`)
  if (cfg.cloneObject !== undefined && !fn(cfg.cloneObject)) throw new ConfigError(`${who}: config.cloneObject must be a function`)
  const ops = cfg.operations
  if (!ops || !fn(ops.update) || !fn(ops.delete)) {
    const missing = !ops
      ? 'operations'
      : [!fn(ops.update) && 'operations.update', !fn(ops.delete) && 'operations.delete'].filter(Boolean).join(' and ')
    throw new ConfigError(`${who}: config.${missing} missing (update and delete are required; prune is optional)`)
  }
  if (ops.prune !== undefined && !fn(ops.prune)) throw new ConfigError(`${who}: operations.prune must be a function`)
  if (ops.list !== undefined || ops.inSync !== undefined) {
    if (!fn(ops.list) || !fn(ops.inSync))
      throw new ConfigError(`${who}: operations.list and operations.inSync go together (the listing and how to compare with it)`)
  }
  const b = cfg.batchOperations
  if (b !== undefined && (!fn(b.updateBatch) || !fn(b.deleteBatch))) {
    throw new ConfigError(`${who}: batchOperations needs both updateBatch and deleteBatch`)
  }
  const name = cfg.name ?? cfg.table.name
  if (typeof name !== 'string' || name === '') throw new ConfigError(`${who}: config.name must be a non-empty string`)
  const roundSize = cfg.roundSize ?? 1000
  if (!Number.isInteger(roundSize) || roundSize < 1)
    throw new ConfigError(`${who}: roundSize must be a positive integer, got ${String(roundSize)}`)
  // the shared default (statedb's DEFAULT_RETRY: 100 ms doubling to 30 s, jitter 0.2)
  const retry = resolveRetry(cfg.retry, who)
  const fullIntervalMs = ms('fullReconciliationIntervalMs', cfg.fullReconciliationIntervalMs, DEFAULT_FULL_RECONCILIATION_INTERVAL_MS, true)
  const pruneIntervalMs = ms('pruneIntervalMs', cfg.pruneIntervalMs, 0, true)
  if (pruneIntervalMs > 0 && ops.prune === undefined) throw new ConfigError(`${who}: pruneIntervalMs needs operations.prune`)
  let refreshIntervalMs = 0
  let refreshPerSecond = 0
  if (cfg.refresh !== undefined) {
    refreshIntervalMs = ms('refresh.intervalMs', cfg.refresh.intervalMs, NaN, false)
    if (Number.isNaN(refreshIntervalMs)) throw new ConfigError(`${who}: refresh.intervalMs is missing`)
    refreshPerSecond = cfg.refresh.maxPerSecond ?? 100
    if (!(refreshPerSecond > 0) || !Number.isFinite(refreshPerSecond)) {
      throw new ConfigError(`${who}: refresh.maxPerSecond must be a positive number, got ${String(refreshPerSecond)}`)
    }
  }
  if (cfg.statusIndex.isSet && cfg.name === undefined) {
    throw new ConfigError(`${who}: the status index covers a status set: give config.name (this reconciler's name in the set)`)
  }
  const declared = cfg.statusIndex.names
  if (declared !== undefined && !declared.includes(name)) {
    throw new ConfigError(
      `${who}: status index "${cfg.statusIndex.name}" declares the names ${declared.map((n) => `"${n}"`).join(', ')}, not "${name}": add it to newStatusSetIndex's names`,
    )
  }
  return {
    db: cfg.db,
    table: cfg.table,
    statusIndex: cfg.statusIndex,
    primaryKey: cfg.primaryKey ?? ((obj: Obj) => cfg.table.primary.keyOf(obj)),
    name,
    getObjectStatus: cfg.getObjectStatus,
    setObjectStatus: cfg.setObjectStatus,
    cloneObject: cfg.cloneObject ?? defaultClone,
    operations: ops,
    batchOperations: b,
    roundSize,
    retry,
    fullIntervalMs,
    pruneIntervalMs,
    refreshIntervalMs,
    refreshPerSecond,
    rateLimit: {
      ...(cfg.rateLimit?.rounds ? { rounds: checkRateLimit(cfg.rateLimit.rounds, `${who}: rateLimit.rounds`) } : {}),
      ...(cfg.rateLimit?.operations ? { operations: checkRateLimit(cfg.rateLimit.operations, `${who}: rateLimit.operations`) } : {}),
    },
    metrics: cfg.metrics,
  }
}
