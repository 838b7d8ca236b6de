// Kubernetes adapters of @statewright/primary's PrimaryController (their contract is the primary package's contract.ts): secondaries in a cluster, and the status write-back
// of primaries that are Kubernetes objects.
// Invariants:
// - Nothing is ever written over an object that is not ours: a create is a POST (an object made
//   meanwhile is a 409, read again), an update happens only after the ownership check on what was
//   read, and a delete carries the read uid as a precondition.
import type { OwnerStamps, PrimaryStatusWriter, SecondaryTarget, SecondaryWriteResult } from '@statewright/primary'
import { ApiError, isNotFound } from './api-error.ts'
import type { Cluster } from './cluster.ts'
import { groupKind, objectPath, resolveKind, type KindRef, type KubeObject } from './gvk.ts'

/**
 * Secondaries in a Kubernetes cluster. apply reads the object: absent, it is created (POST, so an
 * object somebody creates meanwhile is a 409, read again, never overwritten); present and owned, it
 * is server-side applied (force) as `fieldManager`; present and not owned, nothing is written
 * ("foreign"). delete deletes only what is owned, with the read uid as a precondition.
 */
export class KubeSecondaries implements SecondaryTarget<KubeObject> {
  private readonly cluster: Cluster
  private readonly fieldManager: string

  constructor(o: { cluster: Cluster; fieldManager: string }) {
    this.cluster = o.cluster
    this.fieldManager = o.fieldManager
  }

  kindOf(s: KubeObject): string {
    return String(s.kind)
  }
  id(s: KubeObject): string {
    return `${groupKind(s as KindRef)}|${s.metadata.namespace ?? ''}|${s.metadata.name}`
  }
  describe(s: KubeObject): string {
    return s.metadata.namespace ? `${s.metadata.namespace}/${s.metadata.name}` : String(s.metadata.name)
  }
  stampsOf(s: KubeObject) {
    return s.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> }
  }
  versionOf(s: KubeObject): string | undefined {
    return s.metadata.resourceVersion
  }
  withStamps(s: KubeObject, st: OwnerStamps): KubeObject {
    const m = s.metadata
    return {
      ...s,
      metadata: { ...m, labels: { ...(m.labels ?? {}), ...st.labels }, annotations: { ...(m.annotations ?? {}), ...st.annotations } },
    }
  }

  private async read(s: KubeObject, signal?: AbortSignal): Promise<{ path: string; cur: KubeObject | undefined }> {
    const r = await resolveKind(this.cluster, s as KindRef)
    const path = objectPath(r, String(s.metadata.name), s.metadata.namespace)
    try {
      return { path, cur: await this.cluster.request({ path, signal, what: this.describe(s) }) }
    } catch (err) {
      if (isNotFound(err)) return { path, cur: undefined }
      throw err
    }
  }

  async apply(
    s: KubeObject,
    owned: (existing: KubeObject) => boolean,
    signal?: AbortSignal,
  ): Promise<{ result: SecondaryWriteResult; version?: string }> {
    const { resourceVersion: _rv, uid: _uid, managedFields: _mf, creationTimestamp: _ct, generation: _g, ...meta } = s.metadata
    const body = { ...s, metadata: meta }
    for (let attempt = 1; ; attempt++) {
      const { path, cur } = await this.read(s, signal)
      if (cur === undefined) {
        const coll = path.slice(0, path.lastIndexOf('/'))
        try {
          const res: KubeObject = await this.cluster.request({
            method: 'POST',
            path: coll,
            query: { fieldManager: this.fieldManager },
            body,
            signal,
            what: this.describe(s),
          })
          return { result: 'created', version: res?.metadata?.resourceVersion }
        } catch (err) {
          if (err instanceof ApiError && err.code === 409 && attempt < 5) continue // created meanwhile: read it
          throw err
        }
      }
      if (!owned(cur)) return { result: 'foreign' }
      const res: KubeObject = await this.cluster.request({
        method: 'PATCH',
        path,
        query: { fieldManager: this.fieldManager, force: true },
        body,
        contentType: 'application/apply-patch+yaml',
        signal,
        what: this.describe(s),
      })
      const v = res?.metadata?.resourceVersion
      return { result: v !== undefined && v === cur.metadata.resourceVersion ? 'unchanged' : 'updated', version: v }
    }
  }

  async delete(s: KubeObject, owned: (existing: KubeObject) => boolean, signal?: AbortSignal): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const { path, cur } = await this.read(s, signal)
      if (cur === undefined || !owned(cur)) return false
      try {
        await this.cluster.request({
          method: 'DELETE',
          path,
          body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background', preconditions: { uid: cur.metadata.uid } },
          signal,
          what: this.describe(s),
        })
        return true
      } catch (err) {
        if (isNotFound(err)) return false
        if (err instanceof ApiError && err.code === 409 && attempt < 5) continue
        throw err
      }
    }
  }
}

/** Status write-back of Kubernetes primaries through a StatusWriter (server-side apply on /status). */
export function kubeStatusWriter(writer: {
  apply(obj: KubeObject, status: any, opts?: { signal?: AbortSignal }): Promise<unknown>
}): PrimaryStatusWriter<KubeObject> {
  return { writeStatus: (p, status, signal) => writer.apply(p, status as Record<string, unknown>, { signal }) }
}
