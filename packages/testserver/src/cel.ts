// CEL `x-kubernetes-validations` of custom resources, evaluated with @bufbuild/cel (a CEL evaluator
// for ECMAScript that passes the CEL conformance suite it ships as @bufbuild/cel-spec; Apache-2.0).
// Invariants:
// - Rules are parsed once per schema node (cached); a rule that does not parse refuses its CRD (422).
// - `self` is the value at the rule's node, typed by the schema (integers are CEL ints, objects and
//   maps CEL maps); a rule runs only where its node's value is present. A transition rule (one that
//   names `oldSelf`) runs only on an update whose old object has a value at the same path; any
//   other rule does not run on an update that left its node unchanged (ratcheting.ts).
// - A rule that evaluates to false is a 422 cause at the node's path (+ `fieldPath`), with its
//   `message`, its `messageExpression`'s result, or "failed rule: <rule>". A runtime error (a missing
//   key) fails the rule as Kubernetes does. A rule that calls a function this server does not
//   provide is answered with CelUnsupportedError (500, naming the rule and the function): never a
//   silent pass. Provided beyond CEL's standard library: the strings extension (split, substring,
//   ...), the Kubernetes library functions isIP, isCIDR, isURL and the lists library (cel-lists.ts).
import { isIP as netIsIP } from 'node:net'
import type { CelEnv } from '@bufbuild/cel'
import { StatusError, type StatusCause } from './status.ts'
import { TestServerError } from './errors.ts'
import { correlatedItem, unchanged } from './ratcheting.ts'
import { listsLibrary } from './cel-lists.ts'

// @bufbuild/cel is loaded on first need (a CRD with rules), not at server start: importing it costs
// about 130 ms, most of a start's budget, and most tests never use CEL. Steps that need it while it
// is not loaded yet return a promise (admission.ts runs them async).
type CelLib = typeof import('@bufbuild/cel')
let lib: CelLib | undefined
let stringsExt: typeof import('@bufbuild/cel/ext').strings | undefined
let loading: Promise<void> | undefined
export function celLoaded(): boolean {
  return lib !== undefined
}
export function loadCel(): Promise<void> {
  return (loading ??= Promise.all([import('@bufbuild/cel'), import('@bufbuild/cel/ext')]).then(([l, ext]) => {
    lib = l
    stringsExt = ext.strings
  }))
}
function cel(): CelLib {
  if (!lib) throw new TestServerError('CEL used before loadCel() resolved', 'Internal') // callers check celLoaded() first
  return lib
}

const hasRulesCache = new WeakMap<object, boolean>()
/** Whether a schema (or a CRD object) has any x-kubernetes-validations: only then is CEL needed. */
export function hasRules(o: object): boolean {
  let v = hasRulesCache.get(o)
  if (v === undefined) hasRulesCache.set(o, (v = JSON.stringify(o).includes('"x-kubernetes-validations"')))
  return v
}

type Schema = Record<string, any>
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The Kubernetes CEL library functions provided (k8s.io/apiserver/pkg/cel/library). */
const k8sFuncs = ({ celFunc, CelScalar }: CelLib) => [
  celFunc('isIP', [CelScalar.STRING], CelScalar.BOOL, (s) => netIsIP(s) !== 0 && !/(^|\.)0\d/.test(s)),
  celFunc('isCIDR', [CelScalar.STRING], CelScalar.BOOL, (s) => {
    const [ip, bits, extra] = s.split('/')
    const kind = netIsIP(ip ?? '')
    return extra === undefined && kind !== 0 && /^\d+$/.test(bits ?? '') && Number(bits) <= (kind === 4 ? 32 : 128)
  }),
  celFunc('isURL', [CelScalar.STRING], CelScalar.BOOL, (s) => {
    try {
      new URL(s)
      return true
    } catch {
      return false
    }
  }),
]

let env: CelEnv | undefined
function celEnvironment(): CelEnv {
  return (env ??= cel().celEnv({ funcs: [...stringsExt!, ...k8sFuncs(cel()), ...listsLibrary(cel())] }))
}

const expressions = new Map<string, (ctx: Record<string, unknown>) => unknown>()
/**
 * A CEL expression of an admission policy, compiled once (the same environment as rules); throws
 * when it does not parse. Calling it gives its value or a CEL error (check with isCelError).
 */
export function celExpression(expr: string): (ctx: Record<string, unknown>) => unknown {
  let p = expressions.get(expr)
  if (!p) {
    p = cel().plan(celEnvironment(), cel().parse(expr)) as (ctx: Record<string, unknown>) => unknown
    if (expressions.size > 10_000) expressions.clear()
    expressions.set(expr, p)
  }
  return p
}
export const isCelError = (v: unknown): v is Error => cel().isCelError(v)

/** A JSON value as CEL sees it without a schema: objects are maps, integral numbers CEL ints. */
export function jsonToCel(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonToCel)
  if (isObj(v)) return new Map(Object.entries(v).map(([k, x]) => [k, jsonToCel(x)]))
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v)
  return v
}

/** A rule that calls what this server's CEL environment lacks: an explicit 500, never a silent pass. */
export class CelUnsupportedError extends StatusError {
  constructor(rule: string, why: string) {
    super(
      500,
      'InternalError',
      `Internal error occurred: the test server cannot evaluate the x-kubernetes-validations rule ${JSON.stringify(rule)}: ${why} (see docs/testserver.md, "CEL")`,
    )
  }
}

interface Rule {
  rule: string
  message?: string
  messageExpression?: string
  fieldPath?: string
  reason?: string
  transition: boolean
  program: (ctx: Record<string, unknown>) => unknown
  messageProgram?: (ctx: Record<string, unknown>) => unknown
}

const compiled = new WeakMap<object, Rule[]>()

