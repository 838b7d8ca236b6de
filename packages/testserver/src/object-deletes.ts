// DELETE on one object and on a collection, the way a real apiserver's generic registry and the
// controllers behind it behave.
// Invariants:
// - Preconditions (uid, resourceVersion) are checked against the stored object: a mismatch is 409.
// - An object with finalizers is not removed by DELETE: it gets deletionTimestamp and stays until its
//   finalizers are cleared (the clearing write removes it, objects.ts). The Foreground and Orphan
//   propagation policies become finalizers that the garbage collector acts on and removes (gc.ts).
// - Deleting a namespace marks it Terminating and empties it later (namespaces.ts, lifecycle.ts); a
//   scheduled Pod's graceful DELETE leaves it Terminating until the kubelet removes it.
// - A dry run checks and answers as if carried out and writes nothing.
// - A collection DELETE admits each item as a DELETE of its own, then deletes it: a denial ends it.
import type { Store } from './store.ts'
import type { ResourceType } from './resources.ts'
import { apiVersionOf } from './resources.ts'
import { isPromise, then, type Conversion, type MaybePromise } from './conversion.ts'
import { StatusError, conflict, notFound, success } from './status.ts'
import type { Matcher } from './selectors.ts'
import { objectJson } from './watch.ts'
import type { Lifecycle } from './lifecycle.ts'
import { NS_TYPE_KEY, nowSeconds, type Namespaces } from './namespaces.ts'

const POD_TYPE_KEY = '/pods'

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

/** What deletes share with the object store they delete from (objects.ts). */
export interface DeleteHost {
  readonly store: Store
  readonly namespaces: Namespaces
  readonly lifecycle: Lifecycle
  readonly conversion: Conversion
  timing(): DeletionTiming
  /** The admission of a DELETE of a stored object (validating webhooks), when there is one. */
  admitDelete(t: ResourceType, stored: any, dryRun: boolean): MaybePromise<void> | undefined
  /** After a stored object changed (it is terminating now). */
  afterWrite(t: ResourceType, stored: any): void
  /** After an object left storage. */
  afterDelete(t: ResourceType, gone: any): void
}

export class ObjectDeletes {
  constructor(private readonly h: DeleteHost) {}

  delete(t: ResourceType, ns: string, name: string, d: DeleteOpts): MaybePromise<any> {
    const { object, removed } = this.deleteObject(t, ns, name, d)
    return removed && !returnsObject(t) ? success(t, name, object.metadata.uid) : this.h.conversion.toType(t, object)
  }

  /** Deletes (or, dry-run, pretends to): the object as removed, or as it now is with its deletionTimestamp. */
  private deleteObject(t: ResourceType, ns: string, name: string, d: DeleteOpts): { object: any; removed: boolean } {
    const cur = this.h.store.get(t.storageKey, t.namespaced ? ns : '', name)
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
      const now = this.h.namespaces.markTerminating(t, cur)
      this.h.lifecycle.schedule(`namespace/${name}`, this.h.timing().namespaceMs, () =>
        this.h.namespaces.empty(name, (rt, ns, n) => {
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
      const [stored] = this.h.store.write(t.storageKey, (put) => put(next))
      this.h.afterWrite(t, stored)
      const uid = cur.metadata.uid
      this.h.lifecycle.schedule(`pod/${ns}/${name}`, Math.min(grace * 1000, this.h.timing().podMs), () => {
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
      this.h.lifecycle.cancel(`pod/${ns}/${name}`)
      if (d.dryRun) return { object: cur, removed: true }
      const [gone] = this.h.store.write(t.storageKey, (_put, del) => del(cur))
      this.h.afterDelete(t, gone)
      return { object: gone, removed: true }
    }
    if (finalizers.length > 0) {
      if (cur.metadata.deletionTimestamp && finalizers === cur.metadata.finalizers) return { object: cur, removed: false }
      const next = terminating()
      if (d.dryRun) return { object: next, removed: false }
      const [stored] = this.h.store.write(t.storageKey, (put) => put(next))
      this.h.afterWrite(t, stored)
      return { object: stored, removed: false }
    }
    if (d.dryRun) return { object: cur, removed: true }
    const [gone] = this.h.store.write(t.storageKey, (_put, del) => del(cur))
    this.h.afterDelete(t, gone)
    return { object: gone, removed: true }
  }

  /** DELETE on a collection: answers the list of what it deleted (as a real server does), as JSON. */
  /** Each item is admitted as a DELETE of its own, then deleted (a denial ends it there, as on a real server). */
  deleteCollection(t: ResourceType, ns: string | undefined, matcher: Matcher | undefined, dryRun = false): MaybePromise<string> {
    const snap = this.h.store.snapshot()
    const apiVersion = apiVersionOf(t)
    const targets = [...this.h.store.scan(t.storageKey, t.namespaced ? ns : undefined, undefined, snap)].filter(
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
        const admitted = this.h.admitDelete(t, obj, dryRun)
        if (isPromise(admitted)) return admitted.then(() => (one(obj), from(i + 1)))
        one(obj)
      }
    }
    return then(from(0), () =>
      then(this.h.conversion.forList(t, deleted), (objs) => {
        const meta = JSON.stringify({ resourceVersion: String(this.h.store.rv) })
        const items = objs.map((o) => objectJson(o, apiVersion, t.kind)).join(',')
        return `{"kind":${JSON.stringify(t.listKind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${meta},"items":[${items}]}`
      }),
    )
  }
}

function returnsObject(t: ResourceType): boolean {
  return !t.builtin || t.resource === 'pods' || t.resource === 'customresourcedefinitions'
}
