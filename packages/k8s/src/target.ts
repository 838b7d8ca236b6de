// A target: reconciler operations that drive clusters towards a table of desired objects.
// - Update is server-side apply (PATCH, application/apply-patch+yaml) with our field manager, force
//   configurable, the ownership label added; it returns true (out of sync) when the apply changed
//   the object (its resourceVersion moved since our last apply).
// - Delete deletes; an object already gone is success.
// - Prune lists, per cluster and managed kind, the objects carrying our ownership label and deletes
//   those that are not desired. Objects without our label are never touched.
// - Batches run with bounded concurrency; every request goes through its cluster's shared limiter
//   (QPS/burst) and pause (429 Retry-After).
// - Errors name the object ("ConfigMap default/web: ...") and never carry object contents.
// - With `fence`, every apply and delete is made under the term `fence` names for its object: sent
//   only while that term is valid, cut off when it ends (./fence.ts); an object whose fence is
//   `null` is not this replica's to write (FencedError, nothing sent).
// - With `preconditions`, an apply of an object we know (our last write's resourceVersion, else
//   `observedVersion`) carries that resourceVersion: a write made late (its process stalled past its
//   term) fails with 409 instead of overwriting a newer value. A 409 of the precondition while the
//   term is valid reads the object once and applies again on its current version.
// - Traced (the cluster's tracer), an apply is a span `k8s.apply` whose parent is the run that
//   returned the desired object (its cause), so its requests are that run's grandchildren: "why did
//   this object change" is one trace.
import { ConfigError, ForeignObjectError, InvalidObjectError } from './errors.ts'
import { PruneError } from '@statewright/reconciler'
import {
  Reconciler,
  eachEntry,
  type ReconcilerConfig,
  type BatchEntry,
  type BatchOperations,
  type Operations,
  type OpContext,
} from '@statewright/reconciler'
import { inSpan, type DB } from '@statewright/statedb'
import { ApiError, isConflict, isNotFound } from './api-error.ts'
import type { Cluster } from './cluster.ts'
import { FencedError, FencedWrites, type WriteFence } from './fence.ts'
import { describe, groupKind, objectPath, resolveKind, type KindRef, type KubeObject } from './gvk.ts'
import { listAll } from './list.ts'
import { objectKey, type DesiredObject, type DesiredTable } from './desired.ts'
import type { TargetOptions, TargetStats } from './target-options.ts'

export class Target {
  readonly name: string
  readonly fieldManager: string
  readonly ownerLabel: string
  readonly owner: string
  readonly stats: TargetStats = { applies: 0, changed: 0, deletes: 0, pruned: 0, conflicts: 0, errors: 0, preconditionRetries: 0 }
  private readonly clusters = new Map<string, Cluster>()
  private readonly defaultCluster: Cluster
  private readonly force: boolean
  private readonly adopt: boolean
  private readonly concurrency: number
  private readonly kinds = new Map<string, KindRef>()
  private readonly lastApplied = new Map<string, string>()
  private readonly options: TargetOptions

  constructor(opts: TargetOptions) {
    this.options = opts
    const list = opts.clusters === undefined ? [] : Array.isArray(opts.clusters) ? opts.clusters : [opts.clusters]
    if (list.length === 0) throw new ConfigError('target: no cluster (the option `clusters` takes a Cluster or a list of them)')
    for (const c of list) this.clusters.set(c.name, c)
    this.defaultCluster = list[0]
    this.fieldManager = opts.fieldManager ?? 'statewright'
    this.force = opts.force ?? true
    this.adopt = opts.adopt ?? true
    this.ownerLabel = opts.ownerLabel ?? 'statewright.io/owner'
    this.owner = opts.owner ?? this.fieldManager
    this.concurrency = opts.concurrency ?? 16
    this.name = opts.name ?? this.fieldManager
    for (const k of opts.kinds ?? []) this.kinds.set(groupKind(k), { apiVersion: k.apiVersion, kind: k.kind })
  }

  /** The reconciler operations (update = apply, delete, prune). */
  readonly operations: Operations<DesiredObject> = {
    update: (d, ctx) => this.apply(d, ctx),
    delete: (d, ctx) => this.delete(d, ctx),
    prune: (all, ctx) => this.prune(all, ctx),
  }

