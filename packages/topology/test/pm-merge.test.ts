// Kuadrant policy-machinery's merge tests, ported: examples/color_policy (atomic and policy-rule
// merge strategies, defaults and overrides, and the effective policies of a Gateway API topology),
// examples/json_patch (a whole spec merged as an RFC 7396 merge patch, by a merge function of the
// policy kind) and controller/object_test.go's creation-timestamp order. Each test names the Go test
// it follows.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  ConfigError,
  effectivePolicy,
  jsonMergeDefaults,
  jsonMergeOverrides,
  mergeInto,
  mergePatch,
  reducePolicies,
  sortPolicies,
  type EffectiveRule,
  type MergeFunction,
  type PolicySpec,
  type TopologyNode,
  type TopologyView,
} from '@statewright/topology'
import { buildBackendRef, buildGateway, buildHTTPRoute, buildService, gatewayApiView } from './pm-fixtures.ts'

type Rules = Record<string, string>
const B = 'blue'
const R = 'red'
const G = 'green'
const Y = 'yellow'

// ---------- examples/color_policy ----------

/** A ColorPolicy's spec: `defaults` or `overrides` (with a strategy), else plain rules (atomic defaults). */
interface ColorSpec {
  defaults?: { strategy?: 'atomic' | 'merge'; rules: Array<{ id: string; color: string }> }
  overrides?: { strategy?: 'atomic' | 'merge'; rules: Array<{ id: string; color: string }> }
  rules?: Array<{ id: string; color: string }>
}
const colorSpec = (s: ColorSpec): PolicySpec<string> => {
  const block = s.defaults ?? s.overrides
  const rules = block?.rules ?? s.rules ?? []
  return {
    mode: s.overrides ? 'overrides' : 'defaults',
    strategy: block?.strategy ?? 'atomic',
    rules: Object.fromEntries(rules.map((r) => [r.id, r.color])),
  }
}
const asRules = (m: Map<string, EffectiveRule<string>>): Rules => Object.fromEntries([...m].map(([k, v]) => [k, v.rule]))
const ruleList = (r: Rules) => Object.entries(r).map(([id, color]) => ({ id, color }))

// follows policy-machinery examples/color_policy/color_policy_test.go TestMerge (twelve subtests)
test('color_policy TestMerge: atomic and policy-rule defaults and overrides, into empty, disjoint and conflicting policies', () => {
  const source = { 'rule-1': B, 'rule-2': R }
  const targets: Array<[string, Rules]> = [
    ['empty policy', {}],
    ['policy without conflicting rules', { 'rule-3': G }],
    ['policy with conflicting rules', { 'rule-1': Y, 'rule-3': G }],
  ]
  const expected: Record<string, Rules[]> = {
    'atomic defaults': [source, { 'rule-3': G }, { 'rule-1': Y, 'rule-3': G }],
    'atomic overrides': [source, source, source],
    'policy rule defaults': [source, { 'rule-1': B, 'rule-2': R, 'rule-3': G }, { 'rule-1': Y, 'rule-2': R, 'rule-3': G }],
    'policy rule overrides': [source, { 'rule-1': B, 'rule-2': R, 'rule-3': G }, { 'rule-1': B, 'rule-2': R, 'rule-3': G }],
  }
  let cases = 0
  for (const [name, want] of Object.entries(expected)) {
    const strategy = name.startsWith('atomic') ? 'atomic' : 'merge'
    const block = { strategy, rules: ruleList(source) } as const
    const spec = colorSpec(name.endsWith('defaults') ? { defaults: block } : { overrides: block })
    targets.forEach(([tname, target], i) => {
      // the target policy: plain rules, merged so far
      const result = mergeInto({ spec: colorSpec({ rules: ruleList(target) }), source: 'target' }, undefined)
      assert.equal(asRules(mergeInto({ spec, source: 'source' }, result)), want[i], `Merge ${name} into ${tname}`)
      cases++
    })
  }
  assert.is(cases, 12)
})

/** TestKuadrantMergeBasedOnTopology's topology: a gateway, two routes of two rules each, a service (listeners not expanded). */
async function houseTopology(policies: any[], kind: { kind: string; group: string; merge?: MergeFunction<any> }): Promise<TopologyView> {
  const twoRules = (name: string) => (r: any) => {
    r.metadata.name = name
    r.spec.rules.push({ backendRefs: [buildBackendRef()] })
  }
  return gatewayApiView(
    {
      gateways: [buildGateway()],
      httpRoutes: [buildHTTPRoute(twoRules('my-route-1')), buildHTTPRoute(twoRules('my-route-2'))],
      services: [buildService()],
    },
    { expandListeners: false, expandRules: true },
    policies,
    kind,
  )
}
const colorPolicy = (name: string, targetRef: Record<string, string>, spec: Record<string, unknown>) => ({
  apiVersion: 'kuadrant.io/v1',
  kind: 'ColorPolicy',
  metadata: { name, namespace: 'my-namespace' },
  spec: { targetRef: { group: 'gateway.networking.k8s.io', ...targetRef }, ...spec },
})
const GW = { kind: 'Gateway', name: 'my-gateway' }
const ROUTE = (n: number, sectionName?: string) => ({ kind: 'HTTPRoute', name: `my-route-${n}`, ...(sectionName ? { sectionName } : {}) })

