// Kuadrant's RateLimitPolicy (kuadrant.io/v1): its type, validation with messages naming the field,
// and its rules as a PolicySpec for effective-policy reduction.
import type { KubeObject } from '@statewright/k8s'
import type { PolicySpec } from '@statewright/topology'

export const RATE_LIMIT_POLICY = { apiVersion: 'kuadrant.io/v1', kind: 'RateLimitPolicy' } as const
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io'

export interface Rate {
  limit: number
  window: string
}
export interface Limit {
  rates: Rate[]
  counters?: Array<{ expression: string }>
}
export interface LimitsBlock {
  strategy?: 'atomic' | 'merge'
  limits: Record<string, Limit>
}
export interface RateLimitPolicy extends KubeObject {
  spec: {
    targetRef: { group: string; kind: string; name: string; sectionName?: string }
    limits?: Record<string, Limit>
    defaults?: LimitsBlock
    overrides?: LimitsBlock
  }
  status?: { conditions?: Array<Record<string, unknown>> }
}

/** A limit with its window in whole seconds. */
export interface ParsedLimit {
  rates: Array<{ limit: number; seconds: number }>
  counters: string[]
}

export type Validated = { ok: true; spec: PolicySpec<ParsedLimit> } | { ok: false; reason: 'Invalid'; message: string }

const DURATION = /^([0-9]{1,5}(h|m|s|ms)){1,4}$/
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 }

/** A Gateway API duration ("1m30s", "500ms") in whole seconds (truncated); undefined if malformed. */
export function windowSeconds(w: unknown): number | undefined {
  if (typeof w !== 'string' || !DURATION.test(w)) return undefined
  let ms = 0
  for (const m of w.matchAll(/([0-9]+)(ms|h|m|s)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!
  return Math.floor(ms / 1000)
}

const invalid = (message: string): Validated => ({ ok: false, reason: 'Invalid', message: `RateLimitPolicy target is invalid: ${message}` })

/** Checks a policy: its targetRef (group first, then kind), then exactly one block, strategy, limits. */
export function validate(p: RateLimitPolicy): Validated {
  const ref = p.spec?.targetRef
  if (!ref || ref.group !== GATEWAY_API_GROUP) return invalid(`Invalid targetRef.group. The only supported value is '${GATEWAY_API_GROUP}'`)
  if (ref.kind !== 'HTTPRoute' && ref.kind !== 'Gateway')
    return invalid(`Invalid targetRef.kind. The only supported values are 'HTTPRoute' and 'Gateway'`)
  if (typeof ref.name !== 'string' || !ref.name) return invalid('spec.targetRef.name: required')
  const blocks = (['limits', 'defaults', 'overrides'] as const).filter((b) => p.spec[b] !== undefined)
  if (blocks.length !== 1)
    return invalid(`spec: give exactly one of limits, defaults, overrides (got ${blocks.length ? blocks.join(', ') : 'none'})`)
  const block = blocks[0]!
  let limits: unknown
  let strategy: unknown = 'atomic'
  let field = `spec.${block}`
  if (block === 'limits') limits = p.spec.limits
  else {
    const b = p.spec[block] as LimitsBlock
    strategy = b?.strategy ?? 'atomic'
    if (strategy !== 'atomic' && strategy !== 'merge')
      return invalid(`spec.${block}.strategy: ${JSON.stringify(strategy)} is not one of "atomic", "merge"`)
    limits = b?.limits
    field = `spec.${block}.limits`
  }
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits))
    return invalid(`${field}: must be a map of limit name to limit`)
  const rules: Record<string, ParsedLimit> = {}
  for (const [name, l] of Object.entries(limits as Record<string, Limit>)) {
    const rates = l?.rates
    if (!Array.isArray(rates) || rates.length === 0) return invalid(`${field}.${name}.rates: at least one rate is required`)
    const parsed: ParsedLimit = { rates: [], counters: [] }
    for (const [i, r] of rates.entries()) {
      if (!Number.isInteger(r?.limit) || r.limit < 0)
        return invalid(`${field}.${name}.rates[${i}].limit: ${JSON.stringify(r?.limit)} is not a non-negative integer`)
      const seconds = windowSeconds(r.window)
      if (seconds === undefined)
        return invalid(
          `${field}.${name}.rates[${i}].window: ${JSON.stringify(r.window)} is not a Gateway API duration (e.g. "10s", "1m30s")`,
        )
      if (seconds === 0) return invalid(`${field}.${name}.rates[${i}].window: ${JSON.stringify(r.window)} is shorter than one second`)
      parsed.rates.push({ limit: r.limit, seconds })
    }
    for (const [i, c] of (l.counters ?? []).entries()) {
      if (typeof c?.expression !== 'string' || !c.expression) return invalid(`${field}.${name}.counters[${i}].expression: required`)
      parsed.counters.push(c.expression)
    }
    rules[name] = parsed
  }
  return { ok: true, spec: { mode: block === 'overrides' ? 'overrides' : 'defaults', strategy: strategy as 'atomic' | 'merge', rules } }
}
