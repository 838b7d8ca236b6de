// Object semantics: create, get, list, replace, patch, delete on top of the store, the way a real
// apiserver's generic registry behaves.
// Invariants:
// - Identity fields (uid, creationTimestamp, name, namespace) never change after create; generation
//   bumps only when something outside metadata and status changes; a no-op write keeps the version
//   and emits no event.
// - For kinds with a status subresource the main resource ignores .status and /status changes only
//   .status (as on a real server, so controllers must use /status).
// - An object with finalizers is not removed by DELETE: it gets deletionTimestamp and stays until its
//   finalizers are cleared, at which point the clearing write removes it.
// - Writes into a namespace require the namespace to exist (404) and not be terminating (403);
//   deleting a namespace empties it first (namespaces.ts).
// - With a garbage collector (gc.ts), every write and every removal from storage is shown to it
//   after its commit, so ownerReferences cascades happen within the request that causes them.
// - A write at version X is admitted at X (the stored object converted to X first: patches, oldObject,
//   no-op detection), then stored in the storage version; answers are converted back to X
//   (conversion.ts). Internal writes (admit: false) keep the stored version and stay synchronous.
import type { Store } from './store.ts'
import { Lists, type ListOpts } from './lists.ts'
import { WritePipeline, type AdmissionRequest, type FieldValidation, type Operation } from './admission.ts'
import { objectKey } from './store.ts'
import type { Registry, ResourceType } from './resources.ts'
import { apiVersionOf } from './resources.ts'
import { isCrdType, syncCrd, crdRemoved } from './crds.ts'
import { Conversion, isPromise, then, type MaybePromise } from './conversion.ts'
import {
  StatusError,
  alreadyExists,
  badRequest,
  conflict,
  invalid,
  notFound,
  success,
  unsupportedMediaType,
  type Status,
} from './status.ts'
import { deepEqual, clone, mergePatch, jsonPatch, strategicMerge, type PatchKind } from './patch.ts'
import { serverSideApply, recordUpdate, type Scope } from './apply.ts'
import { fieldSchemaOf } from './schema.ts'
import type { Matcher } from './selectors.ts'
import { objectJson } from './watch.ts'
import { metaCauses } from './meta-validation.ts'
import { Lifecycle } from './lifecycle.ts'
import { Namespaces, NS_TYPE_KEY, nowSeconds, populateNamespace } from './namespaces.ts'

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/
const POD_TYPE_KEY = '/pods'

export interface WriteOpts {
  manager: string
  subresource?: string
  dryRun?: boolean
  /** `fieldValidation` of the request (default Warn, as on a real server). */
  fieldValidation?: FieldValidation
  /**
   * false: skip the admission pipeline (the garbage collector's metadata-only patches, which stay
   * synchronous so cascades finish within the request that causes them).
   */
  admit?: boolean
}
/** What a write answers: the object and the warnings for the client's `Warning` headers. */
export interface Written {
  object: any
  warnings: string[]
}
export interface DeleteOpts {
  preconditions?: { uid?: string; resourceVersion?: string }
  propagationPolicy?: string
  /** Checked and answered as if carried out, nothing written (`dryRun=All`). */
  dryRun?: boolean
  /** A Pod's grace period (default its terminationGracePeriodSeconds); 0 removes it at once. */
  gracePeriodSeconds?: number
}

/** How long the emulated controllers take after a DELETE (see lifecycle.ts; control.finishDeletions() skips the wait). */
export interface DeletionTiming {
  /** From a namespace's DELETE until the namespace controller empties and removes it. */
  namespaceMs: number
  /** From a scheduled Pod's graceful DELETE until the kubelet removes it (at most its grace period). */
  podMs: number
}

