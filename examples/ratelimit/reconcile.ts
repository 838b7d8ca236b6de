// The rate-limit reconcile function: from the topology (GatewayClass -> Gateway -> Listener ->
// HTTPRoute -> rule, RateLimitPolicies attached) to Limitador's limits, one wasm-style config per
// Gateway, and each policy's Accepted and Enforced conditions. Pure over its inputs: every run
// computes the whole state of the world, sorted, so equal inputs give equal objects.
import { type ConditionInput } from '@statewright/controller'
import { type StateOfWorldContext } from '@statewright/controller/stateofworld'
import {
  effectivePolicy,
  routeHostnames,
  locator,
  GATEWAY_API_GROUP,
  type EffectivePolicy,
  type TopologyNode,
  type TopologyView,
  type Listener,
  type Route,
  type RouteRule,
} from '@statewright/topology'
import type { KubeObject } from '@statewright/k8s'
import { validate, type ParsedLimit, type RateLimitPolicy, type Validated } from './policy.ts'

export interface RateLimitOptions {
  limitadorNamespace: string
}

interface PathInfo {
  gateway: TopologyNode
  listener: TopologyNode<Listener>
  route: TopologyNode<Route>
  rule: TopologyNode<RouteRule>
  effective: EffectivePolicy<ParsedLimit>
}

const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0)
const nsName = (n: { namespace?: string; name: string }) => `${n.namespace ?? ''}/${n.name}`
const configMap = (namespace: string, name: string, key: string, value: unknown): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { [key]: `${JSON.stringify(value, null, 2)}\n` },
})

/** The paths GatewayClass?→Gateway→Listener→HTTPRoute→rule with their effective policies. */
export function pathsOf(view: TopologyView, specOf: (p: TopologyNode) => Validated): PathInfo[] {
  const out: PathInfo[] = []
  for (const path of view.allPaths({ leafKinds: ['HTTPRouteRule'] })) {
    const at = (k: string) => path.find((n) => n.kind === k)
    const gateway = at('Gateway')
    const listener = at('Listener')
    const route = at('HTTPRoute')
    const rule = at('HTTPRouteRule')
    if (!gateway || !listener || !route || !rule) continue
    const effective = effectivePolicy(view, path, (p) => {
      const v = specOf(p)
      return v.ok ? v.spec : undefined
    })
    out.push({ gateway, listener, route, rule, effective })
  }
  return out
}

const limitId = (source: string, view: TopologyView, limit: string) => {
  const p = view.node(source)!
  return `${p.namespace}/${p.name}/${limit}`
}

/** Everything one run produces. */
export function compute(view: TopologyView, o: RateLimitOptions) {
  const validated = new Map<string, Validated>()
  const specOf = (p: TopologyNode) => {
    let v = validated.get(p.locator)
    if (!v) {
      v = validate(p.object as RateLimitPolicy)
      validated.set(p.locator, v)
    }
    return v
  }
  const paths = pathsOf(view, specOf)
  // Limitador: one limit per effective (route, limit, rate)
  const limits = new Map<string, { namespace: string; id: string; maxValue: number; seconds: number; variables: string[] }>()
  const perGateway = new Map<string, { gateway: TopologyNode; actionSets: Array<Record<string, unknown>> }>()
  for (const p of paths) {
    if (p.effective.rules.length === 0) continue
    const scope = nsName(p.route)
    const ids: string[] = []
    for (const r of p.effective.rules) {
      const id = limitId(r.source, view, r.name)
      ids.push(id)
      for (const rate of r.rule.rates) {
        const l = { namespace: scope, id, maxValue: rate.limit, seconds: rate.seconds, variables: r.rule.counters }
        limits.set(JSON.stringify(l), l)
      }
    }
    const g = perGateway.get(p.gateway.locator) ?? { gateway: p.gateway, actionSets: [] }
    perGateway.set(p.gateway.locator, g)
    const matches = (p.rule.object.matches ?? [])
      .filter((m) => m.path)
      .map((m) => `${m.path!.type ?? 'PathPrefix'}:${m.path!.value ?? '/'}`)
    for (const hostname of routeHostnames(p.listener.object, p.route.object as unknown as Route)) {
      g.actionSets.push({
        hostname,
        listener: p.listener.section,
        route: scope,
        rule: p.rule.section,
        matches: matches.length ? matches : ['PathPrefix:/'],
        scope,
        limits: [...new Set(ids)].sort(),
      })
    }
  }
  const sortedLimits = [...limits.values()].sort(
    (a, b) => cmp(a.namespace, b.namespace) || cmp(a.id, b.id) || cmp(a.seconds, b.seconds) || cmp(a.maxValue, b.maxValue),
  )
  const objects: KubeObject[] = [configMap(o.limitadorNamespace, 'limitador-limits', 'limits.json', sortedLimits)]
  const gatewayObjects = new Map<string, KubeObject[]>()
  for (const { gateway, actionSets } of [...perGateway.values()].sort((a, b) => cmp(a.gateway.locator, b.gateway.locator))) {
    actionSets.sort(
      (a, b) =>
        cmp(a.hostname as string, b.hostname as string) ||
        cmp(a.route as string, b.route as string) ||
        cmp(a.rule as string, b.rule as string) ||
        cmp(a.listener as string, b.listener as string),
    )
    const gw = nsName(gateway)
    const objs = [
      configMap(gateway.namespace!, `kuadrant-${gateway.name}`, 'config.json', { gateway: gw, actionSets }),
      configMap(gateway.namespace!, `kuadrant-ratelimiting-${gateway.name}`, 'cluster.json', {
        gateway: gw,
        service: 'ratelimit-service',
        endpoint: `limitador-limitador.${o.limitadorNamespace}.svc.cluster.local:8081`,
      }),
    ]
    gatewayObjects.set(gateway.locator, objs)
    objects.push(...objs)
  }
  const pathsByPolicy = new Map<string, PathInfo[]>()
  for (const p of paths)
    for (const loc of new Set(p.effective.policies)) {
      const list = pathsByPolicy.get(loc)
      if (list) list.push(p)
      else pathsByPolicy.set(loc, [p])
    }
  return { paths, pathsByPolicy, objects, gatewayObjects, limitador: objects[0]!, specOf }
}

