// Field sets: the paths an object sets, in managedFields' FieldsV1 vocabulary.
// Invariants:
// - A path is a list of elements: `f:<name>` (a field of a map), `k:<json>` (an item of an
//   associative list, by its key fields, keys in name order), `v:<json>` (a value of a set list).
// - A field set holds leaves (scalars, atomic lists and maps, empty containers), every item of an
//   associative list and every value of a set: owning a field inside an item implies owning the item,
//   as in structured-merge-diff. Non-empty granular maps are prefixes, not members.
// - Identity and bookkeeping fields (apiVersion, kind, metadata.name/uid/resourceVersion/...) are in
//   no field set, as on a real server.
import { deepEqual } from './patch.ts'
import type { FieldSchema } from './schema.ts'

export type Path = string[]
export type FieldSet = Map<string, Path>
export type Scope = 'main' | 'status' | 'all'

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
export const keyOf = (p: Path): string => p.join('\u0000')

export const IGNORED_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'generateName',
])

export function topLevelAllowed(k: string, scope: Scope): boolean {
  if (k === 'apiVersion' || k === 'kind') return false
  if (scope === 'status') return k === 'status'
  if (scope === 'main') return k !== 'status'
  return true
}

/** The path element of an associative list's item: its key fields, in name order (an absent key: its schema default). */
export function itemElement(item: Record<string, unknown>, keys: readonly string[], defaults?: Record<string, unknown>): string {
  const k: Record<string, unknown> = {}
  for (const name of [...keys].sort()) k[name] = item[name] ?? defaults?.[name]
  return `k:${JSON.stringify(k)}`
}

/** The set of fields an object sets, following `schema` for lists and maps. */
export function fieldSetOf(obj: any, scope: Scope, schema: FieldSchema): FieldSet {
  const out: FieldSet = new Map()
  const add = (p: Path) => out.set(keyOf(p), p)
  const walk = (v: any, p: Path, s: FieldSchema) => {
    if (isObj(v)) {
      const keys = Object.keys(v)
      if (keys.length === 0 || s.atomicMap) {
        add(p)
        return
      }
      for (const k of keys) walk(v[k], [...p, `f:${k}`], s.field(k))
    } else if (Array.isArray(v)) {
      if (v.length === 0) {
        add(p)
        return
      }
      const lt = s.list(v)
      if (lt.type === 'set') for (const x of v) add([...p, `v:${JSON.stringify(x)}`])
      else if (lt.type === 'map') {
        const is = s.item()
        for (const x of v) {
          const ip = [...p, itemElement(x, lt.keys, lt.defaults)]
          add(ip)
          for (const k of Object.keys(x)) walk(x[k], [...ip, `f:${k}`], is.field(k))
        }
      } else add(p)
    } else add(p)
  }
  if (!isObj(obj)) return out
  for (const k of Object.keys(obj)) {
    if (!topLevelAllowed(k, scope)) continue
    if (k === 'metadata' && isObj(obj.metadata)) {
      const ms = schema.field('metadata')
      for (const mk of Object.keys(obj.metadata)) if (!IGNORED_META.has(mk)) walk(obj.metadata[mk], ['f:metadata', `f:${mk}`], ms.field(mk))
    } else walk(obj[k], [`f:${k}`], schema.field(k))
  }
  return out
}

function matchesItem(x: unknown, keyJson: string): boolean {
  if (!isObj(x)) return false
  const k = JSON.parse(keyJson) as Record<string, unknown>
  for (const [kk, vv] of Object.entries(k)) if (!deepEqual(x[kk], vv)) return false
  return true
}

/** Resolves a path in an object; `undefined` when absent. */
export function getAt(obj: any, p: Path): any {
  let cur = obj
  for (const el of p) {
    if (cur === undefined) return undefined
    if (el.startsWith('f:')) cur = isObj(cur) ? cur[el.slice(2)] : undefined
    else if (el.startsWith('k:')) cur = Array.isArray(cur) ? cur.find((x) => matchesItem(x, el.slice(2))) : undefined
    else if (el.startsWith('v:')) {
      const v = JSON.parse(el.slice(2))
      cur = Array.isArray(cur) && cur.some((x) => deepEqual(x, v)) ? v : undefined
    } else return undefined
  }
  return cur
}

