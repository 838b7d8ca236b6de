// Object semantics: create, get, list, replace, patch, delete on top of the store, the way a real
// apiserver's generic registry behaves. This file holds reads, creates and what follows every write
// and removal; updates are object-updates.ts, deletes object-deletes.ts, the rules every write is
// held to write-rules.ts.
// Invariants (of all of them):
// - Identity fields (uid, creationTimestamp, name, namespace) never change after create; generation
//   bumps only when something outside metadata and status changes; a no-op write keeps the version
//   and emits no event.
// - For kinds with a status subresource the main resource ignores .status and /status changes only
//   .status (as on a real server, so controllers must use /status).
// - An object with finalizers is not removed by DELETE (object-deletes.ts): it gets deletionTimestamp
//   and stays until its finalizers are cleared, at which point the clearing write removes it.
// - Writes into a namespace require the namespace to exist (404) and not be terminating (403);
//   deleting a namespace empties it first (namespaces.ts, object-deletes.ts).
// - With a garbage collector (gc.ts), every write and every removal from storage is shown to it
//   after its commit, so ownerReferences cascades happen within the request that causes them.
// - A write at version X is admitted at X (the stored object converted to X first: patches, oldObject,
//   no-op detection), then stored in the storage version; answers are converted back to X
//   (conversion.ts). Internal writes (admit: false) keep the stored version and stay synchronous.
import type { Store } from './store.ts'
import { Lists, type ListOpts } from './lists.ts'
import { WritePipeline } from './admission.ts'
import { objectKey } from './store.ts'
import type { Registry, ResourceType } from './resources.ts'
import { apiVersionOf } from './resources.ts'
import { isCrdType, syncCrd, crdRemoved } from './crds.ts'
import { Conversion, then, type MaybePromise } from './conversion.ts'
import { alreadyExists, notFound, type Status } from './status.ts'
import { recordUpdate } from './apply.ts'
import { fieldSchemaOf } from './schema.ts'
import type { Matcher } from './selectors.ts'
import { Lifecycle } from './lifecycle.ts'
import { admissionRequest, checkBody, validateObject, withDefaults, type WriteOpts, type Written } from './write-rules.ts'
import { ObjectUpdates } from './object-updates.ts'
import { ObjectDeletes, type DeleteOpts, type DeletionTiming } from './object-deletes.ts'
import { Namespaces, NS_TYPE_KEY, nowSeconds, populateNamespace } from './namespaces.ts'

/** What sees every write and every removal from storage: the garbage collector (gc.ts). */
export interface StorageObserver {
  written(t: ResourceType, obj: any): void
  removed(gone: any): void
}

export class Objects {
  private readonly lists: Lists
  /** Between a CRD's versions: writes are stored in the storage version, reads converted (conversion.ts). */
  readonly conversion: Conversion
  /** Every create and update goes through it (admission.ts); the server adds the schema steps. */
  readonly pipeline = new WritePipeline()
  /** The namespace controller's and kubelet's pending steps. */
  readonly lifecycle = new Lifecycle()
  timing: DeletionTiming = { namespaceMs: 200, podMs: 1000 }
  /** The CA each namespace's kube-root-ca.crt ConfigMap carries. */
  rootCaPem = ''
  /** Set by the server unless `gc: false`. */
  gc: StorageObserver | undefined
  /** The admission of a DELETE of a stored object (validating webhooks, webhooks.ts), set by the server. */
  admitDelete: ((t: ResourceType, stored: any, dryRun: boolean) => MaybePromise<void>) | undefined
  private readonly namespaces: Namespaces
  private readonly updates: ObjectUpdates
  private readonly deletes: ObjectDeletes