  /** Batch operations: the same, `concurrency` at a time. */
  readonly batchOperations: BatchOperations<DesiredObject> = {
    updateBatch: (entries, ctx) => eachEntry(entries, (d) => this.apply(d, ctx), this.concurrency),
    deleteBatch: (entries, ctx) => eachEntry(entries, (d) => this.delete(d, ctx), this.concurrency),
  }

  clusterOf(d: DesiredObject): Cluster {
    if (d.cluster === undefined) return this.defaultCluster
    const c = this.clusters.get(d.cluster)
    if (!c) throw new ConfigError(`${describe(d.object)}: unknown cluster "${d.cluster}" (known: ${[...this.clusters.keys()].join(', ')})`)
    return c
  }

  /** Adds a kind to those pruned (kinds of desired objects are added as they are seen). */
  manage(kind: KindRef): void {
    this.kinds.set(groupKind(kind), { apiVersion: kind.apiVersion, kind: kind.kind })
  }

  /** Server-side apply. True when the object changed (created or modified) since our last apply. */
  async apply(d: DesiredObject, ctx?: OpContext): Promise<boolean> {
    const tracer = this.clusterOf(d).tracer
    if (!tracer) return this.applyOne(d, ctx)
    const o = d.object
    const attributes = {
      'k8s.object.kind': String(o.kind),
      'k8s.object.key': `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`,
    }
    return inSpan(tracer, 'k8s.apply', () => this.applyOne(d, ctx), { parent: d.cause, attributes })
  }

  private async applyOne(d: DesiredObject, ctx?: OpContext): Promise<boolean> {
    const cluster = this.clusterOf(d)
    const obj = d.object
    const what = describe(obj)
    if (!obj.apiVersion || !obj.kind || !obj.metadata?.name)
      throw new InvalidObjectError(`${what}: a desired object needs apiVersion, kind and metadata.name`)
    this.kinds.set(groupKind(obj as KindRef), { apiVersion: obj.apiVersion, kind: obj.kind })
    const r = await resolveKind(cluster, obj as KindRef)
    const key = objectKey(cluster.name, obj)
    const path = objectPath(r, obj.metadata.name, obj.metadata.namespace)
    let before = this.lastApplied.get(key)
    let looked = false // the server was asked for the object's current version already
    if (!this.adopt && before === undefined) {
      // Not applied by us in this process: an object of this name must carry our label to be ours.
      // (A create between this read and the apply is adopted: the window of one request.)
      const cur = await readCurrent(cluster, path, ctx?.signal, what)
      looked = true
      if (cur && cur.metadata?.labels?.[this.ownerLabel] !== this.owner) {
        this.stats.errors++
        this.count(cluster, 'apply', 'error')
        throw new ForeignObjectError(
          `${what} already exists and is not managed by ${this.owner} (no label ${this.ownerLabel}=${this.owner}); it is not adopted`,
        )
      }
      before = cur?.metadata?.resourceVersion
    }
    if (before === undefined && ctx?.full && !looked) {
      // No record of ours (a restart): read the current version to tell a no-op from a change.
      before = (await readCurrent(cluster, path, ctx.signal, what))?.metadata?.resourceVersion
      looked = true
    }
    const fence = this.fenceOf(obj, cluster)
    let known = this.options.preconditions ? (this.lastApplied.get(key) ?? this.options.observedVersion?.(obj, cluster.name)) : undefined
    if (this.options.preconditions && known === undefined && before === undefined && !looked) {
      // Nothing known of it (a first write after a restart or a shard move): read its version, so
      // that this write too is conditional on what it was computed against.
      known = before = (await readCurrent(cluster, path, ctx?.signal, what))?.metadata?.resourceVersion
    } else if (known === undefined) known = before && this.options.preconditions ? before : undefined
    this.stats.applies++
    let res: KubeObject
    try {
      const send = () =>
        cluster.request<KubeObject>({
          method: 'PATCH',
          path,
          query: { fieldManager: this.fieldManager, force: this.force },
          body: this.applyBody(obj, known),
          contentType: 'application/apply-patch+yaml',
          signal: ctx?.signal,
          what,
          ...(fence !== undefined ? { fence } : {}),
        })
      try {
        res = await this.writes.track(fence, send())
      } catch (err) {
        if (known === undefined || !(isConflict(err) || isNotFound(err)) || fieldConflict(err as ApiError)) throw err
        // The precondition failed: written (or deleted) since we last knew it. While our term holds,
        // the write is still ours to make: on the version there is now (a late one is refused by its fence).
        if (fence && !fence.valid()) throw err
        known = (await readCurrent(cluster, path, ctx?.signal, what))?.metadata?.resourceVersion
        this.stats.preconditionRetries++
        res = await this.writes.track(fence, send())
      }
    } catch (err) {
      this.stats.errors++
      this.count(cluster, 'apply', 'error')
      if (err instanceof ApiError && err.code === 409 && fieldConflict(err)) {
        this.stats.conflicts++
        throw new ApiError(
          `${what}: apply conflict (field manager "${this.fieldManager}", force ${this.force}): ${conflictFields(err)}`,
          409,
          err.reason,
          err.status,
        )
      }
      throw err
    }
    const rv = res?.metadata?.resourceVersion
    if (rv !== undefined) this.lastApplied.set(key, rv)
    // the answer in the tables first, then the apply is done (an owner held until then reads it)
    if (res?.metadata && this.options.onApplied) await this.options.onApplied(res as KubeObject, cluster.name)
    const changed = rv === undefined || rv !== before
    if (changed) this.stats.changed++
    this.count(cluster, 'apply', changed ? 'changed' : 'unchanged')
    return changed
  }

