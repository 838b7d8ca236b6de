// Server-side apply and managedFields: per-manager field ownership.
// Invariants:
// - A field path is a list of elements in the FieldsV1 vocabulary: `f:<name>` (map field),
//   `k:<json>` (item of an associative list, by merge key), `v:<json>` (item of a set list).
// - Each managedFields entry is one (manager, operation, subresource); entries with no fields are dropped.
// - Apply: fields another manager owns with a different value conflict (409 with causes) unless
//   forced, in which case ownership moves; fields this manager applied before and no longer applies are
//   removed from the object unless someone else owns them. Update: the writer takes the fields whose
//   value it changed; removed fields leave every manager.
// - Identity/bookkeeping fields (apiVersion, kind, metadata.name/namespace/uid/resourceVersion/...)
//   are never owned, as on a real server.
// Simplifications: custom kinds have atomic lists (no list-map schema), maps are always granular.
import { ApiError } from './status.ts'
import { deepEqual, clone, mergeKeyFor, SET_LISTS } from './patch.ts'

export interface ManagedFieldsEntry {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: Record<string, any>
  subresource?: string
}
type Path = string[]
export type FieldSet = Map<string, Path>
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
const keyOf = (p: Path) => p.join('\u0000')

const IGNORED_META = new Set(['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields', 'selfLink', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generateName'])

export type Scope = 'main' | 'status' | 'all'
function topLevelAllowed(k: string, scope: Scope): boolean {
  if (k === 'apiVersion' || k === 'kind') return false
  if (scope === 'status') return k === 'status'
  if (scope === 'main') return k !== 'status'
  return true
}

/** The set of fields an object sets (leaves, list items and empty containers). */
export function fieldSetOf(obj: any, scope: Scope): FieldSet {
  const out: FieldSet = new Map()
  const add = (p: Path) => out.set(keyOf(p), p)
  const walk = (v: any, p: Path, field: string) => {
    if (isObj(v)) {
      const keys = Object.keys(v)
      if (keys.length === 0) { add(p); return }
      for (const k of keys) walk(v[k], [...p, `f:${k}`], k)
    } else if (Array.isArray(v)) {
      const key = mergeKeyFor(field, v)
      if (SET_LISTS.has(field) && v.every((x) => !isObj(x))) {
        if (v.length === 0) add(p)
        for (const x of v) add([...p, `v:${JSON.stringify(x)}`])
      } else if (key && v.length > 0 && v.every((x) => isObj(x) && x[key] !== undefined)) {
        for (const x of v) {
          const ip = [...p, `k:${JSON.stringify({ [key]: x[key] })}`]
          add(ip)
          for (const k of Object.keys(x)) walk(x[k], [...ip, `f:${k}`], k)
        }
      } else add(p) // atomic list
    } else add(p)
  }
  if (!isObj(obj)) return out
  for (const k of Object.keys(obj)) {
    if (!topLevelAllowed(k, scope)) continue
    if (k === 'metadata' && isObj(obj.metadata)) {
      for (const mk of Object.keys(obj.metadata)) if (!IGNORED_META.has(mk)) walk(obj.metadata[mk], ['f:metadata', `f:${mk}`], mk)
    } else walk(obj[k], [`f:${k}`], k)
  }
  return out
}

/** Resolves a path in an object; `undefined` when absent. */
export function getAt(obj: any, p: Path): any {
  let cur = obj
  for (const el of p) {
    if (cur === undefined) return undefined
    if (el.startsWith('f:')) cur = isObj(cur) ? cur[el.slice(2)] : undefined
    else if (el.startsWith('k:')) {
      const k = JSON.parse(el.slice(2)) as Record<string, unknown>
      cur = Array.isArray(cur) ? cur.find((x) => isObj(x) && Object.entries(k).every(([kk, vv]) => deepEqual(x[kk], vv))) : undefined
    } else if (el.startsWith('v:')) {
      const v = JSON.parse(el.slice(2))
      cur = Array.isArray(cur) && cur.some((x) => deepEqual(x, v)) ? v : undefined
    } else return undefined
  }
  return cur
}

/** Removes a path from an object in place (no-op when absent). */
function removeAt(obj: any, p: Path): void {
  const parent = getAt(obj, p.slice(0, -1))
  const el = p[p.length - 1]!
  if (el.startsWith('f:') && isObj(parent)) delete parent[el.slice(2)]
  else if (Array.isArray(parent)) {
    const target = getAt(obj, p)
    const i = el.startsWith('k:') ? parent.indexOf(target) : parent.findIndex((x) => deepEqual(x, target))
    if (i >= 0) parent.splice(i, 1)
  }
}

// ---------- FieldsV1 <-> FieldSet ----------
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
  return p.map((el) => {
    if (el.startsWith('f:')) return `.${el.slice(2)}`
    if (el.startsWith('k:')) return `[${Object.entries(JSON.parse(el.slice(2))).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}]`
    if (el.startsWith('v:')) return `[=${el.slice(2)}]`
    return el
  }).join('')
}

// ---------- merging the applied configuration ----------
function mergeApplied(live: any, applied: any, field: string): any {
  if (isObj(applied)) {
    const out: Record<string, any> = isObj(live) ? { ...live } : {}
    for (const [k, v] of Object.entries(applied)) out[k] = mergeApplied(out[k], v, k)
    return out
  }
  if (Array.isArray(applied)) {
    if (SET_LISTS.has(field) && applied.every((x) => !isObj(x))) {
      const out = Array.isArray(live) ? [...live] : []
      for (const x of applied) if (!out.some((y) => deepEqual(x, y))) out.push(x)
      return out
    }
    const key = mergeKeyFor(field, applied)
    if (key && Array.isArray(live) && applied.every((x) => isObj(x) && x[key] !== undefined)) {
      const out = [...live]
      for (const item of applied) {
        const i = out.findIndex((x) => isObj(x) && deepEqual(x[key], item[key]))
        if (i >= 0) out[i] = mergeApplied(out[i], item, '')
        else out.push(clone(item))
      }
      return out
    }
    return clone(applied)
  }
  return applied
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z')

function entriesOf(obj: any): ManagedFieldsEntry[] {
  const mf = obj?.metadata?.managedFields
  return Array.isArray(mf) ? mf.filter(isObj) as ManagedFieldsEntry[] : []
}
const sameSlot = (e: ManagedFieldsEntry, manager: string, op: string, sub: string | undefined) =>
  e.manager === manager && e.operation === op && (e.subresource ?? '') === (sub ?? '')

function finish(entries: Array<{ e: ManagedFieldsEntry; set: FieldSet }>): ManagedFieldsEntry[] {
  return entries.filter((x) => x.set.size > 0).map((x) => ({ ...x.e, fieldsV1: toFieldsV1(x.set) }))
}

export interface ApplyResult { object: any; managedFields: ManagedFieldsEntry[] }

/**
 * Server-side apply of `applied` by `manager` onto `live` (undefined: create). Returns the new object
 * with managedFields set. Throws a 409 Conflict with causes when other managers own differing fields.
 */
export function serverSideApply(live: any, applied: any, opts: { manager: string; force: boolean; apiVersion: string; subresource?: string; scope: Scope }): ApplyResult {
  const { manager, force, apiVersion, subresource, scope } = opts
  const base = live ? clone(live) : {}
  const appliedSet = fieldSetOf(applied, scope)
  const entries = entriesOf(base).map((e) => ({ e, set: fromFieldsV1(e.fieldsV1) }))
  const mine = entries.find((x) => sameSlot(x.e, manager, 'Apply', subresource))

  // conflicts: fields another manager owns that this apply would change
  const conflicts: Array<{ manager: string; apiVersion: string; path: Path; sub?: string }> = []
  const leafKeys = new Set([...appliedSet.keys()].filter((k) => ![...appliedSet.keys()].some((o) => o !== k && o.startsWith(k + '\u0000'))))
  for (const x of entries) {
    if (x === mine) continue
    for (const [k, p] of x.set) {
      if (!appliedSet.has(k) || !leafKeys.has(k)) continue
      const av = getAt(applied, p), lv = getAt(base, p)
      // maps are granular: an (empty) map never conflicts, only values inside it do
      if (isObj(av) || isObj(lv)) continue
      if (!deepEqual(av, lv)) conflicts.push({ manager: x.e.manager, apiVersion: x.e.apiVersion, path: p, ...(x.e.subresource ? { sub: x.e.subresource } : {}) })
    }
  }
  if (conflicts.length > 0 && !force) throw applyConflict(conflicts)
  for (const c of conflicts) for (const x of entries) if (x.e.manager === c.manager) x.set.delete(keyOf(c.path))

  // merge, then drop what this manager stopped applying and nobody else owns
  let obj = mergeApplied(base, stripIgnored(applied, scope), '')
  if (mine) {
    const removed = [...mine.set.values()].filter((p) => !appliedSet.has(keyOf(p)) && !entries.some((x) => x !== mine && x.set.has(keyOf(p))))
    removed.sort((a, b) => b.length - a.length)
    for (const p of removed) removeAt(obj, p)
  }
  const entry: ManagedFieldsEntry = { manager, operation: 'Apply', apiVersion, time: now(), fieldsType: 'FieldsV1', fieldsV1: {} }
  if (subresource) entry.subresource = subresource
  const others = entries.filter((x) => x !== mine)
  const next = mine ? entries.map((x) => (x === mine ? { e: { ...entry, time: sameSets(mine.set, appliedSet) ? mine.e.time : entry.time }, set: appliedSet } : x)) : [...others, { e: entry, set: appliedSet }]
  const managedFields = finish(next)
  obj = { ...obj, metadata: { ...(obj.metadata ?? {}), managedFields } }
  return { object: obj, managedFields }
}

function sameSets(a: FieldSet, b: FieldSet): boolean {
  if (a.size !== b.size) return false
  for (const k of a.keys()) if (!b.has(k)) return false
  return true
}

function stripIgnored(applied: any, scope: Scope): any {
  const out: Record<string, any> = {}
  for (const [k, v] of Object.entries(applied ?? {})) {
    if (k === 'metadata' && isObj(v)) {
      const m: Record<string, any> = {}
      for (const [mk, mv] of Object.entries(v)) if (!IGNORED_META.has(mk) || mk === 'name' || mk === 'namespace') m[mk] = mv
      out.metadata = m
    } else if (k === 'apiVersion' || k === 'kind' || topLevelAllowed(k, scope)) out[k] = v
  }
  return out
}

function applyConflict(conflicts: Array<{ manager: string; apiVersion: string; path: Path; sub?: string }>): ApiError {
  const who = (c: { manager: string; apiVersion: string; sub?: string }) => `"${c.manager}" using ${c.apiVersion}${c.sub ? ` with subresource "${c.sub}"` : ''}`
  const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${who(c)}`, field: pathString(c.path) }))
  const n = conflicts.length
  let message: string
  if (n === 1) message = `Apply failed with 1 conflict: conflict with ${who(conflicts[0]!)}: ${pathString(conflicts[0]!.path)}`
  else {
    const byMgr = new Map<string, string[]>()
    for (const c of conflicts) byMgr.set(who(c), [...(byMgr.get(who(c)) ?? []), pathString(c.path)])
    message = `Apply failed with ${n} conflicts: ` + [...byMgr].map(([w, ps]) => `conflicts with ${w}:\n- ${ps.join('\n- ')}`).join('\n')
  }
  return new ApiError(409, 'Conflict', message, { causes })
}

/**
 * Records a non-apply write (create, update, patch) by `manager`: it takes ownership of every field
 * whose value it changed; fields the write removed leave every manager.
 */
export function recordUpdate(old: any, next: any, opts: { manager: string; apiVersion: string; subresource?: string; scope: Scope }): ManagedFieldsEntry[] {
  const { manager, apiVersion, subresource, scope } = opts
  const entries = entriesOf(old).map((e) => ({ e, set: fromFieldsV1(e.fieldsV1) }))
  const newSet = fieldSetOf(next, scope)
  const oldSet = old ? fieldSetOf(old, scope) : new Map<string, Path>()
  const changed: Path[] = []
  for (const [k, p] of newSet) if (!oldSet.has(k) || !deepEqual(getAt(next, p), getAt(old, p))) changed.push(p)
  const gone = [...oldSet.keys()].filter((k) => !newSet.has(k))
  for (const x of entries) {
    for (const k of gone) x.set.delete(k)
    // also drop ownership of anything below a removed path and of paths that are no longer leaves
    for (const k of [...x.set.keys()]) if (!newSet.has(k) && getAt(next, x.set.get(k)!) === undefined) x.set.delete(k)
  }
  if (changed.length === 0) return finish(entries)
  for (const x of entries) if (!sameSlot(x.e, manager, 'Update', subresource)) for (const p of changed) x.set.delete(keyOf(p))
  let mine = entries.find((x) => sameSlot(x.e, manager, 'Update', subresource))
  if (!mine) {
    const e: ManagedFieldsEntry = { manager, operation: 'Update', apiVersion, time: now(), fieldsType: 'FieldsV1', fieldsV1: {} }
    if (subresource) e.subresource = subresource
    mine = { e, set: new Map() }
    entries.push(mine)
  } else mine.e = { ...mine.e, time: now(), apiVersion }
  for (const p of changed) mine.set.set(keyOf(p), p)
  return finish(entries)
}
