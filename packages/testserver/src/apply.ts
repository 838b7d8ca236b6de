// Server-side apply and managedFields: per-manager field ownership, after structured-merge-diff.
// Invariants:
// - Each managedFields entry is one (manager, operation, subresource); entries with no fields are dropped.
// - Apply: fields another manager owns with a different value conflict (409 with causes) unless
//   forced, in which case ownership moves. Fields this manager applied last time and no longer
//   applies are removed unless another *applier* still owns them (an Update manager's ownership does
//   not keep them); a dropped associative-list item goes whole, and a list or map the removal empties
//   goes too. A removal never leaves an item without its key.
// - Update (create, replace, patch): the writer takes the fields whose value it changed; fields the
//   write removed leave every manager.
// - Lists and maps merge as the kind's schema says (schema.ts).
import { StatusError } from './status.ts'
import { deepEqual, clone } from './patch.ts'
import type { FieldSchema } from './schema.ts'
import {
  fieldSetOf,
  fromFieldsV1,
  getAt,
  IGNORED_META,
  itemElement,
  keyOf,
  pathString,
  removePaths,
  schemaAt,
  toFieldsV1,
  topLevelAllowed,
  type FieldSet,
  type Path,
  type Scope,
} from './fieldset.ts'

export type { Scope }
export interface ManagedFieldsEntry {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: Record<string, any>
  subresource?: string
}
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)

