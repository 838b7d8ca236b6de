// Pruning and defaulting of custom resources by their CRD's structural schema, as the apiextensions
// apiserver does on every write: unknown fields are dropped (and reported, for the `Warning` header
// or a Strict 400), null in a field that is not `nullable` is dropped, then `default`s fill absent
// fields, from the root down (a defaulted object gets its own fields' defaults).
// Invariants:
// - `x-kubernetes-preserve-unknown-fields: true` keeps a node's unknown fields (and everything under
//   them; on an array, its items' unknown fields, as pruning/algorithm.go's skipPrune does; known
//   fields are still pruned by their schema); `x-kubernetes-embedded-resource` keeps apiVersion, kind and metadata; the root keeps
//   apiVersion, kind and metadata whatever the schema says (ObjectMeta is validated apart).
// - `additionalProperties: true` (or false) without a schema keeps the keys, not what is under them:
//   a map value loses its fields, as kube-apiserver prunes it with no schema.
// - The input is never changed: a changed node is copied (stored objects are frozen).
type Schema = Record<string, any>

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
const ROOT_KEEP = new Set(['apiVersion', 'kind', 'metadata'])

export interface PruneResult {
  value: any
  /** Paths of the dropped unknown fields ("spec.foo", "spec.items[0].bar"). */
  unknown: string[]
}

export function pruneAndDefault(obj: any, schema: Schema): PruneResult {
  const unknown: string[] = []
  const value = walk(obj, schema, '', unknown, true)
  return { value, unknown: unknown.sort() } // sorted, as pruning/algorithm.go returns them
}

function fieldPath(at: string, key: string): string {
  return at === '' ? key : /^[A-Za-z0-9_-]+$/.test(key) ? `${at}.${key}` : `${at}[${key}]`
}

/**
 * Go's nil schema, what `additionalProperties: true|false` (no schema) gives each value: a map under
 * it loses every field (reported), an array's items are pruned alike, a scalar stays (algorithm.go).
 */
const NOTHING: Schema = Object.freeze({})

/**
 * `keep`: the node is an item (at any depth of arrays) of an array marked preserve-unknown-fields,
 * whose unknown fields are kept as the array's own would be (pruning/algorithm.go skipPrune).
 */
function walk(v: any, s: Schema | undefined, at: string, unknown: string[], root = false, keep = false): any {
  if (s === undefined) return v
  if (Array.isArray(v)) {
    const items = isObj(s.items) ? s.items : s === NOTHING ? NOTHING : undefined
    if (!items) return v
    const keepItems = keep || s['x-kubernetes-preserve-unknown-fields'] === true
    let out: any[] | undefined
    for (let i = 0; i < v.length; i++) {
      const next = walk(v[i], items, `${at}[${i}]`, unknown, false, keepItems)
      if (next !== v[i]) (out ??= v.slice())[i] = next
    }
    return out ?? v
  }
  if (!isObj(v)) return v
  const props: Schema | undefined = isObj(s.properties) ? s.properties : undefined
  const ap = s.additionalProperties
  const additional: Schema | undefined = isObj(ap) ? ap : ap !== undefined && ap !== null ? NOTHING : undefined
  const preserve = keep || s['x-kubernetes-preserve-unknown-fields'] === true
  const embedded = s['x-kubernetes-embedded-resource'] === true
  let out: Record<string, any> | undefined
  const set = (k: string, val: any) => {
    out ??= { ...v }
    if (val === undefined) delete out[k]
    else out[k] = val
  }
  for (const [k, val] of Object.entries(v)) {
    if ((root || embedded) && k === 'metadata') continue
    const sub = props?.[k] ?? additional
    if (sub === undefined) {
      if ((root || embedded) && ROOT_KEEP.has(k)) continue
      if (!preserve) {
        unknown.push(fieldPath(at, k))
        set(k, undefined)
      }
      continue
    }
    if (val === null && sub.nullable !== true && sub !== NOTHING) {
      set(k, undefined)
      continue
    }
    const next = walk(val, sub, fieldPath(at, k), unknown)
    if (next !== val) set(k, next)
  }
  if (props) {
    const cur = out ?? v
    for (const [k, sub] of Object.entries(props)) {
      if (cur[k] === undefined && isObj(sub) && sub.default !== undefined) {
        set(k, walk(structuredClone(sub.default), sub, fieldPath(at, k), []))
      }
    }
  }
  return out ?? v
}
