// Garbage collection by ownerReferences, as kube-controller-manager's garbage collector does it, but
// synchronously, inside the write that makes it due: a test never waits for a GC pass, and what it
// sees right after a DELETE (or a create whose owners are gone) is already the collected state.
// Invariants:
// - An owner exists when an object of the reference's kind and name, with the reference's uid, is
//   in storage (terminating counts as existing). A namespaced owner is looked up in the dependent's
//   namespace; a reference whose kind is not served, or a namespaced owner of a cluster-scoped
//   dependent, is unresolvable and counts as existing (the real GC never deletes on a guess).
// - A dependent is deleted (background) only when every one of its owners is absent; when some
//   remain, the references to absent owners are removed instead (as the real GC patches them out).
// - `orphan` and `foregroundDeletion` are finalizers the GC acts on and removes: orphan strips the
//   owner's references from its dependents; foreground deletes the dependents and lets the owner go
//   once no dependent with blockOwnerDeletion is left in storage.
// - Every change goes through Objects' own delete and patch, so finalizers, events and versions
//   behave exactly as for a client's write, and each step re-reads current state (a dependent may
//   have been collected by an earlier step of the same cascade).
// - Its deletes are admitted by validating webhooks as the real collector's API deletes are: when a
//   webhook matches, that delete (and what cascades from it) finishes after the call, not within the
//   request; a denial leaves the dependent in place, recorded in `failures` (control.gcFailures();
//   the real collector would retry with backoff).
import type { Objects, StorageObserver } from './objects.ts'
import { FOREGROUND, ORPHAN } from './object-deletes.ts'
import type { ResourceType } from './resources.ts'
import { StatusError } from './status.ts'
import { then } from './conversion.ts'

const MANAGER = 'generic-garbage-collector'

interface OwnerRef {
  apiVersion?: string
  kind?: string
  name?: string
  uid?: string
  blockOwnerDeletion?: boolean
}
type Presence = 'present' | 'absent' | 'unresolvable'

/** A collector's step that failed (a delete a webhook denied, a patch refused): the newest 100 are kept. */
export interface GcFailure {
  object: string
  message: string
  time: number
}

export class GarbageCollector implements StorageObserver {
  readonly failures: GcFailure[] = []
  constructor(private readonly objects: Objects) {}

  private failed(obj: any, err: unknown): void {
    const m = obj?.metadata ?? {}
    this.failures.push({
      object: `${obj?.kind ?? '?'} ${m.namespace ? `${m.namespace}/` : ''}${m.name ?? '?'}`,
      message: err instanceof Error ? err.message : String(err),
      time: Date.now(),
    })
    if (this.failures.length > 100) this.failures.splice(0, this.failures.length - 100)
  }

  /** An object was removed from storage: collect its dependents; owners waiting on it may go. */
  removed(gone: any): void {
    const uid = gone.metadata?.uid
    if (uid) {
      for (const dep of this.dependents(uid)) {
        const others = refsOf(dep).filter((r) => r.uid !== uid)
        if (others.every((r) => this.presence(dep, r) === 'absent')) this.deleteDependent(dep, 'Background')
        else this.stripRefs(dep, (r) => r.uid === uid || this.presence(dep, r) === 'absent')
      }
    }
    // owners in foreground deletion may have been waiting for this one
    for (const ref of refsOf(gone)) {
      const owner = this.lookup(gone, ref)
      if (owner?.metadata.deletionTimestamp && (owner.metadata.finalizers ?? []).includes(FOREGROUND))
        this.terminating(this.typeOf(owner)!, owner)
    }
  }

  /** An object was created or updated. Terminating: act on orphan/foreground. Otherwise: owners gone? */
  written(t: ResourceType, obj: any): void {
    if (obj.metadata.deletionTimestamp) {
      this.terminating(t, obj)
      return
    }
    const refs = refsOf(obj)
    if (refs.length === 0) return
    const presence = refs.map((r) => this.presence(obj, r))
    if (presence.every((p) => p === 'absent')) this.deleteDependent(obj, 'Background')
    else if (presence.includes('absent')) this.stripRefs(obj, (r) => this.presence(obj, r) === 'absent')
  }

  private terminating(t: ResourceType, owner: any): void {
    const finalizers: string[] = owner.metadata.finalizers ?? []
    const uid = owner.metadata.uid
    if (finalizers.includes(ORPHAN)) {
      for (const dep of this.dependents(uid)) this.stripRefs(dep, (r) => r.uid === uid)
      this.removeFinalizer(t, owner, ORPHAN)
      return
    }
    if (!finalizers.includes(FOREGROUND)) return
    for (const dep of this.dependents(uid)) {
      if (dep.metadata.deletionTimestamp) continue
      // as the real GC: a dependent that has dependents of its own is deleted in foreground too, so
      // the whole tree is gone before the owner
      this.deleteDependent(dep, this.dependents(dep.metadata.uid).next().done ? 'Background' : 'Foreground')
    }
    const cur = this.objects.store.get(t.storageKey, owner.metadata.namespace ?? '', owner.metadata.name)
    if (cur?.metadata.uid !== uid) return // removed meanwhile
    const blocking = [...this.dependents(uid)].some((d) => refsOf(d).some((r) => r.uid === uid && r.blockOwnerDeletion === true))
    if (!blocking) this.removeFinalizer(t, cur, FOREGROUND)
  }