// ---------- merging the applied configuration ----------
function mergeApplied(live: any, applied: any, s: FieldSchema): any {
  if (isObj(applied)) {
    if (s.atomicMap) return clone(applied)
    const out: Record<string, any> = isObj(live) ? { ...live } : {}
    for (const [k, v] of Object.entries(applied)) out[k] = mergeApplied(out[k], v, s.field(k))
    return out
  }
  if (Array.isArray(applied)) {
    const lt = s.list(applied)
    if (lt.type === 'set') {
      const out = Array.isArray(live) ? [...live] : []
      for (const x of applied) if (!out.some((y) => deepEqual(x, y))) out.push(x)
      return out
    }
    if (lt.type === 'map' && Array.isArray(live)) {
      const el = (x: any) => (isObj(x) ? itemElement(x, lt.keys, lt.defaults) : '')
      const out = [...live]
      const is = s.item()
      for (const item of applied) {
        const i = out.findIndex((x) => el(x) === el(item))
        if (i >= 0) out[i] = mergeApplied(out[i], item, is)
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
  return Array.isArray(mf) ? (mf.filter(isObj) as ManagedFieldsEntry[]) : []
}
const sameSlot = (e: ManagedFieldsEntry, manager: string, op: string, sub: string | undefined) =>
  e.manager === manager && e.operation === op && (e.subresource ?? '') === (sub ?? '')

function finish(entries: Array<{ e: ManagedFieldsEntry; set: FieldSet }>): ManagedFieldsEntry[] {
  return entries.filter((x) => x.set.size > 0).map((x) => ({ ...x.e, fieldsV1: toFieldsV1(x.set) }))
}

export interface ApplyResult {
  object: any
  managedFields: ManagedFieldsEntry[]
}

/** Does some proper or improper prefix of `p` belong to `set`? */
function underAny(p: Path, set: Set<string>): boolean {
  for (let n = 1; n <= p.length; n++) if (set.has(keyOf(p.slice(0, n)))) return true
  return false
}

/**
 * What an apply removes (structured-merge-diff's prune): the paths of `merged` that the manager
 * applied last time (`last`) and that lie in or under a path nobody applies any more. Owned by an
 * applier (anyone's Apply entry, the new configuration included) keeps a path, and with it its
 * ancestors: owning a field in an item means owning the item.
 */
function pruned(merged: any, last: FieldSet, appliers: FieldSet[], scope: Scope, schema: FieldSchema): Path[] {
  const mergedSet = fieldSetOf(merged, scope, schema)
  const lastKeys = new Set(last.keys())
  const gone = new Set<string>()
  for (const [k, p] of mergedSet) if (!appliers.some((a) => a.has(k)) && underAny(p, lastKeys)) gone.add(k)
  return [...mergedSet].filter(([k, p]) => lastKeys.has(k) && underAny(p, gone)).map(([, p]) => p)
}

/**
 * Server-side apply of `applied` by `manager` onto `live` (undefined: create). Returns the new object
 * with managedFields set. Throws a 409 Conflict with causes when other managers own differing fields.
 */
export function serverSideApply(
  live: any,
  applied: any,
  opts: { manager: string; force: boolean; apiVersion: string; subresource?: string; scope: Scope; schema: FieldSchema },
): ApplyResult {
  const { manager, force, apiVersion, subresource, scope, schema } = opts
  const base = live ? clone(live) : {}
  const appliedSet = fieldSetOf(applied, scope, schema)
  const entries = entriesOf(base).map((e) => ({ e, set: fromFieldsV1(e.fieldsV1) }))
  const mine = entries.find((x) => sameSlot(x.e, manager, 'Apply', subresource))

  // conflicts: fields another manager owns that this apply would change
  const conflicts: Array<{ manager: string; apiVersion: string; path: Path; sub?: string; owner: FieldSet }> = []
  const appliedKeys = [...appliedSet.keys()]
  const leafKeys = new Set(appliedKeys.filter((k) => !appliedKeys.some((o) => o !== k && o.startsWith(k + '\u0000'))))
  for (const x of entries) {
    if (x === mine) continue
    for (const [k, p] of x.set) {
      if (!appliedSet.has(k) || !leafKeys.has(k)) continue
      const av = getAt(applied, p),
        lv = getAt(base, p)
      // a granular map never conflicts as a whole (an applied `{}`), only values inside it do
      if ((isObj(av) || isObj(lv)) && !schemaAt(schema, p).atomicMap) continue
      if (!deepEqual(av, lv))
        conflicts.push({
          manager: x.e.manager,
          apiVersion: x.e.apiVersion,
          path: p,
          owner: x.set,
          ...(x.e.subresource ? { sub: x.e.subresource } : {}),
        })
    }
  }
  if (conflicts.length > 0 && !force) throw applyConflict(conflicts)
  // forced: the field leaves the entry that owned it (that manager's other entries keep theirs)
  for (const c of conflicts) c.owner.delete(keyOf(c.path))

  // merge, then drop what this manager stopped applying and no applier owns
  const obj = mergeApplied(base, stripIgnored(applied, scope), schema)
  if (mine) {
    const appliers = [appliedSet, ...entries.filter((x) => x !== mine && x.e.operation === 'Apply').map((x) => x.set)]
    removePaths(obj, pruned(obj, mine.set, appliers, scope, schema))
  }
  const entry: ManagedFieldsEntry = { manager, operation: 'Apply', apiVersion, time: now(), fieldsType: 'FieldsV1', fieldsV1: {} }
  if (subresource) entry.subresource = subresource
  const others = entries.filter((x) => x !== mine)
  // what the apply removed leaves every other manager too
  for (const x of others) for (const [k, p] of x.set) if (getAt(obj, p) === undefined) x.set.delete(k)
  const next = mine
    ? entries.map((x) =>
        x === mine ? { e: { ...entry, time: sameSets(mine.set, appliedSet) ? mine.e.time : entry.time }, set: appliedSet } : x,
      )
    : [...others, { e: entry, set: appliedSet }]
  const managedFields = finish(next)
  return { object: { ...obj, metadata: { ...(obj.metadata ?? {}), managedFields } }, managedFields }
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

function applyConflict(conflicts: Array<{ manager: string; apiVersion: string; path: Path; sub?: string }>): StatusError {
  const who = (c: { manager: string; apiVersion: string; sub?: string }) =>
    `"${c.manager}" using ${c.apiVersion}${c.sub ? ` with subresource "${c.sub}"` : ''}`
  const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${who(c)}`, field: pathString(c.path) }))
  const n = conflicts.length
  let message: string
  if (n === 1) message = `Apply failed with 1 conflict: conflict with ${who(conflicts[0]!)}: ${pathString(conflicts[0]!.path)}`
  else {
    const byMgr = new Map<string, string[]>()
    for (const c of conflicts) byMgr.set(who(c), [...(byMgr.get(who(c)) ?? []), pathString(c.path)])
    message = `Apply failed with ${n} conflicts: ` + [...byMgr].map(([w, ps]) => `conflicts with ${w}:\n- ${ps.join('\n- ')}`).join('\n')
  }
  return new StatusError(409, 'Conflict', message, { causes })
}

/**
 * Records a non-apply write (create, update, patch) by `manager`: it takes ownership of every field
 * whose value it changed; fields the write removed leave every manager.
 */
export function recordUpdate(
  old: any,
  next: any,
  opts: { manager: string; apiVersion: string; subresource?: string; scope: Scope; schema: FieldSchema },
): ManagedFieldsEntry[] {
  const { manager, apiVersion, subresource, scope, schema } = opts
  const entries = entriesOf(old).map((e) => ({ e, set: fromFieldsV1(e.fieldsV1) }))
  const newSet = fieldSetOf(next, scope, schema)
  const oldSet = old ? fieldSetOf(old, scope, schema) : new Map<string, Path>()
  // added paths (new items included) and modified leaves: an item whose field changed is not itself modified
  const inner = new Set<string>()
  for (const p of newSet.values()) for (let n = 1; n < p.length; n++) inner.add(keyOf(p.slice(0, n)))
  const changed: Path[] = []
  for (const [k, p] of newSet) if (!oldSet.has(k) || (!inner.has(k) && !deepEqual(getAt(next, p), getAt(old, p)))) changed.push(p)
  // object nodes this write created (a map or pointer struct that was absent) are owned themselves,
  // as structured-merge-diff's comparison reports them added; metadata itself never is
  const created = new Set<string>()
  for (const p of newSet.values())
    for (let n = 1; n < p.length; n++) {
      const q = p.slice(0, n)
      const qk = keyOf(q)
      if (created.has(qk) || !q[n - 1]!.startsWith('f:') || (n === 1 && q[0] === 'f:metadata')) continue
      if (isObj(getAt(next, q)) && getAt(old, q) === undefined && schemaAt(schema, q).ownedWhenCreated) {
        created.add(qk)
        changed.push(q)
      }
    }
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
