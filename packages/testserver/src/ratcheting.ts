// Validation ratcheting (CRDValidationRatcheting, on by default since Kubernetes 1.30): on an update
// of a custom resource, an error raised at a node whose value did not change is dropped, so that
// tightening a CRD's schema does not block updates of objects that were valid before.
// Invariants (after apiextensions-apiserver's validation/ratcheting.go and the CEL validator's
// ratchetingOptions, with apiserver's common.CorrelatedObject):
// - A node is correlated with the old object by object keys (a property or additionalProperties
//   schema), and by key fields in `x-kubernetes-list-type: map` lists; items of atomic and set lists
//   never correlate, nor do apiVersion and kind at the root, nor fields without a schema.
// - An error is dropped when the deepest correlated node on its path (itself, or its nearest
//   correlated ancestor) equals its old value: map lists compare item by item by key (order does
//   not matter), anything else by deep equality.
// - Schema errors (types, bounds, patterns, required, enum, junctors, formats) and CEL rules that do
//   not use oldSelf ratchet; transition rules always run; list-type uniqueness does not ratchet.
import { deepEqual } from './patch.ts'

type Schema = Record<string, any>
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The old item of a map list that has the same keys as `item` (map lists only). */
export function correlatedItem(oldList: unknown, s: Schema | undefined, item: unknown): unknown {
  if (!Array.isArray(oldList) || s?.['x-kubernetes-list-type'] !== 'map') return undefined
  const keys: string[] = s['x-kubernetes-list-map-keys'] ?? []
  const id = (x: any) => JSON.stringify(keys.map((k) => x?.[k]))
  const want = id(item)
  return oldList.find((x) => id(x) === want)
}

const childSchema = (s: Schema | undefined, k: string): Schema | undefined =>
  isObj(s?.properties?.[k]) ? s.properties[k] : isObj(s?.additionalProperties) ? s.additionalProperties : undefined

/** Whether `v` equals its correlated old value `old` (CorrelatedObject.CachedDeepEqual). */
export function unchanged(v: unknown, old: unknown, s: Schema | undefined): boolean {
  if (v === undefined || old === undefined) return false
  if (Array.isArray(v) && Array.isArray(old) && s?.['x-kubernetes-list-type'] === 'map') {
    if (v.length !== old.length) return false
    const items = isObj(s.items) ? s.items : undefined
    return v.every((x) => unchanged(x, correlatedItem(old, s, x), items))
  }
  if (isObj(v) && isObj(old) && s) {
    const keys = Object.keys(v)
    if (keys.length !== Object.keys(old).length) return false
    return keys.every((k) => (k in old ? unchanged(v[k], old[k], childSchema(s, k) ?? {}) : false))
  }
  return deepEqual(v, old)
}

/**
 * Whether errors at the node `path` (property names and list indexes from the root) ratchet: the
 * deepest node of the path that correlates with `oldRoot` is unchanged.
 */
export function ratchets(root: unknown, oldRoot: unknown, schema: Schema, path: Array<string | number>): boolean {
  if (oldRoot === undefined || oldRoot === null) return false
  let v: unknown = root
  let old: unknown = oldRoot
  let s: Schema | undefined = schema
  for (const [depth, seg] of path.entries()) {
    let nv: unknown
    let nold: unknown
    let ns: Schema | undefined
    if (Array.isArray(v) && typeof seg === 'number') {
      nv = v[seg]
      nold = correlatedItem(old, s, nv)
      ns = isObj(s?.items) ? s.items : undefined
    } else if (isObj(v) && isObj(old) && typeof seg === 'string' && !(depth === 0 && (seg === 'apiVersion' || seg === 'kind'))) {
      nv = v[seg]
      nold = seg in old ? old[seg] : undefined
      ns = childSchema(s, seg)
    }
    if (nold === undefined || ns === undefined) break // not correlatable: the nearest correlated node decides
    v = nv
    old = nold
    s = ns
  }
  return unchanged(v, old, s)
}

/** A JSON pointer ("/spec/items/0/port") as a path, list indexes as numbers where the value is a list. */
export function pathOfPointer(root: unknown, pointer: string): Array<string | number> {
  const out: Array<string | number> = []
  let v: any = root
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    const p = Array.isArray(v) && /^\d+$/.test(seg) ? Number(seg) : seg
    out.push(p)
    v = v?.[p as any]
  }
  return out
}
