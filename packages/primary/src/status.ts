// What a PrimaryController reports about a primary: its status write-back and its events.
// Invariants:
// - A failed sync writes an error status (when a status writer is given); a failure of that write
//   is reported, never thrown over the sync's own error.
// - Events always name an object: the primary itself when it is a Kubernetes object, else a
//   pseudo-object of the primary kind whose name is derived from the key (stable per key).
import type { InvolvedObject } from '@statewright/reconciler'
import { ownerKeyLabelValue } from './stamps.ts'

/** The status written when a sync fails: `errorStatus` when given, else `{ ...status, error }`. */
export function errorStatusOf(message: string, status: unknown, errorStatus?: (message: string, status: unknown) => unknown): unknown {
  return errorStatus ? errorStatus(message, status) : { ...(status !== null && typeof status === 'object' ? status : {}), error: message }
}

/** The object events about a primary name: itself when it is a Kubernetes object, else a pseudo-object in `namespace`. */
export function involvedObject(p: unknown, key: string, kind: string, namespace: string): InvolvedObject {
  const o = p as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: string } } | undefined
  if (o && typeof o === 'object' && typeof o.apiVersion === 'string' && typeof o.kind === 'string' && o.metadata?.name)
    return o as InvolvedObject
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