  /** What we apply: the object without server-owned metadata, with our ownership label (and the precondition). */
  private applyBody(obj: KubeObject, resourceVersion?: string): KubeObject {
    const { resourceVersion: _rv, uid: _uid, managedFields: _mf, creationTimestamp: _ct, generation: _g, ...meta } = obj.metadata
    const labels = { ...(meta.labels ?? {}), [this.ownerLabel]: this.owner }
    return { ...obj, metadata: resourceVersion === undefined ? { ...meta, labels } : { ...meta, labels, resourceVersion } }
  }

  /** Writes in flight, by the fence they were made under (see settled). */
  private readonly writes = new FencedWrites()

  /**
   * Resolves once every write made under `fence` has settled (answered, refused or cut off: a term
   * that ended aborts them). A shard's writes are settled before its Lease is released.
   */
  settled(fence: WriteFence): Promise<void> {
    return this.writes.settled(fence)
  }

  /** The fence of a write of `obj` (undefined: the cluster's own); null (not ours) refuses at once. */
  private fenceOf(obj: KubeObject, cluster: Cluster): WriteFence | undefined {
    const f = this.options.fence?.(obj, cluster.name)
    if (f === null) {
      this.stats.errors++
      throw new FencedError(`${describe(obj)}: not written: this replica holds no term for it`)
    }
    return f
  }

  async delete(d: DesiredObject, ctx?: OpContext): Promise<void> {
    const cluster = this.clusterOf(d)
    await this.deleteOne(cluster, d.object, ctx?.signal)
    this.lastApplied.delete(objectKey(cluster.name, d.object))
  }

  private async deleteOne(cluster: Cluster, obj: KubeObject, signal?: AbortSignal): Promise<boolean> {
    const what = describe(obj)
    const r = await resolveKind(cluster, obj as KindRef)
    const fence = this.fenceOf(obj, cluster)
    this.stats.deletes++
    try {
      await this.writes.track(
        fence,
        cluster.request({
          method: 'DELETE',
          path: objectPath(r, String(obj.metadata.name), obj.metadata.namespace),
          query: { propagationPolicy: 'Background' },
          signal,
          what,
          ...(fence !== undefined ? { fence } : {}),
        }),
      )
      this.count(cluster, 'delete', 'deleted')
      return true
    } catch (err) {
      if (isNotFound(err)) {
        this.count(cluster, 'delete', 'gone')
        return false
      }
      this.stats.errors++
      this.count(cluster, 'delete', 'error')
      throw err
    }
  }

