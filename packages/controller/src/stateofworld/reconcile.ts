// What a state-of-world reconcile function is given and what it declares: the events since its last
// run, a topology view and a snapshot of every table; derived objects by group, statuses, and what
// inspection shows. The declarations take effect only when the run succeeds.
// Invariants:
// - One snapshot per run: the context's txn and its topology view are read at the same revision.
// - applied() and observed() read the latest state (not the run's snapshot): a derived object's
//   apply may finish during the run. A change of a derived object's apply status runs reconcile
//   again with the object's key in `applyChanges`: a Subscription that read it through applied() or
//   observed() in its last run runs again without a matching event (a tracked read).
// - A derived object placed in the default cluster is stored without a cluster name, as the
//   Manager stores it (one desired object, whether or not placed with inCluster).
// - `error` is what the run carries in, as policy-machinery's reconcile functions get it: the
//   topology's cycle (when loops are not allowed); a Workflow hands its steps what it was given.
import type { ReadTxn, Table } from '@statewright/statedb'
import { desired, holds, namespacedName, objectKey, type DesiredObject, type KubeObject } from '@statewright/k8s'
import { ConfigError } from '../errors.ts'
import type { StatusPatch } from '../conditions.ts'
import type { Logger } from '@statewright/statedb'
import { isPlaced, type Placed } from '../manager/desired.ts'
import type { Manager } from '../manager/manager.ts'
import { ownedTableName } from '../manager/watch.ts'
import type { StatusToWrite } from './statuswrites.ts'
import { inSpan, SPAN_OK, type TracerLike } from './tracing.ts'
import type { TopologyView } from '@statewright/topology'

/** A change of a watched object, coalesced since the last run. */
export interface ResourceEvent<T extends KubeObject = KubeObject> {
  kind: string
  group: string
  type: 'create' | 'update' | 'delete'
  old?: T
  new?: T
}

export interface StateOfWorldContext {
  readonly events: readonly ResourceEvent[]
  readonly topology: TopologyView
  /**
   * The error this run carries in (policy-machinery's `err`): the topology's cycle, a
   * TopologyCycleError, when its definition does not allow loops; in a Workflow's steps, the error
   * the workflow was given. Undefined when there is none.
   */
  readonly error?: unknown
  /** The controller's tracer (StateOfWorldOptions.tracer, or @opentelemetry/api's when installed), for traceReconcile. */
  readonly tracer?: TracerLike
  /** The snapshot every table is read at (the topology's too). */
  readonly txn: ReadTxn
  /** Scratch space shared by the functions of one run (a Workflow's tasks). */
  readonly state: Map<string, unknown>
  readonly signal: AbortSignal
  readonly logger: Logger
  /** The table of a watched kind ("Gateway"). */
  table<T extends KubeObject = KubeObject>(kind: string): Table<T>
  /** The whole set of derived objects of a group; replaces the group's previous set when the run succeeds. */
  desire(group: string, objects: ReadonlyArray<KubeObject | Placed>): void
  /** A status for an object's /status subresource (server-side apply; skipped when already so). */
  status(obj: KubeObject, status: StatusPatch): void
  /** Whether the object as given is applied: our copy's apply succeeded, or the cluster's object holds every field it sets. */
  applied(obj: KubeObject, cluster?: string): boolean
  /**
   * The object as applied: our desired copy once its apply succeeded, else what the cluster holds
   * (the Manager's reflector of owned kinds; after a restart, before our first apply). Undefined when
   * neither has it.
   */
  observed(obj: KubeObject, cluster?: string): KubeObject | undefined
  /**
   * Derived objects whose apply status changed since the last run, by `applyKey` (what applied()
   * and observed() read): a Subscription runs again when one it read is among them.
   */
  readonly applyChanges: ReadonlySet<string>
  /** The key of an object (in a cluster) as `applyChanges` holds it. */
  applyKey(obj: KubeObject, cluster?: string): string
  /** Notes what inspection shows for a topology node (a policy's status, a target's effective policy). */
  inspect(locator: string, info: { status?: string; effective?: unknown }): void
}

export type StateOfWorldFn = (ctx: StateOfWorldContext) => void | Promise<void>