  constructor(
    readonly store: Store,
    readonly registry: Registry,
    private readonly rand: () => number,
  ) {
    this.namespaces = new Namespaces(store, registry)
    this.conversion = new Conversion(store)
    this.lists = new Lists(store, (t, objs) => this.conversion.forList(t, objs))
    this.updates = new ObjectUpdates({
      store,
      conversion: this.conversion,
      pipeline: this.pipeline,
      create: (...a) => this.create(...a),
      afterWrite: (t, stored) => this.afterWrite(t, stored),
      afterDelete: (t, gone) => this.afterDelete(t, gone),
    })
    this.deletes = new ObjectDeletes({
      store,
      namespaces: this.namespaces,
      lifecycle: this.lifecycle,
      conversion: this.conversion,
      timing: () => this.timing,
      admitDelete: (t, stored, dryRun) => this.admitDelete?.(t, stored, dryRun),
      afterWrite: (t, stored) => this.afterWrite(t, stored),
      afterDelete: (t, gone) => this.afterDelete(t, gone),
    })
    registry.onChange((change, t) => {
      if (change === 'added') store.ensure(t.storageKey)
    })
    for (const t of registry.all()) store.ensure(t.storageKey)
  }

  /** A v4-shaped UUID from the seeded PRNG (deterministic per seed). */
  uid(): string {
    const w = () => (Math.floor(this.rand() * 0x100000000) >>> 0).toString(16).padStart(8, '0')
    const a = w(),
      b = w(),
      c = w(),
      d = w()
    const variant = ((parseInt(c[0]!, 16) & 3) | 8).toString(16)
    return `${a}-${b.slice(0, 4)}-4${b.slice(5, 8)}-${variant}${c.slice(1, 4)}-${c.slice(4)}${d}`
  }

  // ---------- reads ----------
  get(t: ResourceType, ns: string, name: string): any {
    const o = this.store.get(t.storageKey, t.namespaced ? ns : '', name)
    if (!o) throw notFound(t, name)
    return this.out(t, o)
  }

  /** The list as JSON text (see lists.ts). */
  listJson(t: ResourceType, ns: string | undefined, o: ListOpts): MaybePromise<string> {
    return this.lists.listJson(t, ns, o)
  }
  /** Forget every kept list view: outstanding continue tokens expire (410), like after an etcd compaction. */
  expireSnapshots(): void {
    this.lists.compact()
  }

  /** A stored object in the version being served (conversion.ts). */
  private out(t: ResourceType, o: any): MaybePromise<any> {
    return this.conversion.toType(t, o)
  }
  private written(t: ResourceType, o: any, warnings: string[]): MaybePromise<Written> {
    return then(this.out(t, o), (object) => ({ object, warnings }))
  }

  // ---------- writes ----------
  /** Creates an object; takes ownership of `body` (callers pass freshly parsed objects). */
  create(t: ResourceType, ns: string, body: any, o: WriteOpts & { managedFields?: any[] }): MaybePromise<Written> {
    checkBody(t, ns, body)
    const meta = { ...(body.metadata ?? {}) }
    if (!meta.name && meta.generateName) {
      meta.name = meta.generateName + Array.from({ length: 5 }, () => 'bcdfghjklmnpqrstvwxz2456789'[Math.floor(this.rand() * 27)]).join('')
    }
    let obj: any = { ...body, apiVersion: apiVersionOf(t), kind: t.kind, metadata: meta }
    validateObject(t, obj)
    this.namespaces.check(t, ns)
    const existing = this.store.get(t.storageKey, t.namespaced ? ns : '', meta.name)
    if (existing) throw alreadyExists(t, meta.name, !!existing.metadata.deletionTimestamp)
    delete meta.resourceVersion
    delete meta.deletionTimestamp
    delete meta.deletionGracePeriodSeconds
    delete meta.managedFields
    if (t.namespaced) meta.namespace = ns
    else delete meta.namespace
    meta.uid = this.uid()
    meta.creationTimestamp = nowSeconds()
    if (t.generation) meta.generation = 1
    else delete meta.generation
    if (t.status) delete obj.status
    obj = withDefaults(t, obj)
    const req = admissionRequest(t, 'CREATE', obj, undefined, o)
    const finish = (): MaybePromise<Written> => {
      const obj = req.object
      const meta = obj.metadata
      meta.managedFields =
        o.managedFields ??
        recordUpdate(undefined, obj, { manager: o.manager, apiVersion: apiVersionOf(t), scope: 'all', schema: fieldSchemaOf(t) })
      if (meta.managedFields.length === 0) delete meta.managedFields
      if (o.dryRun) return { object: obj, warnings: req.warnings }
      return then(o.admit === false ? obj : this.conversion.toStorage(t, obj), (toStore) => {
        // an async admission step or conversion let other writes run: the name may be taken by now
        if (this.store.get(t.storageKey, t.namespaced ? ns : '', meta.name)) throw alreadyExists(t, meta.name)
        const [stored] = this.store.write(t.storageKey, (put) => put(toStore))
        this.afterWrite(t, stored)
        if (t.storageKey === NS_TYPE_KEY)
          populateNamespace(this.registry, this.store, meta.name, this.rootCaPem, (...a) => this.create(...a))
        return this.written(t, stored, req.warnings)
      })
    }
    const pending = o.admit === false ? undefined : this.pipeline.run(req)
    return pending ? pending.then(finish) : finish()
  }

