// Updates of a stored object: PUT, PATCH (merge, JSON, strategic) and server-side apply, the way a
// real apiserver's generic registry behaves.
// Invariants:
// - Identity fields (uid, creationTimestamp, name, namespace) never change; generation bumps only
//   when something outside metadata and status changes; a no-op write keeps the version and emits
//   no event.
// - For kinds with a status subresource the main resource ignores .status and /status changes only
//   .status.
// - A resourceVersion (or uid) in the body is a precondition: a stale one is a 409 Conflict; so is a
//   write whose admission or conversion let another write of the object land first.
// - A terminating object takes no new finalizers; the write that clears its last finalizer removes it.
// - An update is made, admitted and compared in the request's version (the stored object converted to
//   it first), then stored in the storage version (conversion.ts); internal writes (admit: false)
//   keep the stored version and stay synchronous.
import type { Store } from './store.ts'
import type { AdmissionRequest, WritePipeline } from './admission.ts'
import type { ResourceType } from './resources.ts'
import { apiVersionOf } from './resources.ts'
import { then, type Conversion, type MaybePromise } from './conversion.ts'
import { badRequest, conflict, invalid, notFound, unsupportedMediaType } from './status.ts'
import { clone, mergePatch, jsonPatch, strategicMerge, type PatchKind } from './patch.ts'
import { serverSideApply, recordUpdate, type Scope } from './apply.ts'
import { fieldSchemaOf } from './schema.ts'
import { NS_TYPE_KEY } from './namespaces.ts'
import { admissionRequest, checkBody, sameIgnoringTimes, specChanged, validateObject, type WriteOpts, type Written } from './write-rules.ts'

/** What updates share with the object store they write to (objects.ts). */
export interface UpdateHost {
  readonly store: Store
  readonly conversion: Conversion
  readonly pipeline: WritePipeline
  /** A create (server-side apply of an object that does not exist). */
  create(t: ResourceType, ns: string, body: any, o: WriteOpts & { managedFields?: any[] }): MaybePromise<Written>
  /** After a stored object changed. */
  afterWrite(t: ResourceType, stored: any): void
  /** After an object left storage. */
  afterDelete(t: ResourceType, gone: any): void
}

export class ObjectUpdates {
  constructor(private readonly h: UpdateHost) {}

  /** A stored object in the version being served (conversion.ts). */
  private out(t: ResourceType, o: any): MaybePromise<any> {
    return this.h.conversion.toType(t, o)
  }
  private written(t: ResourceType, o: any, warnings: string[]): MaybePromise<Written> {
    return then(this.out(t, o), (object) => ({ object, warnings }))
  }

  update(t: ResourceType, ns: string, name: string, body: any, o: WriteOpts): MaybePromise<Written> {
    checkBody(t, ns, body, name)
    const cur = this.h.store.get(t.storageKey, t.namespaced ? ns : '', name)
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
    const stored = this.h.store.get(t.storageKey, t.namespaced ? ns : '', name)
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
    checkBody(t, ns, next, name)
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
    checkBody(t, ns, applied, name)
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
      return this.h.create(t, ns, { ...object, metadata: { ...meta, name } }, { ...o, managedFields })
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
    validateObject(t, next)
    const req = admissionRequest(t, 'UPDATE', next, cur, o)
    const pending = o.admit === false ? undefined : this.h.pipeline.run(req)
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
    const storedNow = () => this.h.store.get(t.storageKey, t.namespaced ? (cm.namespace ?? '') : '', cm.name)
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
    if (sameIgnoringTimes(cur, next) && (internal || this.h.conversion.inStorageVersion(t, stored))) return done(cur)
    if (o.dryRun) return done(next)
    if (cm.deletionTimestamp && (meta.finalizers ?? []).length === 0) {
      const [gone] = this.h.store.write(t.storageKey, (_put, del) => del(stored))
      this.h.afterDelete(t, gone)
      return done({ ...next, metadata: { ...meta, resourceVersion: gone.metadata.resourceVersion } })
    }
    // internal writes (the garbage collector's) keep the stored version: they stay synchronous
    return then(this.h.conversion.toStorage(t, next, internal ? stored : undefined), (toStore) => {
      if (storedNow()?.metadata.resourceVersion !== cm.resourceVersion) throw conflict(t, cm.name)
      const [written] = this.h.store.write(t.storageKey, (put) => put(toStore))
      this.h.afterWrite(t, written)
      return this.written(t, written, req.warnings)
    })
  }
}
