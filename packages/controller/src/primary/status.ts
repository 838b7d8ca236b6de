// What a PrimaryController reports about a primary: its status write-back and its events.
// Invariants:
// - A failed sync writes an error status (when a status writer is given); a failure of that write
//   is reported, never thrown over the sync's own error.
// - Events always name an object: the primary itself when it is a Kubernetes object, else a
//   pseudo-object of the primary kind whose name is derived from the key (stable per key).
import type { InvolvedObject, KubeObject } from '@statewright/k8s'
import { ownerKeyLabelValue } from './stamps.ts'

/** Writes a primary's status back (KvStatusWriter: CAS; kubeStatusWriter: SSA on /status). */
export interface PrimaryStatusWriter<P> {
  writeStatus(primary: P, status: unknown, signal?: AbortSignal): Promise<unknown>
}

/** Where events go: an EventRecorder of @statewright/k8s fits. */
export interface EventSink {
  normal(obj: InvolvedObject, reason: string, message: string): void
  warning(obj: InvolvedObject, reason: string, message: string): void
}

/** The status written when a sync fails: `errorStatus` when given, else `{ ...status, error }`. */
export function errorStatusOf(message: string, status: unknown, errorStatus?: (message: string, status: unknown) => unknown): unknown {
  return errorStatus ? errorStatus(message, status) : { ...(status !== null && typeof status === 'object' ? status : {}), error: message }
}

/** The object events about a primary name: itself when it is a Kubernetes object, else a pseudo-object in `namespace`. */
export function involvedObject(p: unknown, key: string, kind: string, namespace: string): InvolvedObject {
  const o = p as KubeObject | undefined
  if (o && typeof o === 'object' && typeof o.apiVersion === 'string' && typeof o.kind === 'string' && o.metadata?.name) return o
  return {
    apiVersion: 'statewright.io/v1',
    kind,
    metadata: {
      namespace,
      name: ownerKeyLabelValue(key)
        .toLowerCase()
        .replace(/[^a-z0-9.-]/g, '-'),
    },
  }
}