  /** PUT of one object (object-updates.ts). */
  update(t: ResourceType, ns: string, name: string, body: any, o: WriteOpts): MaybePromise<Written> {
    return this.updates.update(t, ns, name, body, o)
  }

  /** PATCH of one object, server-side apply included (object-updates.ts). */
  patch(...a: Parameters<ObjectUpdates['patch']>): MaybePromise<Written> {
    return this.updates.patch(...a)
  }

  /** DELETE of one object (object-deletes.ts). */
  delete(t: ResourceType, ns: string, name: string, d: DeleteOpts): MaybePromise<any> {
    return this.deletes.delete(t, ns, name, d)
  }

  /** Sets the CA the kube-root-ca.crt ConfigMaps carry (the server's, once generated). */
  setRootCa(pem: string): void {
    this.rootCaPem = pem
    const cmType = this.registry.byKind('v1', 'ConfigMap')
    if (!cmType) return
    for (const [, ns] of this.store.scan(NS_TYPE_KEY, undefined, undefined, this.store.snapshot())) {
      if (!this.store.get(cmType.storageKey, ns.metadata.name, 'kube-root-ca.crt')) continue
      this.patch(
        cmType,
        ns.metadata.name,
        'kube-root-ca.crt',
        'merge',
        { data: { 'ca.crt': pem } },
        {
          manager: 'kube-controller-manager',
          contentType: 'application/merge-patch+json',
          admit: false,
        },
      )
    }
  }

  /** DELETE on a collection, as JSON (object-deletes.ts). */
  deleteCollection(t: ResourceType, ns: string | undefined, matcher: Matcher | undefined, dryRun = false): MaybePromise<string> {
    return this.deletes.deleteCollection(t, ns, matcher, dryRun)
  }

  private afterWrite(t: ResourceType, stored: any): void {
    if (isCrdType(t)) syncCrd(this.store, this.registry, t, stored)
    this.gc?.written(t, stored)
  }
  private afterDelete(t: ResourceType, gone: any): void {
    if (isCrdType(t)) crdRemoved(this.store, this.registry, gone)
    this.gc?.removed(gone)
    if (t.namespaced && gone.metadata.namespace) this.namespaces.finishIfEmpty(gone.metadata.namespace)
  }
  /** Inserts n objects directly (no HTTP), one batch, names `${prefix}${i}`. */
  seed(t: ResourceType, ns: string, n: number, template: any = {}, prefix = 'obj-'): number {
    this.namespaces.check(t, ns)
    const ts = nowSeconds()
    this.store.write(t.storageKey, (put) => {
      for (let i = 0; i < n; i++) {
        const name = `${prefix}${i}`
        const meta: any = { ...(template.metadata ?? {}), name, uid: this.uid(), creationTimestamp: ts }
        if (t.namespaced) meta.namespace = ns
        if (t.generation) meta.generation = 1
        put({ ...template, apiVersion: apiVersionOf(t), kind: t.kind, metadata: meta })
      }
    })
    return n
  }
}

export { objectKey }
export type { Status }
