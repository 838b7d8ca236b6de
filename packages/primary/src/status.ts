// What a PrimaryController reports about a primary: its status write-back and its events.
// Invariants:
// - A failed sync writes an error status (when a status writer is given); a failure of that write
//   is reported, never thrown over the sync's own error.
// - A primary change is our own status write-back when its status is the one our last sync wrote
//   (compared as canonical JSON); without a record every change is someone else's.
// - Events always name an object: the primary itself when it is a Kubernetes object, else a
//   pseudo-object of the primary kind whose name is derived from the key (stable per key).
import type { InvolvedObject } from './contract.ts'
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

/** The status each key's last sync wrote: tells our own write-backs from re-puts. */
export class WrittenStatuses {
  private readonly byKey = new Map<string, string>()

  set(key: string, status: unknown): void {
    this.byKey.set(key, canonical(status))
  }

  forget(key: string): void {
    this.byKey.delete(key)
  }

  /** Whether `p` (a KV row with `value.status`, or an object with `status`) carries what we wrote for `key`. */
  isOurs(key: string, p: unknown): boolean {
    const ours = this.byKey.get(key)
    if (ours === undefined) return false
    const o = p as { value?: { status?: unknown }; status?: unknown; key?: unknown }
    const status = typeof o.key === 'string' && o.value && typeof o.value === 'object' ? o.value.status : o.status
    return canonical(status) === ours
  }
}

/** JSON with sorted keys: equal values give equal strings whatever their key order. */
export function canonical(v: unknown): string {
  return (
    JSON.stringify(v, (_k, x) =>
      x && typeof x === 'object' && !Array.isArray(x)
        ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : x,
    ) ?? 'undefined'
  )
}
