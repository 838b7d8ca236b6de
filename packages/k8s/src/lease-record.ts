// A Lease record (coordination.k8s.io/v1) as the lock and the shard leases read and write it: its
// shape, where it lives, and the times in it.
// Invariants:
// - Times are Kubernetes MicroTimes (RFC 3339, UTC, exactly six fractional digits), from wallNow().
// - A holder declares its lease duration in ms in an annotation (LEASE_DURATION_ANNOTATION) besides
//   the whole seconds of spec.leaseDurationSeconds; readers take the annotation when it is there.
import { wallNow } from './wallclock.ts'

export const LEASE_DURATION_ANNOTATION = 'coordination.statewright.dev/lease-duration-ms'

/** The spec of a coordination.k8s.io/v1 Lease. */
export interface LeaseSpec {
  holderIdentity?: string
  leaseDurationSeconds?: number
  acquireTime?: string
  renewTime?: string
  leaseTransitions?: number
}

export interface LeaseObject {
  apiVersion: 'coordination.k8s.io/v1'
  kind: 'Lease'
  metadata: {
    name: string
    namespace: string
    resourceVersion?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    [k: string]: unknown
  }
  spec: LeaseSpec
}

/** A Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits. */
export function microTime(ms: number = wallNow()): string {
  const whole = Math.floor(ms)
  const micros = Math.min(999, Math.floor((ms - whole) * 1000))
  const iso = new Date(whole).toISOString() // 2026-11-21T10:24:00.123Z
  return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`
}

export function leasePath(namespace: string, name?: string): string {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`
}

/** The lease duration a Lease's holder declared, ms. */
export function leaseDurationMsOf(lease: LeaseObject): number {
  const ann = Number(lease.metadata.annotations?.[LEASE_DURATION_ANNOTATION])
  if (Number.isFinite(ann) && ann > 0) return ann
  return Math.max(1, lease.spec.leaseDurationSeconds ?? 15) * 1000
}