  /**
   * Deletes, in every cluster and managed kind, the objects labelled as ours that are not desired
   * (and that `only` picks, when given: a sharded replica prunes a shard it just acquired). Throws
   * after trying everything when some failed, naming them.
   */
  async prune(all: Iterable<DesiredObject>, ctx?: OpContext, only?: (obj: KubeObject, cluster: string) => boolean): Promise<void> {
    const want = new Set<string>()
    for (const d of all) {
      const c = this.clusterOf(d)
      want.add(objectKey(c.name, d.object))
      if (d.object.apiVersion && d.object.kind)
        this.kinds.set(groupKind(d.object as KindRef), { apiVersion: d.object.apiVersion, kind: d.object.kind })
    }
    const failures: string[] = []
    const stale: Array<{ cluster: Cluster; obj: KubeObject }> = []
    for (const cluster of this.clusters.values()) {
      for (const kind of this.kinds.values()) {
        try {
          const r = await resolveKind(cluster, kind)
          const { items } = await listAll(cluster, r, {
            ...(this.options.pruneNamespace ? { namespace: this.options.pruneNamespace } : {}),
            labelSelector: `${this.ownerLabel}=${this.owner}`,
            ...(ctx?.signal ? { signal: ctx.signal } : {}),
          })
          for (const obj of items) {
            if (
              !want.has(objectKey(cluster.name, obj)) &&
              (this.options.prunable?.(obj, cluster.name, ctx?.txn) ?? true) &&
              (only?.(obj, cluster.name) ?? true)
            )
              stale.push({ cluster, obj })
          }
        } catch (err) {
          failures.push(`cluster ${cluster.name}: ${(err as Error).message}`)
        }
      }
    }
    const entries: BatchEntry<{ cluster: Cluster; obj: KubeObject }>[] = stale.map((object) => ({ object, revision: 0 }))
    await eachEntry(
      entries,
      async (s) => {
        if (await this.deleteOne(s.cluster, s.obj, ctx?.signal)) this.stats.pruned++
        this.lastApplied.delete(objectKey(s.cluster.name, s.obj))
      },
      this.concurrency,
    )
    for (const e of entries) if (e.error !== undefined) failures.push((e.error as Error).message)
    if (failures.length) throw new PruneError(`prune: ${failures.length} failure(s): ${failures.slice(0, 5).join('; ')}`, failures)
  }

  private count(cluster: Cluster, op: string, result: string): void {
    this.options.metrics?.targetOps.inc({ target: this.name, cluster: cluster.name, op, result })
  }
}

/** Whether a 409 is server-side apply's field-manager conflict (else: a failed precondition). */
function fieldConflict(err: ApiError): boolean {
  const causes: any[] = err.status?.details?.causes ?? []
  return causes.some((c) => c?.reason === 'FieldManagerConflict')
}

/** The conflicting fields and their managers, from a 409's Status causes. */
function conflictFields(err: ApiError): string {
  const causes: any[] = err.status?.details?.causes ?? []
  if (causes.length === 0) return err.message
  return causes.map((c) => `${c.field ?? '?'}: ${c.message ?? c.reason ?? ''}`).join('; ')
}

export type TargetReconcilerOptions = Omit<
  ReconcilerConfig<DesiredObject>,
  'db' | 'table' | 'statusIndex' | 'primaryKey' | 'getObjectStatus' | 'setObjectStatus' | 'operations' | 'batchOperations'
> & {
  /** Use batch operations (bounded concurrency; default true). */
  batch?: boolean
}

/** A reconciler of the desired table, driving the target's clusters. Call start() on it. */
export function targetReconciler(
  db: DB,
  desired: DesiredTable,
  target: Target,
  opts: TargetReconcilerOptions = {},
): Reconciler<DesiredObject> {
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

/** The object at `path` as the server has it now; undefined when there is none. */
async function readCurrent(cluster: Cluster, path: string, signal: AbortSignal | undefined, what: string): Promise<KubeObject | undefined> {
  try {
    return await cluster.request<KubeObject>({ path, signal, what })
  } catch (err) {
    if (isNotFound(err)) return undefined
    throw err
  }
}
