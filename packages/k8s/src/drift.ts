// Drift repair: a reflector mirrors the objects we manage (selected by our ownership label) into an
// observed table; this watcher follows that table's changes and, when a managed object was deleted
// or no longer holds what we applied, marks its desired object pending again, so the reconciler
// repairs it at once instead of at the next full reconciliation.
// Invariants: only desired objects that are done are touched (pending and failing ones are already
// being worked on); the mark is a compare-and-swap against the revision read, so a newer write of
// the desired object always wins; a check compares only the fields we apply (others may add fields).
import { Reconciler, statusPending, type ReconcilerConfig } from '@statewright/reconciler'
import type { ChangeIterator, DB, Table } from '@statewright/statedb'
import type { KubeObject } from './gvk.ts'
import { objectKey, type DesiredObject, type DesiredTable, type Target } from './target.ts'

export interface DriftOptions {
  db: DB
  /** The reflected managed objects (one cluster; any kinds). */
  observed: Table<KubeObject>
  desired: DesiredTable
  /** Name of the cluster the observed table mirrors (default: the desired objects' default ""). */
  cluster?: string
  /** Also match desired objects that name no cluster (default true when `cluster` is given). */
  matchDefaultCluster?: boolean
  /** Called for each desired object marked pending (for logs and demos). */
  onDrift?: (d: DesiredObject, reason: 'deleted' | 'modified') => void
}

export class DriftWatcher {
  /** Desired objects marked pending because of drift. */
  repairs = 0
  private ctrl = new AbortController()
  private loop: Promise<void> | undefined
  private iter: ChangeIterator<KubeObject> | undefined

  constructor(private readonly o: DriftOptions) {}

  start(): this {
    if (this.loop) return this
    this.iter = this.o.observed.changes(this.o.db.readTxn())
    this.loop = this.run(this.iter).finally(() => this.iter?.close())
    return this
  }

  async stop(): Promise<void> {
    this.ctrl.abort()
    await this.loop
  }

  private async run(iter: ChangeIterator<KubeObject>): Promise<void> {
    const { db, desired } = this.o
    const signal = this.ctrl.signal
    const clusters = [this.o.cluster ?? '']
    if (this.o.cluster !== undefined && this.o.matchDefaultCluster !== false) clusters.push('')
    while (!signal.aborted) {
      const [batch, watch] = iter.next(db.readTxn())
      const drifted: Array<{ key: string; revision: number; reason: 'deleted' | 'modified' }> = []
      const txn = db.readTxn()
      for (const { object, deleted } of batch) {
        for (const c of clusters) {
          const key = objectKey(c, object)
          const e = desired.table.getEntry(txn, desired.byKey.query(key))
          if (!e || e.object.status.kind !== 'done') continue
          if (deleted) drifted.push({ key, revision: e.revision, reason: 'deleted' })
          else if (!holds(object, e.object.object)) drifted.push({ key, revision: e.revision, reason: 'modified' })
        }
      }
      if (drifted.length) {
        await db.write(desired.table, (w) => {
          for (const d of drifted) {
            const cur = desired.table.get(w, desired.byKey.query(d.key))
            if (!cur) continue
            if (desired.table.compareAndSwap(w, d.revision, { ...cur, status: statusPending() })) {
              this.repairs++
              this.o.onDrift?.(cur, d.reason)
            }
          }
        })
      }
      try {
        await watch.wait(signal)
      } catch {
        return
      }
    }
  }
}

/** Whether `observed` holds every field `want` sets (labels and annotations included). */
export function holds(observed: KubeObject, want: KubeObject): boolean {
  for (const k of Object.keys(want)) {
    if (k === 'status' || k === 'apiVersion' || k === 'kind') continue
    if (k === 'metadata') {
      const wm = want.metadata ?? {}
      const om = observed.metadata ?? {}
      if (wm.labels && !subset(om.labels ?? {}, wm.labels)) return false
      if (wm.annotations && !subset(om.annotations ?? {}, wm.annotations)) return false
      continue
    }
    if (!subset(observed[k], want[k])) return false
  }
  return true
}

function subset(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return have === want
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return false
    for (let i = 0; i < want.length; i++) if (!subset(have[i], want[i])) return false
    return true
  }
  if (have === null || typeof have !== 'object' || Array.isArray(have)) return false
  for (const [k, v] of Object.entries(want)) if (!subset((have as any)[k], v)) return false
  return true
}

export type TargetReconcilerOptions = Omit<ReconcilerConfig<DesiredObject>, 'db' | 'table' | 'statusIndex' | 'primaryKey' | 'getObjectStatus' | 'setObjectStatus' | 'operations' | 'batchOperations'> & {
  /** Use batch operations (bounded concurrency; default true). */
  batch?: boolean
}

/** A reconciler of the desired table, driving the target's clusters. Call start() on it. */
export function targetReconciler(db: DB, desired: DesiredTable, target: Target, opts: TargetReconcilerOptions = {}): Reconciler<DesiredObject> {
  const { batch = true, ...rest } = opts
  return new Reconciler<DesiredObject>({
    name: target.name,
    ...rest,
    db,
    table: desired.table,
    statusIndex: desired.statusIndex,
    primaryKey: desired.primaryKey,
    getObjectStatus: (d) => d.status,
    setObjectStatus: (d, status) => ({ ...d, status }),
    operations: target.operations,
    ...(batch ? { batchOperations: target.batchOperations } : {}),
  })
}