/** The finalizers that carry a deletion's propagation policy until the garbage collector acts (gc.ts). */
export const FOREGROUND = 'foregroundDeletion'
export const ORPHAN = 'orphan'

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

  constructor(
    readonly store: Store,
    readonly registry: Registry,
    private readonly rand: () => number,
  ) {
    this.namespaces = new Namespaces(store, registry)
    this.conversion = new Conversion(store)
    this.lists = new Lists(store, (t, objs) => this.conversion.forList(t, objs))
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

  private checkBody(t: ResourceType, ns: string, body: any, urlName?: string): void {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the request body must be a JSON object')
    if (body.kind !== undefined && body.kind !== t.kind)
      throw badRequest(`the kind of the provided object (${body.kind}) does not match the kind of the request (${t.kind})`)
    if (body.apiVersion !== undefined && body.apiVersion !== apiVersionOf(t))
      throw badRequest(`the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersionOf(t)})`)
    const m = body.metadata ?? {}
    if (t.namespaced && m.namespace !== undefined && m.namespace !== '' && m.namespace !== ns) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    }
    if (urlName !== undefined && m.name !== undefined && m.name !== urlName) {
      throw badRequest(`the name of the object (${m.name}) does not match the name on the URL (${urlName})`)
    }
  }
  private validate(t: ResourceType, obj: any): void {
    const name = obj.metadata?.name
    if (typeof name !== 'string' || name === '')
      throw invalid(t.kind, t.group, '', [
        { reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' },
      ])
    if (name.length > 253 || !NAME.test(name)) {
      throw invalid(t.kind, t.group, name, [
        {
          reason: 'FieldValueInvalid',
          message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
          field: 'metadata.name',
        },
      ])
    }
    const labels = obj.metadata?.labels
    if (labels !== undefined && (typeof labels !== 'object' || labels === null || Array.isArray(labels)))
      throw invalid(t.kind, t.group, name, [
        { reason: 'FieldValueInvalid', message: 'Invalid value: label values must be strings', field: 'metadata.labels' },
      ])
    const metaErrors = metaCauses(obj.metadata)
    if (metaErrors.length) throw invalid(t.kind, t.group, name, metaErrors)
    if (t.crd === undefined && t.resource === 'customresourcedefinitions') {
      const s = obj.spec ?? {}
      if (name !== `${s.names?.plural}.${s.group}`) {
        throw invalid(t.kind, t.group, name, [
          {
            reason: 'FieldValueInvalid',
            message: `Invalid value: "${name}": must be spec.names.plural+"."+spec.group`,
            field: 'metadata.name',
          },
        ])
      }
    }
  }

  // ---------- writes ----------
  /** Creates an object; takes ownership of `body` (callers pass freshly parsed objects). */
  create(t: ResourceType, ns: string, body: any, o: WriteOpts & { managedFields?: any[] }): MaybePromise<Written> {
    this.checkBody(t, ns, body)
    const meta = { ...(body.metadata ?? {}) }
    if (!meta.name && meta.generateName) {
      meta.name = meta.generateName + Array.from({ length: 5 }, () => 'bcdfghjklmnpqrstvwxz2456789'[Math.floor(this.rand() * 27)]).join('')
    }
    let obj: any = { ...body, apiVersion: apiVersionOf(t), kind: t.kind, metadata: meta }
    this.validate(t, obj)
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
    obj = this.defaults(t, obj)
    const req = this.admissionRequest(t, 'CREATE', obj, undefined, o)
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

  private admissionRequest(t: ResourceType, operation: Operation, object: any, oldObject: any, o: WriteOpts): AdmissionRequest {
    const req: AdmissionRequest = {
      type: t,
      operation,
      object,
      dryRun: !!o.dryRun,
      fieldValidation: o.fieldValidation ?? 'Warn',
      warnings: [],
    }
    if (oldObject !== undefined) req.oldObject = oldObject
    if (o.subresource) req.subresource = o.subresource
    return req
  }

  private defaults(t: ResourceType, obj: any): any {
    if (t.storageKey === NS_TYPE_KEY)
      return { ...obj, spec: { finalizers: ['kubernetes'], ...(obj.spec ?? {}) }, status: { phase: 'Active' } }
    if (t.resource === 'secrets' && t.group === '' && obj.type === undefined) return { ...obj, type: 'Opaque' }
    return obj
  }

  update(t: ResourceType, ns: string, name: string, body: any, o: WriteOpts): MaybePromise<Written> {
    this.checkBody(t, ns, body, name)
    const cur = this.store.get(t.storageKey, t.namespaced ? ns : '', name)
    if (!cur) throw notFound(t, name)
    const rv = body.metadata?.resourceVersion
    if ((rv === undefined || rv === '') && !t.unconditionalUpdate) {
      // the generic registry's message for a strategy without unconditional updates (kind is the resource)
      throw invalid(t.resource, t.group, name, [
        { reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion' },
      ])
    }
    if (rv !== undefined && rv !== '' && rv !== cur.metadata.resourceVersion) throw conflict(t, name)
    // defaults apply to every decoded body, updates included (a Secret PUT without `type` is Opaque,
    // not a change of an immutable field)
    const next = t.resource === 'secrets' && t.group === '' && body.type === undefined ? { ...body, type: 'Opaque' } : body
    // the stored object in the request's version: the update is made, admitted and compared there
    return then(this.out(t, cur), (curX) => this.commitUpdate(t, curX, clone(next), o, 'Update'))
  }

  patch(
    t: ResourceType,
    ns: string,
    name: string,
    kind: PatchKind | undefined,
    patch: any,
    o: WriteOpts & { force?: boolean; contentType: string },
  ): MaybePromise<Written> {
    if (kind === undefined || (kind === 'strategic' && !t.builtin)) throw unsupportedMediaType(o.contentType)
    const stored = this.store.get(t.storageKey, t.namespaced ? ns : '', name)
    // a patch applies to the stored object converted to the request's version (as kube-apiserver)
    return then(stored ? this.out(t, stored) : undefined, (cur) => this.patchAt(t, ns, name, cur, kind, patch, o))
  }

  private patchAt(
    t: ResourceType,
    ns: string,
    name: string,
    cur: any,
    kind: PatchKind,
    patch: any,
    o: WriteOpts & { force?: boolean; contentType: string },
  ): MaybePromise<Written> {
    if (kind === 'apply') return this.apply(t, ns, name, cur, patch, o)
    if (o.force) throw badRequest('force is only allowed for apply patches')
    if (!cur) throw notFound(t, name)
    let next: any
    switch (kind) {
      case 'merge':
        next = mergePatch(cur, patch)
        break
      case 'json':
        next = jsonPatch(cur, patch)
        break
      case 'strategic':
        next = strategicMerge(cur, patch)
        break
    }
    if (typeof next !== 'object' || next === null) throw badRequest('the patch produced an invalid object')
    const rv = next.metadata?.resourceVersion
    if (rv !== undefined && rv !== cur.metadata.resourceVersion) throw conflict(t, name)
    this.checkBody(t, ns, next, name)
    return this.commitUpdate(t, cur, next, o, 'Update')
  }

  private apply(
    t: ResourceType,
    ns: string,
    name: string,
    cur: any,
    applied: any,
    o: WriteOpts & { force?: boolean },
  ): MaybePromise<Written> {
    if (!o.manager || o.manager === '__default__') {
      throw invalid('PatchOptions', 'meta.k8s.io', '', [
        { reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' },
      ])
    }
    if (typeof applied !== 'object' || applied === null || Array.isArray(applied))
      throw badRequest('error decoding YAML: the apply body must be an object')
    if (!applied.apiVersion || !applied.kind) throw badRequest('apiVersion and kind must be set in an apply configuration')
    this.checkBody(t, ns, applied, name)
    if (applied.metadata?.managedFields !== undefined) throw badRequest('metadata.managedFields must be nil')
    const scope: Scope = o.subresource === 'status' ? 'status' : t.status ? 'main' : 'all'
    const opts = {
      manager: o.manager,
      force: !!o.force,
      apiVersion: apiVersionOf(t),
      scope,
      schema: fieldSchemaOf(t),
      ...(o.subresource ? { subresource: o.subresource } : {}),
    }
    if (!cur) {
      if (o.subresource) throw notFound(t, name)
      const { object } = serverSideApply(undefined, applied, opts)
      const { managedFields, ...meta } = object.metadata
      return this.create(t, ns, { ...object, metadata: { ...meta, name } }, { ...o, managedFields })
    }
    // A resourceVersion in the applied configuration is a precondition, as in any patch: a stale one
    // is a 409 Conflict, forced or not (which is why appliers should leave it out).
    const rv = applied.metadata?.resourceVersion
    if (rv !== undefined && rv !== '' && rv !== cur.metadata.resourceVersion) throw conflict(t, name)
    const { object } = serverSideApply(cur, applied, opts)
    return this.commitUpdate(t, cur, object, { ...o, keepManagedFields: true }, 'Apply')
  }
  /** The shared tail of update/patch/apply: status scoping, immutables, generation, no-op detection. */
  private commitUpdate(
    t: ResourceType,
    cur: any,
    next: any,
    o: WriteOpts & { keepManagedFields?: boolean },
    _op: 'Update' | 'Apply',
  ): MaybePromise<Written> {
    const meta = { ...(next.metadata ?? {}) }
    const cm = cur.metadata
    // a uid in the body is a precondition (rest.Update): another object's uid must not overwrite this one
    if (meta.uid !== undefined && meta.uid !== '' && meta.uid !== cm.uid)
      throw conflict(t, cm.name, `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${cm.uid}`)
    if (o.subresource === 'status') {
      next = { ...cur, status: next.status }
      if (next.status === undefined) delete next.status
      Object.assign(meta, cm, { managedFields: o.keepManagedFields ? meta.managedFields : cm.managedFields })
    } else if (t.status) {
      next = { ...next }
      if (cur.status === undefined) delete next.status
      else next.status = cur.status
    }
    for (const k of [
      'uid',
      'creationTimestamp',
      'name',
      'namespace',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'generation',
    ] as const) {
      if (cm[k] === undefined) delete meta[k]
      else meta[k] = cm[k]
    }
    if (cm.deletionTimestamp && Array.isArray(meta.finalizers)) {
      // a real server refuses new finalizers on a terminating object
      const added = meta.finalizers.filter((f: string) => !(cm.finalizers ?? []).includes(f))
      if (added.length)
        throw invalid(t.kind, t.group, cm.name, [
          {
            reason: 'FieldValueForbidden',
            message: 'Forbidden: no new finalizers can be added if the object is being deleted',
            field: 'metadata.finalizers',
          },
        ])
    }
    meta.resourceVersion = cm.resourceVersion
    next = { ...next, apiVersion: cur.apiVersion, kind: t.kind, metadata: meta }
    if (t.storageKey === NS_TYPE_KEY) next.spec = cur.spec
    this.validate(t, next)
    const req = this.admissionRequest(t, 'UPDATE', next, cur, o)
    const pending = o.admit === false ? undefined : this.pipeline.run(req)
    return pending ? pending.then(() => this.finishUpdate(t, cur, req, o)) : this.finishUpdate(t, cur, req, o)
  }

  /** After admission: generation, managedFields, no-op detection, then the write. */
  private finishUpdate(
    t: ResourceType,
    cur: any,
    req: AdmissionRequest,
    o: WriteOpts & { keepManagedFields?: boolean },
  ): MaybePromise<Written> {
    const next = req.object
    const meta = next.metadata
    const cm = cur.metadata
    const done = (object: any): Written => ({ object, warnings: req.warnings })
    // an async admission step or conversion let other writes run: this write was computed from a version now gone
    const storedNow = () => this.store.get(t.storageKey, t.namespaced ? (cm.namespace ?? '') : '', cm.name)
    const stored = storedNow()
    if (stored?.metadata.resourceVersion !== cm.resourceVersion) throw conflict(t, cm.name)
    if (t.generation && specChanged(cur, next)) meta.generation = (cm.generation ?? 0) + 1
    if (!o.keepManagedFields) {
      const scope: Scope = o.subresource === 'status' ? 'status' : t.status ? 'main' : 'all'
      const mf = recordUpdate(cur, next, {
        manager: o.manager,
        apiVersion: apiVersionOf(t),
        scope,
        schema: fieldSchemaOf(t),
        ...(o.subresource ? { subresource: o.subresource } : {}),
      })
      if (mf.length) meta.managedFields = mf
      else delete meta.managedFields
    } else if (Array.isArray(meta.managedFields) && meta.managedFields.length === 0) delete meta.managedFields
    // a no-op keeps the object, unless it is stored in an older version: then it is rewritten in the
    // storage version, as etcd gets new bytes (how kube-storage-version-migrator migrates)
    const internal = o.admit === false
    if (sameIgnoringTimes(cur, next) && (internal || this.conversion.inStorageVersion(t, stored))) return done(cur)
    if (o.dryRun) return done(next)
    if (cm.deletionTimestamp && (meta.finalizers ?? []).length === 0) {
      const [gone] = this.store.write(t.storageKey, (_put, del) => del(stored))
      this.afterDelete(t, gone)
      return done({ ...next, metadata: { ...meta, resourceVersion: gone.metadata.resourceVersion } })
    }
    // internal writes (the garbage collector's) keep the stored version: they stay synchronous
    return then(this.conversion.toStorage(t, next, internal ? stored : undefined), (toStore) => {
      if (storedNow()?.metadata.resourceVersion !== cm.resourceVersion) throw conflict(t, cm.name)
      const [written] = this.store.write(t.storageKey, (put) => put(toStore))
      this.afterWrite(t, written)
      return this.written(t, written, req.warnings)
    })
  }

  delete(t: ResourceType, ns: string, name: string, d: DeleteOpts): MaybePromise<any> {
    const { object, removed } = this.deleteObject(t, ns, name, d)
    return removed && !returnsObject(t) ? success(t, name, object.metadata.uid) : this.out(t, object)
  }

  /** Deletes (or, dry-run, pretends to): the object as removed, or as it now is with its deletionTimestamp. */
  private deleteObject(t: ResourceType, ns: string, name: string, d: DeleteOpts): { object: any; removed: boolean } {
    const cur = this.store.get(t.storageKey, t.namespaced ? ns : '', name)
    if (!cur) throw notFound(t, name)
    const p = d.preconditions ?? {}
    if (p.uid && p.uid !== cur.metadata.uid)
      throw conflict(t, name, `Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${cur.metadata.uid}`)
    if (p.resourceVersion && p.resourceVersion !== cur.metadata.resourceVersion) {
      throw conflict(
        t,
        name,
        `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`,
      )
    }
    let finalizers: string[] = cur.metadata.finalizers ?? []
    // as the apiserver: these policies become finalizers that the garbage collector acts on and removes
    if (d.propagationPolicy === 'Foreground' && !finalizers.includes(FOREGROUND)) finalizers = [...finalizers, FOREGROUND]
    if (d.propagationPolicy === 'Orphan' && !finalizers.includes(ORPHAN)) finalizers = [...finalizers, ORPHAN]
    const terminating = (extra: Record<string, unknown> = {}) => ({
      ...cur,
      ...extra,
      metadata: {
        ...cur.metadata,
        finalizers,
        deletionTimestamp: cur.metadata.deletionTimestamp ?? nowSeconds(),
        deletionGracePeriodSeconds: 0,
      },
    })
    if (t.storageKey === NS_TYPE_KEY) {
      if (d.dryRun) return { object: terminating({ status: { ...(cur.status ?? {}), phase: 'Terminating' } }), removed: false }
      const now = this.namespaces.markTerminating(t, cur)
      this.lifecycle.schedule(`namespace/${name}`, this.timing.namespaceMs, () =>
        this.namespaces.empty(name, (rt, ns, n) => {
          this.delete(rt, ns, n, {})
        }),
      )
      return { object: now, removed: false } // a Namespace DELETE answers the Namespace, Terminating
    }
    const grace = t.storageKey === POD_TYPE_KEY ? (d.gracePeriodSeconds ?? cur.spec?.terminationGracePeriodSeconds ?? 30) : 0
    if (grace > 0 && cur.spec?.nodeName && !cur.metadata.deletionTimestamp) {
      // graceful: the Pod stays, Terminating, until the kubelet has stopped it (lifecycle.ts)
      const next = {
        ...cur,
        metadata: {
          ...cur.metadata,
          finalizers: finalizers.length ? finalizers : undefined,
          deletionTimestamp: new Date(Date.now() + grace * 1000).toISOString().replace(/\.\d+Z$/, 'Z'),
          deletionGracePeriodSeconds: grace,
        },
      }
      if (next.metadata.finalizers === undefined) delete next.metadata.finalizers
      if (d.dryRun) return { object: next, removed: false }
      const [stored] = this.store.write(t.storageKey, (put) => put(next))
      this.afterWrite(t, stored)
      const uid = cur.metadata.uid
      this.lifecycle.schedule(`pod/${ns}/${name}`, Math.min(grace * 1000, this.timing.podMs), () => {
        try {
          this.delete(t, ns, name, { gracePeriodSeconds: 0, preconditions: { uid } })
        } catch (e) {
          if (!(e instanceof StatusError && (e.code === 404 || e.code === 409))) throw e
        }
      })
      return { object: stored, removed: false }
    }
    if (t.storageKey === POD_TYPE_KEY && grace > 0 && cur.metadata.deletionTimestamp && cur.spec?.nodeName)
      return { object: cur, removed: false } // already terminating: the kubelet removes it
    if (t.storageKey === POD_TYPE_KEY && grace === 0 && cur.metadata.deletionTimestamp && finalizers.length === 0) {
      // the kubelet's (or a forced) final DELETE of a Terminating Pod
      this.lifecycle.cancel(`pod/${ns}/${name}`)
      if (d.dryRun) return { object: cur, removed: true }
      const [gone] = this.store.write(t.storageKey, (_put, del) => del(cur))
      this.afterDelete(t, gone)
      return { object: gone, removed: true }
    }
    if (finalizers.length > 0) {
      if (cur.metadata.deletionTimestamp && finalizers === cur.metadata.finalizers) return { object: cur, removed: false }
      const next = terminating()
      if (d.dryRun) return { object: next, removed: false }
      const [stored] = this.store.write(t.storageKey, (put) => put(next))
      this.afterWrite(t, stored)
      return { object: stored, removed: false }
    }
    if (d.dryRun) return { object: cur, removed: true }
    const [gone] = this.store.write(t.storageKey, (_put, del) => del(cur))
    this.afterDelete(t, gone)
    return { object: gone, removed: true }
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

  /** DELETE on a collection: answers the list of what it deleted (as a real server does), as JSON. */
  /** Each item is admitted as a DELETE of its own, then deleted (a denial ends it there, as on a real server). */
  deleteCollection(t: ResourceType, ns: string | undefined, matcher: Matcher | undefined, dryRun = false): MaybePromise<string> {
    const snap = this.store.snapshot()
    const apiVersion = apiVersionOf(t)
    const targets = [...this.store.scan(t.storageKey, t.namespaced ? ns : undefined, undefined, snap)].filter(
      ([, o]) => !matcher || matcher(o),
    )
    const deleted: any[] = []
    const one = (obj: any) => {
      try {
        deleted.push(this.deleteObject(t, obj.metadata.namespace ?? '', obj.metadata.name, { dryRun }).object)
      } catch (e) {
        if (!(e instanceof StatusError && e.code === 404)) throw e
      }
    }
    const from = (i: number): MaybePromise<void> => {
      for (; i < targets.length; i++) {
        const obj = targets[i]![1]
        const admitted = this.admitDelete?.(t, obj, dryRun)
        if (isPromise(admitted)) return admitted.then(() => (one(obj), from(i + 1)))
        one(obj)
      }
    }
    return then(from(0), () =>
      then(this.conversion.forList(t, deleted), (objs) => {
        const meta = JSON.stringify({ resourceVersion: String(this.store.rv) })
        const items = objs.map((o) => objectJson(o, apiVersion, t.kind)).join(',')
        return `{"kind":${JSON.stringify(t.listKind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${meta},"items":[${items}]}`
      }),
    )
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

function specChanged(a: any, b: any): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  for (const k of keys) {
    if (k === 'metadata' || k === 'status' || k === 'apiVersion' || k === 'kind') continue
    if (!deepEqual(a[k], b[k])) return true
  }
  return false
}
/** Equal except for managedFields timestamps: such a write is a no-op on a real server. */
function sameIgnoringTimes(a: any, b: any): boolean {
  const strip = (o: any) => ({
    ...o,
    metadata: { ...o.metadata, managedFields: (o.metadata.managedFields ?? []).map((e: any) => ({ ...e, time: undefined })) },
  })
  return deepEqual(strip(a), strip(b))
}
function returnsObject(t: ResourceType): boolean {
  return !t.builtin || t.resource === 'pods' || t.resource === 'customresourcedefinitions'
}
export { objectKey }
export type { Status }