const parsed = new WeakMap<KubeObject, unknown>()
function dataOf(obj: KubeObject | undefined, key: string): any {
  if (!obj) return undefined
  if (!parsed.has(obj)) {
    try {
      parsed.set(obj, JSON.parse((obj as { data?: Record<string, string> }).data?.[key] ?? 'null'))
    } catch {
      parsed.set(obj, null)
    }
  }
  return parsed.get(obj)
}

/**
 * Whether what the policy contributes is applied: its limits in Limitador's ConfigMap and its action
 * sets in each carrying Gateway's, as the cluster holds them. Another policy's change to the same
 * ConfigMaps does not make this one "not enforced" while that change is being applied.
 */
function contributionApplied(
  policy: TopologyNode,
  run: ReturnType<typeof compute>,
  gateways: string[],
  observed: (obj: KubeObject) => KubeObject | undefined,
): boolean {
  const prefix = `${policy.namespace}/${policy.name}/`
  if ((limitsByPolicy(observed(run.limitador)).get(prefix) ?? '') !== (limitsByPolicy(run.limitador).get(prefix) ?? '')) return false
  for (const g of gateways) {
    const [config] = run.gatewayObjects.get(g) ?? []
    if (config && (actionSetsByPolicy(observed(config)).get(prefix) ?? '') !== (actionSetsByPolicy(config).get(prefix) ?? '')) return false
  }
  return true
}

// per ConfigMap (parsed once): each policy's part of it, as text to compare
const policyOf = (id: string) => id.slice(0, id.lastIndexOf('/') + 1)
const byPolicyCache = new WeakMap<KubeObject, Map<string, string>>()
function grouped(obj: KubeObject | undefined, make: (obj: KubeObject) => Map<string, string>): Map<string, string> {
  if (!obj) return new Map()
  let g = byPolicyCache.get(obj)
  if (!g) byPolicyCache.set(obj, (g = make(obj)))
  return g
}
const limitsByPolicy = (obj: KubeObject | undefined) =>
  grouped(obj, (o) => {
    const out = new Map<string, string>()
    for (const l of (dataOf(o, 'limits.json') ?? []) as Array<{ id: string }>) {
      const p = policyOf(l.id)
      out.set(p, `${out.get(p) ?? ''}${JSON.stringify(l)}\n`)
    }
    return out
  })
const actionSetsByPolicy = (obj: KubeObject | undefined) =>
  grouped(obj, (o) => {
    const out = new Map<string, string>()
    for (const a of (dataOf(o, 'config.json')?.actionSets ?? []) as Array<{ limits: string[] }>) {
      for (const p of new Set(a.limits.map(policyOf)))
        out.set(p, `${out.get(p) ?? ''}${JSON.stringify({ ...a, limits: a.limits.filter((id) => policyOf(id) === p) })}\n`)
    }
    return out
  })

