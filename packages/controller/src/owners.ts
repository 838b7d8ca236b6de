// Owner references: the controller reference that ties a derived object to the object it was derived
// from, so the cluster's garbage collector deletes it with its owner (and the test server's does too).
// Invariants:
// - A reference needs the owner's apiVersion, kind, name and uid (the uid is what the garbage
//   collector matches: a reflected or created owner has one, a desired object not yet applied has
//   not); anything missing is an error naming the owner.
// - An object has at most one controller reference. withOwner replaces a reference to the same owner
//   (by uid) and refuses an object another owner already controls, as controller-runtime's
//   SetControllerReference does. Other, non-controller references are kept.
// - A namespaced owner can only own objects in its own namespace (the garbage collector would treat
//   the reference as dangling and delete the dependent); a cluster-scoped owner can own anything.
// - Pure functions: inputs are never mutated.
import { InvalidObjectError } from './errors.ts'
import { describe, type KubeObject } from '@statewright/k8s'

/** metav1.OwnerReference. */
export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
  controller?: boolean
  blockOwnerDeletion?: boolean
}

/** The controller reference to `owner`: controller and blockOwnerDeletion set. */
export function controllerRef(owner: KubeObject): OwnerReference {
  const m = owner?.metadata ?? {}
  const missing = (['apiVersion', 'kind'] as const).filter((k) => typeof owner?.[k] !== 'string' || owner[k] === '')
  if (typeof m.name !== 'string' || m.name === '') missing.push('metadata.name' as never)
  if (typeof m.uid !== 'string' || m.uid === '') missing.push('metadata.uid' as never)
  if (missing.length)
    throw new InvalidObjectError(
      `${describe(owner ?? {})}: cannot be an owner without ${missing.join(', ')} (use the object as the server returned or reflected it)`,
    )
  return { apiVersion: owner.apiVersion!, kind: owner.kind!, name: m.name!, uid: m.uid!, controller: true, blockOwnerDeletion: true }
}

/** The object's owner references (an empty array when it has none). */
export function ownerReferences(obj: KubeObject): OwnerReference[] {
  const refs = obj?.metadata?.ownerReferences
  return Array.isArray(refs) ? (refs as OwnerReference[]) : []
}

/** A copy of `obj` controlled by `owner`: its controller reference set, other references kept. */
export function withOwner<T extends KubeObject>(obj: T, owner: KubeObject): T {
  const ref = controllerRef(owner)
  const ownerNs = owner.metadata.namespace
  const ns = obj?.metadata?.namespace
  if (ownerNs && ns !== undefined && ns !== ownerNs) {
    throw new InvalidObjectError(
      `${describe(obj)}: cannot be owned by ${describe(owner)}: a namespaced owner only owns objects in its own namespace`,
    )
  }
  const refs = ownerReferences(obj)
  const other = refs.find((r) => r.controller === true && r.uid !== ref.uid)
  if (other)
    throw new InvalidObjectError(
      `${describe(obj)}: already controlled by ${other.kind} ${other.name} (uid ${other.uid}); cannot set ${describe(owner)} as its controller`,
    )
  const next = [...refs.filter((r) => r.uid !== ref.uid), ref]
  return { ...obj, metadata: { ...obj.metadata, ownerReferences: next } }
}

/** The controller reference of `obj`, if it has one. */
export function ownerOf(obj: KubeObject): OwnerReference | undefined {
  return ownerReferences(obj).find((r) => r.controller === true)
}

/** True when `obj` is controlled by `owner` (same uid). */
export function isOwnedBy(obj: KubeObject, owner: KubeObject): boolean {
  const uid = owner?.metadata?.uid
  return uid !== undefined && ownerOf(obj)?.uid === uid
}
