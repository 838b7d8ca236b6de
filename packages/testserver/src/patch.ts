// PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.
// JSON patch and merge patch stay our own (small, no dependency) and are held to the public
// json-patch test suite and RFC 7386's examples (test/patch-suites.test.ts).
// Invariants: inputs are never mutated (every function returns fresh values); a malformed patch is
// a 400/422 StatusError, never a 500. Strategic merge knows the merge keys of the common built-in list
// fields (containers by name, ports, env, volumes, conditions by type, ...); other lists are replaced,
// which is also what a real server does for lists without a patch strategy.
import { StatusError, badRequest } from './status.ts'
import { BUILTIN_SET_LISTS, builtinMergeKey } from './schema.ts'

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)

export function clone<T>(v: T): T {
  return v === undefined ? v : structuredClone(v)
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    if (a.length !== bb.length) return false
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false
    return true
  }
  const ka = Object.keys(a as object),
    kb = Object.keys(b as object)
  if (ka.length !== kb.length) return false
  for (const k of ka) if (!Object.prototype.hasOwnProperty.call(b, k) || !deepEqual((a as any)[k], (b as any)[k])) return false
  return true
}

// ---------- JSON merge patch ----------
export function mergePatch(target: any, patch: any): any {
  if (!isObj(patch)) return clone(patch)
  const out: Record<string, any> = isObj(target) ? { ...target } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

// ---------- JSON patch ----------
function unescape(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~')
}
function parsePointer(p: string): string[] {
  if (p === '') return []
  if (!p.startsWith('/')) throw badRequest(`invalid JSON pointer: "${p}"`)
  return p.slice(1).split('/').map(unescape)
}
function patchFail(msg: string): StatusError {
  return new StatusError(422, 'Invalid', `the server rejected our request due to an error in our request: ${msg}`)
}

export function jsonPatch(doc: any, ops: any): any {
  if (!Array.isArray(ops)) throw badRequest('json patch must be an array of operations')
  let root = clone(doc)
  // RFC 6901: an array index is 0 or digits without a leading zero ("-" only where add allows it)
  const index = (seg: string): number => (/^(0|[1-9][0-9]*)$/.test(seg) ? Number(seg) : NaN)
  const get = (path: string[]): any => {
    let cur = root
    for (const seg of path) {
      if (Array.isArray(cur)) cur = cur[index(seg)]
      else if (isObj(cur)) cur = Object.prototype.hasOwnProperty.call(cur, seg) ? cur[seg] : undefined
      else return undefined
      if (cur === undefined) return undefined
    }
    return cur
  }
  const parentOf = (path: string[], op: string): [any, string] => {
    if (path.length === 0) throw patchFail(`${op} at the document root is not supported`)
    const parent = get(path.slice(0, -1))
    if (!isObj(parent) && !Array.isArray(parent))
      throw patchFail(`${op} operation does not apply: doc is missing path: "/${path.join('/')}"`)
    return [parent, path[path.length - 1]!]
  }
  const add = (path: string[], value: any, op: string) => {
    if (path.length === 0) {
      root = value
      return
    }
    const [parent, key] = parentOf(path, op)
    if (Array.isArray(parent)) {
      const i = key === '-' ? parent.length : index(key)
      if (!Number.isInteger(i) || i > parent.length) throw patchFail(`${op} operation does not apply: index out of range: ${key}`)
      parent.splice(i, 0, value)
    } else parent[key] = value
  }
  const remove = (path: string[], op: string): any => {
    const [parent, key] = parentOf(path, op)
    if (Array.isArray(parent)) {
      const i = index(key)
      if (!Number.isInteger(i) || i >= parent.length)
        throw patchFail(`${op} operation does not apply: doc is missing path: "/${path.join('/')}"`)
      return parent.splice(i, 1)[0]
    }
    if (!Object.prototype.hasOwnProperty.call(parent, key))
      throw patchFail(`${op} operation does not apply: doc is missing path: "/${path.join('/')}"`)
    const v = parent[key]
    delete parent[key]
    return v
  }
  for (const o of ops) {
    if (!isObj(o) || typeof o.op !== 'string' || typeof o.path !== 'string') throw badRequest('json patch operation needs "op" and "path"')
    const path = parsePointer(o.path)
    if ((o.op === 'add' || o.op === 'replace' || o.op === 'test') && !('value' in o)) throw patchFail(`${o.op} operation needs a "value"`)
    switch (o.op) {
      case 'add':
        add(path, clone(o.value), 'add')
        break
      case 'remove':
        remove(path, 'remove')
        break
      case 'replace':
        if (path.length === 0) {
          root = clone(o.value)
          break
        }
        remove(path, 'replace')
        add(path, clone(o.value), 'replace')
        break
      case 'move': {
        const v = remove(parsePointer(o.from), 'move')
        add(path, v, 'move')
        break
      }
      case 'copy': {
        const v = get(parsePointer(o.from))
        if (v === undefined) throw patchFail(`copy operation does not apply: doc is missing from path: "${o.from}"`)
        add(path, clone(v), 'copy')
        break
      }
      case 'test': {
        const v = get(path)
        if (!deepEqual(v, o.value)) throw patchFail(`testing value ${o.path} failed`)
        break
      }
      default:
        throw badRequest(`Unexpected kind: ${o.op}`)
    }
  }
  return root
}

// ---------- strategic merge patch ----------
const SET_LISTS = BUILTIN_SET_LISTS
const mergeKeyFor = builtinMergeKey

export function strategicMerge(target: any, patch: any): any {
  if (!isObj(patch)) return clone(patch)
  if (patch.$patch === 'replace') {
    const { $patch, ...rest } = patch
    return clone(stripDirectives(rest))
  }
  if (patch.$patch === 'delete') return undefined
  const out: Record<string, any> = isObj(target) ? { ...target } : {}
  const retain: string[] | undefined = Array.isArray(patch.$retainKeys) ? patch.$retainKeys : undefined
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$retainKeys' || k === '$patch' || k.startsWith('$setElementOrder/')) continue
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const f = k.slice('$deleteFromPrimitiveList/'.length)
      if (Array.isArray(out[f]) && Array.isArray(v)) out[f] = out[f].filter((x: any) => !v.some((d) => deepEqual(d, x)))
      continue
    }
    if (v === null) {
      delete out[k]
      continue
    }
    if (Array.isArray(v)) out[k] = mergeList(k, out[k], v)
    else if (isObj(v)) {
      const merged = strategicMerge(out[k], v)
      if (merged === undefined) delete out[k]
      else out[k] = merged
    } else out[k] = v
  }
  if (retain) for (const k of Object.keys(out)) if (!retain.includes(k) && !(k in patch)) delete out[k]
  return out
}