/** The schema at a path. */
export function schemaAt(schema: FieldSchema, p: Path): FieldSchema {
  let s = schema
  for (const el of p) s = el.startsWith('f:') ? s.field(el.slice(2)) : s.item()
  return s
}

/** Is the last element of `p` one of the key fields of the associative-list item it is in? */
export function isKeyField(p: Path): boolean {
  const parent = p[p.length - 2]
  const el = p[p.length - 1]!
  return parent !== undefined && parent.startsWith('k:') && el.startsWith('f:') && el.slice(2) in JSON.parse(parent.slice(2))
}

/**
 * Removes paths from an object in place, shallowest first (an item goes whole, with everything in
 * it), and drops a list or map that a removal left empty, as structured-merge-diff does. Key fields
 * of an item that stays are never removed: an item without its key could not be found again.
 */
export function removePaths(obj: any, paths: Path[]): void {
  const sorted = [...paths].sort((a, b) => a.length - b.length)
  for (const p of sorted) {
    if (p.length === 0 || isKeyField(p)) continue
    const parentPath = p.slice(0, -1)
    const parent = getAt(obj, parentPath)
    const el = p[p.length - 1]!
    let removed = false
    if (el.startsWith('f:') && isObj(parent) && el.slice(2) in parent) {
      delete parent[el.slice(2)]
      removed = true
    } else if (Array.isArray(parent)) {
      const i = el.startsWith('k:')
        ? parent.findIndex((x) => matchesItem(x, el.slice(2)))
        : parent.findIndex((x) => deepEqual(x, JSON.parse(el.slice(2))))
      if (i >= 0) {
        parent.splice(i, 1)
        removed = true
      }
    }
    if (removed) dropEmptied(obj, parentPath)
  }
}

/** Removes the container at `p` if a removal left it empty, then its parent likewise. */
function dropEmptied(obj: any, p: Path): void {
  while (p.length > 0) {
    const v = getAt(obj, p)
    const empty = Array.isArray(v) ? v.length === 0 : isObj(v) && Object.keys(v).length === 0
    const el = p[p.length - 1]!
    if (!empty || !el.startsWith('f:')) return
    const parent = getAt(obj, p.slice(0, -1))
    if (!isObj(parent)) return
    delete parent[el.slice(2)]
    p = p.slice(0, -1)
  }
}

export function toFieldsV1(set: FieldSet): Record<string, any> {
  const root: Record<string, any> = {}
  const paths = [...set.values()].sort((a, b) => a.length - b.length)
  const members = new Set(set.keys())
  for (const p of paths) {
    let node = root
    for (const el of p) node = node[el] ??= {}
  }
  // a member with children gets ".": {} (FieldsV1's "the node itself is owned")
  const mark = (node: Record<string, any>, p: Path) => {
    for (const [el, child] of Object.entries(node)) {
      if (el === '.') continue
      const cp = [...p, el]
      if (Object.keys(child).length > 0) {
        if (members.has(keyOf(cp))) child['.'] = {}
        mark(child, cp)
      }
    }
  }
  mark(root, [])
  return root
}
export function fromFieldsV1(tree: Record<string, any> | undefined): FieldSet {
  const out: FieldSet = new Map()
  const walk = (node: Record<string, any>, p: Path) => {
    const keys = Object.keys(node)
    if (p.length > 0 && (keys.length === 0 || keys.includes('.'))) out.set(keyOf(p), p)
    for (const k of keys) if (k !== '.' && isObj(node[k])) walk(node[k], [...p, k])
  }
  if (isObj(tree)) walk(tree, [])
  return out
}

/** `.spec.containers[name="c"].image`, the way the real server prints a conflicting field. */
export function pathString(p: Path): string {
  return p
    .map((el) => {
      if (el.startsWith('f:')) return `.${el.slice(2)}`
      if (el.startsWith('k:'))
        return `[${Object.entries(JSON.parse(el.slice(2)))
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(',')}]`
      if (el.startsWith('v:')) return `[=${el.slice(2)}]`
      return el
    })
    .join('')
}