/** Every path from the gateway to each rule, by PM's names ("my-gateway → my-route-1 → my-route-1#rule-1"), and what `f` makes of it. */
function byPath<T>(v: TopologyView, f: (path: TopologyNode[]) => T): Record<string, T> {
  const out: Record<string, T> = {}
  const t = v.targetables()
  const [gw] = t.items((n) => n.kind === 'Gateway')
  for (const rule of t.items((n) => n.kind === 'HTTPRouteRule'))
    for (const path of t.paths(gw!, rule)) out[path.map((n) => (n.section ? `${n.name}#${n.section}` : n.name)).join(' → ')] = f(path)
  return out
}

// follows policy-machinery examples/color_policy/integration_test.go TestKuadrantMergeBasedOnTopology
test('color_policy TestKuadrantMergeBasedOnTopology: effective policies per path', async () => {
  const v = await houseTopology(
    [
      colorPolicy('house-colors-gw', GW, { defaults: { strategy: 'atomic', rules: ruleList({ walls: 'black', doors: B }) } }),
      colorPolicy('house-colors-route-1', ROUTE(1), { overrides: { strategy: 'merge', rules: ruleList({ walls: G, roof: 'orange' }) } }),
      colorPolicy('house-colors-route-1-rule-1', ROUTE(1, 'rule-1'), { rules: ruleList({ roof: 'purple', floor: R }) }),
      colorPolicy('house-colors-route-2-rule-1', ROUTE(2, 'rule-1'), { rules: ruleList({ walls: 'white', floor: Y }) }),
    ],
    { kind: 'ColorPolicy', group: 'kuadrant.io' },
  )
  const effective = byPath(v, (path) =>
    Object.fromEntries(effectivePolicy(v, path, (p) => colorSpec(p.object.spec)).rules.map((r) => [r.name, r.rule])),
  )
  assert.equal(effective, {
    'my-gateway → my-route-1 → my-route-1#rule-1': { walls: G, roof: 'orange', floor: R },
    'my-gateway → my-route-1 → my-route-1#rule-2': { walls: G, roof: 'orange' },
    'my-gateway → my-route-2 → my-route-2#rule-1': { walls: 'white', floor: Y },
    'my-gateway → my-route-2 → my-route-2#rule-2': { walls: 'black', doors: B },
  })
})

// ---------- examples/json_patch ----------

// follows policy-machinery examples/json_patch/color_policy_test.go TestMerge (six subtests)
test('json_patch TestMerge: defaults and overrides as JSON merge patches, into empty, disjoint and conflicting policies', () => {
  const source = { rules: { 'rule-1': B, 'rule-2': R } }
  const targets: Array<[string, { rules?: Rules }]> = [
    ['empty policy', {}],
    ['policy without conflicting rules', { rules: { 'rule-3': G } }],
    ['policy with conflicting rules', { rules: { 'rule-1': Y, 'rule-3': G } }],
  ]
  const expected: Record<string, Rules[]> = {
    defaults: [source.rules, { 'rule-1': B, 'rule-2': R, 'rule-3': G }, { 'rule-1': Y, 'rule-2': R, 'rule-3': G }],
    overrides: [source.rules, { 'rule-1': B, 'rule-2': R, 'rule-3': G }, { 'rule-1': B, 'rule-2': R, 'rule-3': G }],
  }
  const node = {} as TopologyNode
  for (const [mode, want] of Object.entries(expected)) {
    const merge = mode === 'defaults' ? jsonMergeDefaults : jsonMergeOverrides
    targets.forEach(([name, target], i) => {
      const before = JSON.stringify([source, target])
      assert.equal(merge(source, target, node).rules, want[i], `JSON patch ${mode} into ${name}`)
      assert.is(JSON.stringify([source, target]), before, 'the inputs are not changed')
    })
  }
})