/** What one run declared, written only when it succeeds. */
export interface RunDeclarations {
  /** group -> desired key -> desired object */
  readonly want: Map<string, Map<string, DesiredObject>>
  /** object key -> the status to write */
  readonly statuses: Map<string, StatusToWrite>
  /** topology locator -> what inspection shows for it */
  readonly info: Map<string, { status?: string; effective?: unknown }>
}

/** The context of one run, and the declarations it collects. */
export function newStateOfWorldContext(o: {
  /** The controller's name (errors). */
  name: string
  manager: Manager
  tables: ReadonlyMap<string, { table: Table<KubeObject> }>
  events: ResourceEvent[]
  txn: ReadTxn
  topology: TopologyView
  signal: AbortSignal
  logger: Logger
  error?: unknown
  tracer?: TracerLike
  /** Keys of derived objects whose apply status changed since the last run. */
  applyChanges?: ReadonlySet<string>
}): { ctx: StateOfWorldContext } & RunDeclarations {
  const m = o.manager
  const applyKey = (obj: KubeObject, cluster?: string) => objectKey(cluster !== undefined && cluster !== m.cluster.name ? cluster : '', obj)
  const want = new Map<string, Map<string, DesiredObject>>()
  const statuses = new Map<string, StatusToWrite>()
  const info = new Map<string, { status?: string; effective?: unknown }>()
  const ctx: StateOfWorldContext = {
    events: o.events,
    txn: o.txn,
    signal: o.signal,
    state: new Map(),
    logger: o.logger,
    topology: o.topology,
    ...(o.error !== undefined ? { error: o.error } : {}),
    ...(o.tracer ? { tracer: o.tracer } : {}),
    table: <T extends KubeObject>(kind: string) => {
      const t = o.tables.get(kind)
      if (!t)
        throw new ConfigError(
          `StateOfWorldController "${o.name}": kind "${kind}" is not watched (watched: ${[...o.tables.keys()].join(', ')})`,
        )
      return t.table as unknown as Table<T>
    },
    desire: (group, objects) => {
      const set = new Map<string, DesiredObject>()
      for (const x of objects) {
        const placed = isPlaced(x) ? x : { cluster: m.cluster.name, object: x }
        const d = desired(placed.object, placed.cluster === m.cluster.name ? undefined : placed.cluster)
        set.set(m.desired.primaryKey(d), d)
      }
      want.set(group, set)
    },
    status: (obj, patch) => {
      const key = objectKey(m.cluster.name, obj)
      statuses.set(key, { key, cluster: m.cluster.name, object: obj, patch })
    },
    applied: (obj, cluster) => {
      const cur = ctx.observed(obj, cluster)
      return !!cur && holds(cur, obj)
    },
    applyChanges: o.applyChanges ?? new Set(),
    applyKey,
    observed: (obj, cluster) => {
      const other = cluster !== undefined && cluster !== m.cluster.name
      const now = m.db.readTxn()
      const d = m.desired.table.get(now, m.desired.byKey.query(applyKey(obj, cluster)))
      if (d && d.status.kind === 'done') return d.object
      const observed = m.watched.get(ownedTableName({ kind: obj.kind ?? '' }, other ? cluster : undefined))
      return observed?.table.get(now, observed.table.primary.query(namespacedName(obj) as never))
    },
    inspect: (loc, i) => {
      info.set(loc, { ...info.get(loc), ...i })
    },
  }
  return { ctx, want, statuses, info }
}

/**
 * A reconcile function with a span of its own (policy-machinery's TraceReconcileFunc), from the
 * run's tracer (`ctx.tracer`): the carried-over error (`ctx.error`) is recorded with attribute
 * `error.carryover`; the function's error is recorded and rethrown; success is status OK.
 */
export function traceReconcile(spanName: string, fn: StateOfWorldFn): StateOfWorldFn {
  return (ctx) =>
    inSpan(ctx.tracer, spanName, async (span) => {
      if (span && ctx.error !== undefined) {
        span.recordException(ctx.error instanceof Error ? ctx.error : String(ctx.error))
        span.setAttribute('error.carryover', true)
      }
      await fn(ctx)
      span?.setStatus({ code: SPAN_OK })
    })
}