  /** Current objects (any kind) with a reference to `uid`; iterate lazily, since a cascade step may
   *  change or remove later ones (each is re-read when reached). */
  private *dependents(uid: string): Generator<any> {
    for (const [storageKey, o] of this.objects.store.dependents(uid)) {
      const cur = this.objects.store.get(storageKey, o.metadata.namespace ?? '', o.metadata.name)
      if (cur && cur.metadata.uid === o.metadata.uid && refsOf(cur).some((r) => r.uid === uid)) yield cur
    }
  }

  private presence(dependent: any, ref: OwnerRef): Presence {
    const t = this.typeOfRef(ref)
    if (!t || (t.namespaced && !dependent.metadata.namespace)) return 'unresolvable'
    return this.lookup(dependent, ref) ? 'present' : 'absent'
  }

  private lookup(dependent: any, ref: OwnerRef): any {
    const t = this.typeOfRef(ref)
    if (!t || !ref.name) return undefined
    const o = this.objects.store.get(t.storageKey, t.namespaced ? (dependent.metadata.namespace ?? '') : '', ref.name)
    return o && o.metadata.uid === ref.uid ? o : undefined
  }

  /** The served type of a reference: its exact version, else any version of the group and kind. */
  private typeOfRef(ref: OwnerRef): ResourceType | undefined {
    if (!ref.apiVersion || !ref.kind) return undefined
    const exact = this.objects.registry.byKind(ref.apiVersion, ref.kind)
    if (exact) return exact
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0] : ''
    return this.objects.registry.all().find((t) => t.group === group && t.kind === ref.kind)
  }
  private typeOf(obj: any): ResourceType | undefined {
    return this.typeOfRef({ apiVersion: obj.apiVersion, kind: obj.kind })
  }

  private deleteDependent(dep: any, policy: 'Background' | 'Foreground'): void {
    const t = this.typeOf(dep)
    if (!t || dep.metadata.deletionTimestamp) return
    // the real collector deletes through the API: validating webhooks admit it (asynchronously when any matches)
    ignoreGone(
      (err) => this.failed(dep, err),
      () =>
        then(this.objects.admitDelete?.(t, dep, false), () =>
          this.objects.delete(t, dep.metadata.namespace ?? '', dep.metadata.name, {
            propagationPolicy: policy,
            preconditions: { uid: dep.metadata.uid },
          }),
        ),
    )
  }

  private stripRefs(dep: any, drop: (r: OwnerRef) => boolean): void {
    const t = this.typeOf(dep)
    if (!t) return
    const keep = refsOf(dep).filter((r) => !drop(r))
    if (keep.length === refsOf(dep).length) return
    this.patchMeta(t, dep, { ownerReferences: keep.length ? keep : null })
  }

  private removeFinalizer(t: ResourceType, obj: any, finalizer: string): void {
    const keep = (obj.metadata.finalizers ?? []).filter((f: string) => f !== finalizer)
    this.patchMeta(t, obj, { finalizers: keep.length ? keep : null })
  }

  /** A merge patch of metadata, through the same path as a client's PATCH (versions, events, finalizers). */
  private patchMeta(t: ResourceType, obj: any, metadata: Record<string, unknown>): void {
    ignoreGone(
      (err) => this.failed(obj, err),
      () =>
        this.objects.patch(
          t,
          obj.metadata.namespace ?? '',
          obj.metadata.name,
          'merge',
          { metadata },
          { manager: MANAGER, contentType: 'application/merge-patch+json', admit: false },
        ),
    )
  }
}

function refsOf(obj: any): OwnerRef[] {
  const refs = obj?.metadata?.ownerReferences
  return Array.isArray(refs) ? refs : []
}

/** A cascade step may find its object already collected (404) or replaced by a new one (409, uid). */
function ignoreGone(failed: (err: unknown) => void, fn: () => unknown): void {
  const gone = (e: unknown) => e instanceof StatusError && (e.code === 404 || e.code === 409)
  try {
    const r = fn()
    // a write that had to convert by webhook finishes later: its failure must not go unhandled
    if (r instanceof Promise) r.catch((e) => void (gone(e) || failed(e)))
  } catch (e) {
    if (!gone(e)) throw e
  }
}