// follows policy-machinery examples/json_patch/integration_test.go TestJSONPatchMergeBasedOnTopology
test('json_patch TestJSONPatchMergeBasedOnTopology: a merge function of the policy kind, reduced along each path', async () => {
  // the kind's merge: policy-machinery's ColorPolicy.GetMergeStrategy (overrides if the policy says so)
  const merge: MergeFunction<{ rules?: Rules }> = (source, target, policy) =>
    (policy.object.spec.overrides ? jsonMergeOverrides : jsonMergeDefaults)(source, target, policy)
  const v = await houseTopology(
    [
      colorPolicy('house-colors-gw', GW, { defaults: { rules: { walls: 'black', doors: B } } }),
      colorPolicy('house-colors-route-1', ROUTE(1), { overrides: { rules: { walls: G, roof: 'orange' } } }),
      colorPolicy('house-colors-route-1-rule-1', ROUTE(1, 'rule-1'), { rules: { roof: 'purple', floor: R } }),
      colorPolicy('house-colors-route-2-rule-1', ROUTE(2, 'rule-1'), { rules: { walls: 'white', floor: Y } }),
    ],
    { kind: 'ColorPolicy', group: 'kuadrant.io', merge },
  )
  // a ColorPolicy's proper spec: its defaults, else its overrides, else its own rules
  const proper = (p: TopologyNode) => {
    const s = p.object.spec
    return { rules: (s.defaults ?? s.overrides ?? s).rules }
  }
  const effective = byPath(v, (path) => reducePolicies<{ rules?: Rules }>(v, path, proper).spec?.rules)
  assert.equal(effective, {
    'my-gateway → my-route-1 → my-route-1#rule-1': { doors: B, walls: G, roof: 'orange', floor: R },
    'my-gateway → my-route-1 → my-route-1#rule-2': { doors: B, walls: G, roof: 'orange' },
    'my-gateway → my-route-2 → my-route-2#rule-1': { doors: B, walls: 'white', floor: Y },
    'my-gateway → my-route-2 → my-route-2#rule-2': { walls: 'black', doors: B },
  })
  // the policies each reduction took in, least specific first
  const [path] = v
    .targetables()
    .paths(
      'gateway.gateway.networking.k8s.io:my-namespace/my-gateway',
      'httproute.gateway.networking.k8s.io:my-namespace/my-route-1#rule-1',
    )
  assert.equal(
    reducePolicies(v, path!, proper).policies.map((l) => l.split('/').pop()),
    ['house-colors-gw', 'house-colors-route-1', 'house-colors-route-1-rule-1'],
  )
  // a kind without a merge function is named
  const bare = await houseTopology([colorPolicy('p', GW, { rules: {} })], { kind: 'ColorPolicy', group: 'kuadrant.io' })
  const [p2] = bare
    .targetables()
    .paths(
      'gateway.gateway.networking.k8s.io:my-namespace/my-gateway',
      'httproute.gateway.networking.k8s.io:my-namespace/my-route-1#rule-1',
    )
  assert.throws(
    () => reducePolicies(bare, p2!, proper),
    (e: unknown) => e instanceof ConfigError && /policy kind "ColorPolicy" .* has no merge function/.test((e as Error).message),
  )
  // a merge function given to the call is used instead
  assert.equal(reducePolicies(bare, p2!, proper, jsonMergeDefaults).spec, { rules: {} })
})

test('mergePatch is RFC 7396: deep, null removes, arrays replace', () => {
  const base = { a: { b: 1, c: { d: 2, e: 3 } }, list: [1, 2], keep: true }
  assert.equal(mergePatch(base, { a: { c: { d: null, f: 4 } }, list: [3] }), { a: { b: 1, c: { e: 3, f: 4 } }, list: [3], keep: true })
  assert.equal(base.a.c.d, 2, 'the target is not changed')
  // defaults: the more specific wins at every depth; overrides: this policy wins at every depth
  const gw = { timeouts: { read: '10s', write: '10s' } }
  const route = { timeouts: { read: '1s' } }
  const node = {} as TopologyNode
  assert.equal(jsonMergeDefaults(gw, route, node), { timeouts: { read: '1s', write: '10s' } })
  assert.equal(jsonMergeOverrides(gw, route, node), { timeouts: { read: '10s', write: '10s' } })
})

// follows policy-machinery controller/object_test.go TestObjectsByCreationTimestamp
test('TestObjectsByCreationTimestamp: older first, then by namespace/name', () => {
  const pod = (name: string, s: number) =>
    ({
      name,
      object: { metadata: { name, creationTimestamp: new Date(s * 1000).toISOString().replace('.000', '') } },
    }) as unknown as TopologyNode
  assert.equal(
    sortPolicies([pod('pod1', 1), pod('pod2', 2), pod('pod3', 1)]).map((p) => p.name),
    ['pod1', 'pod3', 'pod2'],
  )
})

test.run()