function mergeList(field: string, live: any, patch: any[]): any[] {
  const cur: any[] = Array.isArray(live) ? live : []
  if (SET_LISTS.has(field)) {
    const out = [...cur]
    for (const p of patch) if (!out.some((x) => deepEqual(x, p))) out.push(p)
    return out
  }
  const key = mergeKeyFor(field, [...cur, ...patch])
  if (!key || !patch.every(isObj)) return stripDirectives(clone(patch))
  if (patch.some((p) => p.$patch === 'replace')) return stripDirectives(patch.filter((p) => p.$patch !== 'replace'))
  const out = cur.map((x) => x)
  for (const p of patch) {
    const idx = out.findIndex((x) => isObj(x) && deepEqual(x[key], p[key]))
    if (p.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1)
      continue
    }
    if (idx >= 0) out[idx] = strategicMerge(out[idx], p)
    else out.push(stripDirectives(clone(p)))
  }
  return out
}

function stripDirectives(v: any): any {
  if (Array.isArray(v)) return v.map(stripDirectives)
  if (!isObj(v)) return v
  const out: Record<string, any> = {}
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x)
  return out
}

export type PatchKind = 'merge' | 'json' | 'strategic' | 'apply'
export function patchKindOf(contentType: string | undefined): PatchKind | undefined {
  const ct = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  switch (ct) {
    case 'application/merge-patch+json':
      return 'merge'
    case 'application/json-patch+json':
      return 'json'
    case 'application/strategic-merge-patch+json':
      return 'strategic'
    case 'application/apply-patch+yaml':
    case 'application/apply-patch+json':
      return 'apply'
    default:
      return undefined
  }
}
export type { Json }