function rulesOf(s: Schema): Rule[] {
  const raw = s['x-kubernetes-validations']
  if (!Array.isArray(raw)) return []
  let rules = compiled.get(raw)
  if (rules) return rules
  rules = raw.map((r: any) => {
    const rule: Rule = {
      rule: String(r.rule),
      transition: /\boldSelf\b/.test(String(r.rule)),
      program: cel().plan(celEnvironment(), cel().parse(String(r.rule))) as Rule['program'],
    }
    if (typeof r.message === 'string') rule.message = r.message
    if (typeof r.messageExpression === 'string') {
      rule.messageExpression = r.messageExpression
      rule.messageProgram = cel().plan(celEnvironment(), cel().parse(r.messageExpression)) as Rule['program']
    }
    if (typeof r.fieldPath === 'string') rule.fieldPath = r.fieldPath
    if (typeof r.reason === 'string') rule.reason = r.reason
    return rule
  })
  compiled.set(raw, rules)
  return rules
}

/** Parses every rule of a schema (at CRD creation); the errors, with their path under the schema. */
export function compileRules(s: Schema, at = ''): Array<{ at: string; message: string }> {
  const out: Array<{ at: string; message: string }> = []
  try {
    rulesOf(s)
  } catch (e) {
    out.push({ at: `${at}.x-kubernetes-validations`, message: `Invalid value: "object": compilation failed: ${(e as Error).message}` })
  }
  if (isObj(s.properties))
    for (const [k, sub] of Object.entries(s.properties)) if (isObj(sub)) out.push(...compileRules(sub, `${at}.properties[${k}]`))
  if (isObj(s.items)) out.push(...compileRules(s.items, `${at}.items`))
  if (isObj(s.additionalProperties)) out.push(...compileRules(s.additionalProperties, `${at}.additionalProperties`))
  return out
}

/** A JSON value as CEL sees it under its schema. */
function toCel(v: unknown, s: Schema | undefined): unknown {
  if (Array.isArray(v)) return v.map((x) => toCel(x, isObj(s?.items) ? s.items : undefined))
  if (isObj(v)) {
    const m = new Map<string, unknown>()
    const props = isObj(s?.properties) ? s.properties : undefined
    const add = isObj(s?.additionalProperties) ? s.additionalProperties : undefined
    for (const [k, x] of Object.entries(v)) m.set(k, toCel(x, props?.[k] ?? add))
    return m
  }
  if (typeof v === 'number' && Number.isInteger(v) && (s?.type === 'integer' || s?.['x-kubernetes-int-or-string'] === true))
    return BigInt(v)
  return v
}

/** Evaluates every rule under `s` against `v` (old: the stored value at the same path, on update). */
export function celCauses(v: unknown, old: unknown, s: Schema | undefined, at: string, out: StatusCause[], parentSame = false): void {
  if (s === undefined || v === undefined || v === null) return
  const rules = rulesOf(s)
  // ratcheting: a rule without oldSelf does not run on a node that did not change, or, where old and
  // new do not correlate (atomic list items), whose nearest correlated ancestor did not (ratcheting.ts)
  const same = old !== undefined && old !== null ? unchanged(v, old, s) : parentSame
  if (rules.length) {
    const self = toCel(v, s)
    const oldSelf = old === undefined || old === null ? undefined : toCel(old, s)
    for (const r of rules) {
      if (r.transition && oldSelf === undefined) continue
      if (!r.transition && same) continue
      const ctx = r.transition ? { self, oldSelf } : { self }
      const result = r.program(ctx)
      if (result === true) continue
      const fp = r.fieldPath
      const field = !fp ? at : at === '' ? fp.replace(/^\./, '') : `${at}${/^[.[]/.test(fp) ? '' : '.'}${fp}`
      const shown = `"${s['x-kubernetes-int-or-string'] ? 'string' : (s.type ?? 'object')}"`
      if (cel().isCelError(result)) {
        if (/unbound function|no matching overload|unsupported/i.test(result.message)) throw new CelUnsupportedError(r.rule, result.message)
        out.push({ reason: 'FieldValueInvalid', message: `Invalid value: ${shown}: ${result.message} evaluating rule: ${r.rule}`, field })
        continue
      }
      let message = r.message ?? `failed rule: ${r.rule}`
      if (r.messageProgram) {
        const m = r.messageProgram(ctx)
        if (typeof m === 'string' && m !== '') message = m
      }
      out.push(causeFor(r.reason, field, shown, message))
    }
  }
  if (Array.isArray(v)) {
    const items = isObj(s.items) ? s.items : undefined
    if (!items) return
    // old items correlate with new ones only in map lists (by their keys), as in Kubernetes
    v.forEach((x, i) => celCauses(x, correlatedItem(old, s, x), items, `${at}[${i}]`, out, same))
    return
  }
  if (!isObj(v)) return
  const props = isObj(s.properties) ? s.properties : undefined
  const add = isObj(s.additionalProperties) ? s.additionalProperties : undefined
  for (const [k, x] of Object.entries(v)) {
    const sub = props?.[k] ?? add
    if (sub) celCauses(x, isObj(old) ? old[k] : undefined, sub, at === '' ? k : `${at}.${k}`, out, same)
  }
}

/** `shown` is the schema type, quoted: Kubernetes prints it, not the value, in a rule's `Invalid value`. */
function causeFor(reason: string | undefined, field: string, shown: string, message: string): StatusCause {
  switch (reason) {
    case 'FieldValueForbidden':
      return { reason, field, message: `Forbidden: ${message}` }
    case 'FieldValueRequired':
      return { reason, field, message: `Required value: ${message}` }
    case 'FieldValueDuplicate':
      return { reason, field, message: `Duplicate value: ${message}` }
    default:
      return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${shown}: ${message}` }
  }
}
