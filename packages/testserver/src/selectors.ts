// Label and field selectors, parsed once per request and applied to plain objects.
// Invariants: a parse error is a 400 BadRequest (as on a real server); an empty selector matches
// everything; field selectors only accept the fields the resource type declares selectable.
import { badRequest } from './status.ts'

export type LabelReq =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' }
  | { key: string; op: 'gt' | 'lt'; value: number }

export type Matcher = (obj: any) => boolean

const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
function checkValue(v: string, sel: string): string {
  if (v.length > 63 || !VALUE.test(v)) throw badRequest(`unable to parse requirement: invalid label value: "${v}" in selector "${sel}"`)
  return v
}
const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$/

/** Splits at top-level commas (commas inside `in (a,b)` belong to the term). */
function splitTerms(s: string): string[] {
  const out: string[] = []
  let depth = 0,
    cur = ''
  for (const ch of s) {
    if (ch === '(') depth++
    else if (ch === ')') depth--
    if (ch === ',' && depth === 0) {
      out.push(cur)
      cur = ''
    } else cur += ch
  }
  out.push(cur)
  return out.map((t) => t.trim()).filter((t) => t.length > 0)
}

function checkKey(key: string, sel: string): string {
  if (!KEY.test(key)) throw badRequest(`unable to parse requirement: invalid label key "${key}" in selector "${sel}"`)
  return key
}

export function parseLabelSelector(sel: string | undefined | null): LabelReq[] {
  if (!sel) return []
  const reqs: LabelReq[] = []
  for (const term of splitTerms(sel)) {
    let m: RegExpMatchArray | null
    if ((m = term.match(/^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/))) {
      const values = m[3]!
        .split(',')
        .map((v) => checkValue(v.trim(), sel))
        .filter((v) => v !== '')
      reqs.push({ key: checkKey(m[1]!, sel), op: m[2] as 'in' | 'notin', values })
    } else if ((m = term.match(/^!\s*(\S+)$/))) {
      reqs.push({ key: checkKey(m[1]!, sel), op: '!exists' })
    } else if ((m = term.match(/^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*([^=!<>\s]*)$/))) {
      const [, key, op, value] = m as unknown as [string, string, string, string]
      checkKey(key, sel)
      if (op === '<' || op === '>') {
        const n = Number(value)
        if (!/^-?\d+$/.test(value)) throw badRequest(`unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`)
        reqs.push({ key, op: op === '>' ? 'gt' : 'lt', value: n })
      } else reqs.push({ key, op: op === '!=' ? 'notin' : 'in', values: [checkValue(value, sel)] })
    } else if (/^[^=!<>\s()]+$/.test(term)) {
      reqs.push({ key: checkKey(term, sel), op: 'exists' })
    } else {
      throw badRequest(`unable to parse requirement: found '${term}', expected: identifier in selector "${sel}"`)
    }
  }
  return reqs
}

export function matchLabels(reqs: LabelReq[], labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {}
  for (const r of reqs) {
    const has = Object.prototype.hasOwnProperty.call(l, r.key)
    const v = l[r.key]
    switch (r.op) {
      case 'exists':
        if (!has) return false
        break
      case '!exists':
        if (has) return false
        break
      case 'in':
        if (!has || !r.values.includes(v!)) return false
        break
      case 'notin':
        if (has && r.values.includes(v!)) return false
        break
      case 'gt':
        if (!has || !(Number(v) > r.value)) return false
        break
      case 'lt':
        if (!has || !(Number(v) < r.value)) return false
        break
    }
  }
  return true
}

export interface FieldReq {
  path: string
  op: '=' | '!='
  value: string
}

export function parseFieldSelector(sel: string | undefined | null, allowed: string[]): FieldReq[] {
  if (!sel) return []
  const reqs: FieldReq[] = []
  for (const term of splitTerms(sel)) {
    const m = term.match(/^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/)
    if (!m) throw badRequest(`invalid selector: '${sel}'; can't understand '${term}'`)
    const path = m[1]!
    if (path !== 'metadata.name' && path !== 'metadata.namespace' && !allowed.includes(path)) {
      throw badRequest(`field label not supported: ${path}`)
    }
    reqs.push({ path, op: m[2] === '!=' ? '!=' : '=', value: m[3]!.trim() })
  }
  return reqs
}

function fieldValue(obj: any, path: string): string {
  let cur = obj
  for (const p of path.split('.')) cur = cur == null ? undefined : cur[p]
  if (cur == null) return ''
  return typeof cur === 'object' ? JSON.stringify(cur) : String(cur)
}

export function matchFields(reqs: FieldReq[], obj: any): boolean {
  for (const r of reqs) {
    const v = fieldValue(obj, r.path)
    if (r.op === '=' ? v !== r.value : v === r.value) return false
  }
  return true
}

/** One matcher for both selectors; `undefined` when nothing is selected (the fast path). */
export function makeMatcher(
  labelSelector: string | null | undefined,
  fieldSelector: string | null | undefined,
  allowedFields: string[],
): Matcher | undefined {
  const l = parseLabelSelector(labelSelector)
  const f = parseFieldSelector(fieldSelector, allowedFields)
  if (l.length === 0 && f.length === 0) return undefined
  return (obj) => matchLabels(l, obj?.metadata?.labels) && matchFields(f, obj)
}

/** A metav1.LabelSelector (matchLabels + matchExpressions) in its string form, as /scale reports it. */
export function labelSelectorString(sel: any): string {
  const parts: string[] = []
  for (const [k, v] of Object.entries(sel?.matchLabels ?? {})) parts.push(`${k}=${v}`)
  for (const e of sel?.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',')
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`)
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`)
    else if (e.operator === 'Exists') parts.push(e.key)
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`)
  }
  return parts.sort().join(',')
}

/** Whether a metav1.LabelSelector selects these labels (an empty selector selects everything). */
export function labelSelectorMatches(sel: any, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {}
  for (const [k, v] of Object.entries(sel?.matchLabels ?? {})) if (l[k] !== v) return false
  for (const e of sel?.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(l, e.key)
    const vals: string[] = e.values ?? []
    if (e.operator === 'In' && !(has && vals.includes(l[e.key]!))) return false
    if (e.operator === 'NotIn' && has && vals.includes(l[e.key]!)) return false
    if (e.operator === 'Exists' && !has) return false
    if (e.operator === 'DoesNotExist' && has) return false
  }
  return true
}