/** A policy's Accepted and Enforced conditions (Kuadrant's reasons and messages). */
export function conditionsFor(
  view: TopologyView,
  policy: TopologyNode<RateLimitPolicy>,
  run: ReturnType<typeof compute>,
  observed: (obj: KubeObject) => KubeObject | undefined,
): { conditions: ConditionInput[]; inspect: string } {
  const v = run.specOf(policy)
  if (!v.ok) return { conditions: [{ type: 'Accepted', status: 'False', reason: v.reason, message: v.message }], inspect: 'Invalid' }
  const ref = policy.object.spec.targetRef
  // policy-machinery's locators: a section is its object's locator and #section (a listener, a rule)
  const targetLoc = locator({
    kind: ref.kind,
    group: GATEWAY_API_GROUP,
    namespace: policy.namespace!,
    name: ref.name,
    ...(ref.sectionName ? { section: ref.sectionName } : {}),
  })
  if (!view.node(targetLoc)) {
    return {
      conditions: [
        {
          type: 'Accepted',
          status: 'False',
          reason: 'TargetNotFound',
          message: `RateLimitPolicy target ${ref.name}${ref.sectionName ? `#${ref.sectionName}` : ''} was not found`,
        },
      ],
      inspect: 'TargetNotFound',
    }
  }
  const accepted: ConditionInput = { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'RateLimitPolicy has been accepted' }
  const mine = run.pathsByPolicy.get(policy.locator) ?? []
  if (mine.length === 0)
    return {
      conditions: [
        accepted,
        { type: 'Enforced', status: 'False', reason: 'Unknown', message: 'RateLimitPolicy is not in the path to any existing routes' },
      ],
      inspect: 'Unknown',
    }
  const names = Object.keys(v.spec.rules)
  let some = false
  let all = true
  const others = new Set<string>()
  const carriers = new Set<string>()
  for (const p of mine) {
    const fromMe = p.effective.rules.filter((r) => r.source === policy.locator)
    if (fromMe.length) {
      some = true
      carriers.add(p.gateway.locator)
    }
    if (fromMe.length < names.length) all = false
    for (const r of p.effective.rules)
      if (r.source !== policy.locator) {
        const n = view.node(r.source)
        if (n) others.add(`${n.namespace}/${n.name}`)
      }
  }
  if (!some && names.length > 0) {
    return {
      conditions: [
        accepted,
        {
          type: 'Enforced',
          status: 'False',
          reason: 'Overridden',
          message: `RateLimitPolicy is overridden by [${[...others].sort().join(' ')}]`,
        },
      ],
      inspect: 'Overridden',
    }
  }
  if (!contributionApplied(policy, run, [...carriers], observed))
    return {
      conditions: [
        accepted,
        { type: 'Enforced', status: 'False', reason: 'Unknown', message: 'RateLimitPolicy is waiting for its configuration to be applied' },
      ],
      inspect: 'Accepted',
    }
  return {
    conditions: [
      accepted,
      {
        type: 'Enforced',
        status: 'True',
        reason: 'Enforced',
        message: all ? 'RateLimitPolicy has been successfully enforced' : 'RateLimitPolicy has been partially enforced',
      },
    ],
    inspect: all ? 'Enforced' : 'PartiallyEnforced',
  }
}

/** The reconcile function of the rate-limit controller. */
export function rateLimitReconcile(o: RateLimitOptions) {
  return (ctx: StateOfWorldContext) => {
    const view = ctx.topology
    const run = compute(view, o)
    ctx.desire('ratelimit', run.objects)
    for (const p of run.paths)
      ctx.inspect(p.route.locator, { effective: p.effective.rules.map((r) => ({ name: r.name, source: r.source, rule: r.rule })) })
    for (const policy of view.nodes('RateLimitPolicy') as TopologyNode<RateLimitPolicy>[]) {
      const { conditions, inspect } = conditionsFor(view, policy, run, (obj) => ctx.observed(obj))
      // as Kuadrant's policy status: the generation observed, beside each condition's
      ctx.status(policy.object, { observedGeneration: policy.object.metadata.generation, conditions })
      ctx.inspect(policy.locator, { status: inspect })
    }
  }
}
