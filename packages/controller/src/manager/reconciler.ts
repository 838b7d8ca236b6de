// The Manager's reconciler: it drives the desired table through the Target (server-side apply,
// delete), logging each failed apply or delete, retried with backoff.
// Invariants:
// - A sharded replica deletes only in the shards it holds: an object leaving the desired table
//   because its shard went to another replica stays in the cluster (the new owner keeps it).
import { Reconciler, type BatchEntry, type Metrics } from '@statewright/reconciler'
import type { DB } from '@statewright/statedb'
import type { DesiredObject, DesiredTable, Target } from '@statewright/k8s'
import type { Logger } from '../logging.ts'
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
}

export function newDesiredReconciler(o: DesiredReconcilerOptions): Reconciler<DesiredObject> {
  const log = o.logger.child({ reconciler: o.name })
  const target = o.target.operations
  const tbatch = o.target.batchOperations
  const mine = o.mine
  const ops: typeof target = { ...target, delete: (d, ctx) => (mine(d) ? target.delete(d, ctx) : undefined) }
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
  const logFailed = (what: string, entries: BatchEntry<DesiredObject>[]) => {
    for (const e of entries)
      if (e.error !== undefined)
        log.warn(
          { object: describe(e.object), err: (e.error as Error)?.message ?? String(e.error) },
          `${what} failed; will retry with backoff`,
        )
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
    fullReconciliationIntervalMs: o.options.fullReconciliationIntervalMs ?? 300_000,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    logger: o.logger, // the reconciler adds its name
  })
}
