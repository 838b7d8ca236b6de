// The Manager's reconciler: it drives the desired table through the Target (server-side apply,
// delete), logging each failed apply or delete, retried with backoff, and recording it as a Warning
// Event (ApplyFailed, DeleteFailed) about the object's controller (its owner reference), or about
// the object itself when it has none: what `kubectl describe` shows, as controller-runtime users
// see it. Repeats aggregate into one Event with a count (the recorder's aggregation and rate limit).
// Invariants:
// - A sharded replica deletes only in the shards it holds: an object leaving the desired table
//   because its shard went to another replica stays in the cluster (the new owner keeps it).
import { DEFAULT_FULL_RECONCILIATION_INTERVAL_MS, Reconciler, type BatchEntry, type Metrics } from '@statewright/reconciler'
import type { DB } from '@statewright/statedb'
import type { DesiredObject, DesiredTable, EventRecorder, KubeObject, Target } from '@statewright/k8s'
import type { Logger } from '@statewright/statedb'
import type { ManagerOptions } from './options.ts'

export interface DesiredReconcilerOptions {
  name: string
  db: DB
  desired: DesiredTable
  target: Target
  logger: Logger
  /** Whether a desired object may be deleted by this replica (sharded managers: its shard is held). */
  mine: (d: DesiredObject) => boolean
  options: Pick<ManagerOptions, 'retry' | 'fullReconciliationIntervalMs'>
  metrics?: Metrics
  /** The Event recorder of a desired object's cluster (undefined: the default cluster). */
  events?: (cluster: string | undefined) => EventRecorder
}

/** What an Event about a desired object is about: its controller when it names one, else itself. */
export function involvedOf(obj: KubeObject): KubeObject {
  const refs = obj.metadata?.ownerReferences
  const ref = Array.isArray(refs) ? refs.find((r: { controller?: boolean }) => r?.controller === true) : undefined
  if (!ref) return obj
  return {
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata: { name: ref.name, uid: ref.uid, ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}) },
  }
}

export function newDesiredReconciler(o: DesiredReconcilerOptions): Reconciler<DesiredObject> {
  const log = o.logger.child({ reconciler: o.name })
  const target = o.target.operations
  const tbatch = o.target.batchOperations
  const mine = o.mine
  const record = (what: 'apply' | 'delete', d: DesiredObject, err: unknown) =>
    o
      .events?.(d.cluster)
      .warning(
        involvedOf(d.object),
        what === 'apply' ? 'ApplyFailed' : 'DeleteFailed',
        `${what} of ${describe(d)} failed: ${(err as Error)?.message ?? String(err)}`,
      )
  const recorded =
    <A extends unknown[], R>(what: 'apply' | 'delete', f: (d: DesiredObject, ...a: A) => R) =>
    async (d: DesiredObject, ...a: A): Promise<Awaited<R>> => {
      try {
        return await f(d, ...a)
      } catch (err) {
        record(what, d, err)
        throw err
      }
    }
  const ops: typeof target = {
    ...target,
    update: recorded('apply', target.update),
    delete: recorded('delete', (d: DesiredObject, ctx: Parameters<typeof target.delete>[1]) =>
      mine(d) ? target.delete(d, ctx) : undefined,
    ),
  }
  const batch: typeof tbatch = {
    updateBatch: tbatch.updateBatch,
    deleteBatch: (entries, ctx) =>
      tbatch.deleteBatch(
        entries.filter((e) => mine(e.object)),
        ctx,
      ),
  }
  const describe = (d: DesiredObject) =>
    `${d.object.kind} ${d.object.metadata.namespace ? `${d.object.metadata.namespace}/` : ''}${d.object.metadata.name}`
  const logFailed = (what: 'apply' | 'delete', entries: BatchEntry<DesiredObject>[]) => {
    for (const e of entries)
      if (e.error !== undefined) {
        record(what, e.object, e.error)
        log.warn(
          { object: describe(e.object), err: (e.error as Error)?.message ?? String(e.error) },
          `${what} failed; will retry with backoff`,
        )
      }
  }
  return new Reconciler<DesiredObject>({
    name: o.name,
    db: o.db,
    table: o.desired.table,
    statusIndex: o.desired.statusIndex,
    primaryKey: o.desired.primaryKey,
    getObjectStatus: (d) => d.status,
    setObjectStatus: (d, status) => ({ ...d, status }),
    operations: ops,
    batchOperations: {
      updateBatch: async (entries, ctx) => {
        await batch.updateBatch(entries, ctx)
        logFailed('apply', entries)
      },
      deleteBatch: async (entries, ctx) => {
        await batch.deleteBatch(entries, ctx)
        logFailed('delete', entries)
      },
    },
    ...(o.options.retry ? { retry: o.options.retry } : {}),
    fullReconciliationIntervalMs: o.options.fullReconciliationIntervalMs ?? DEFAULT_FULL_RECONCILIATION_INTERVAL_MS,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    logger: o.logger, // the reconciler adds its name
  })
}
