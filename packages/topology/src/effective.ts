// Effective policies: the policies along a path reduced to one set of named rules, as Gateway API
// policy attachment (GEP-713) and Kuadrant define it.
// - Order: least to most specific along the path (a Gateway's before its Listener's before a route's
//   before a rule's); on one target by creationTimestamp, then name (older is less specific).
// - Reduction starts from the most specific policy; each less specific one merges in by ITS strategy:
//   atomic defaults: the more specific result wins whole (the default applies only when nothing does);
//   atomic overrides: replaces the result whole;
//   merge defaults: adds its rules whose names are missing;
//   merge overrides: its rules win, other rules stay.
// - Every rule keeps the policy it came from; the result is sorted by rule name (a stable output is
//   what keeps a controller from rewriting the same objects in another order: Kuadrant #1934).
// reducePolicies is the general form, policy-machinery's `lo.ReduceRight(policies, Merge)`: the same
// order, each policy merged in by a merge function of its kind (PolicyKind.merge), or one given.
import { ConfigError } from './errors.ts'
import type { MergeFunction, TopologyNode } from './define.ts'
import type { TopologyView } from './view.ts'

export type MergeStrategy = 'atomic' | 'merge'

/** What a policy contributes: its rules by name, as defaults or overrides, and the merge strategy. */
export interface PolicySpec<R = unknown> {
  mode: 'defaults' | 'overrides'
  strategy: MergeStrategy
  rules: Record<string, R>
}

/** A rule of an effective policy, with the policy (locator) it came from. */
export interface EffectiveRule<R = unknown> {
  name: string
  rule: R
  source: string
}

export interface EffectivePolicy<R = unknown> {
  /** Sorted by rule name. */
  rules: Array<EffectiveRule<R>>
  /** Locators of the policies on the path, least to most specific. */
  policies: string[]
}

const created = (n: TopologyNode): string =>
  String((n.object as { metadata?: { creationTimestamp?: string } })?.metadata?.creationTimestamp ?? '')

/** Policies least → most specific (same target: older first, then by name). */
export function sortPolicies(policies: readonly TopologyNode[]): TopologyNode[] {
  return [...policies].sort((a, b) => {
    const ca = created(a)
    const cb = created(b)
    if (ca !== cb) return ca < cb ? -1 : 1
    const na = `${a.namespace ?? ''}/${a.name}`
    const nb = `${b.namespace ?? ''}/${b.name}`
    return na < nb ? -1 : na > nb ? 1 : 0
  })
}

/** Merges a less specific policy into the result of the more specific ones, by its strategy. */
export function mergeInto<R>(
  less: { spec: PolicySpec<R>; source: string },
  result: Map<string, EffectiveRule<R>> | undefined,
): Map<string, EffectiveRule<R>> {
  const mine = new Map(Object.entries(less.spec.rules).map(([name, rule]) => [name, { name, rule, source: less.source }]))
  if (result === undefined) return mine
  const { mode, strategy } = less.spec
  if (strategy === 'atomic') return mode === 'overrides' ? mine : result.size > 0 ? result : mine
  if (mode === 'defaults') {
    const out = new Map(result)
    for (const [k, v] of mine) if (!out.has(k)) out.set(k, v)
    return out
  }
  const out = new Map(mine)
  for (const [k, v] of result) if (!out.has(k)) out.set(k, v)
  return out
}

/**
 * The effective policy of a path: policies of every node on it (least specific first), reduced from
 * the most specific. `specOf` reads a policy's spec (undefined: the policy is skipped, e.g. invalid).
 */
export function effectivePolicy<R>(
  view: TopologyView,
  path: readonly TopologyNode[],
  specOf: (policy: TopologyNode) => PolicySpec<R> | undefined,
): EffectivePolicy<R> {
  const ordered = policiesOnPath(view, path, specOf)
  let result: Map<string, EffectiveRule<R>> | undefined
  for (let i = ordered.length - 1; i >= 0; i--) result = mergeInto({ spec: ordered[i]!.spec, source: ordered[i]!.node.locator }, result)
  const rules = [...(result ?? new Map()).values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return { rules, policies: ordered.map((o) => o.node.locator) }
}

/** The policies on a path with their specs, least specific first (those whose spec is undefined left out). */
function policiesOnPath<S>(
  view: TopologyView,
  path: readonly TopologyNode[],
  specOf: (policy: TopologyNode) => S | undefined,
): Array<{ node: TopologyNode; spec: S }> {
  const ordered: Array<{ node: TopologyNode; spec: S }> = []
  for (const n of path) {
    for (const p of sortPolicies(view.policiesOf(n))) {
      const spec = specOf(p)
      if (spec !== undefined) ordered.push({ node: p, spec })
    }
  }
  return ordered
}

/** The reduction of a path's policies by merge functions, and the policies it took in. */
export interface ReducedPolicy<S> {
  /** The merged spec; undefined when no policy is on the path. */
  spec: S | undefined
  /** Locators of the policies on the path, least to most specific. */
  policies: string[]
}

/**
 * The effective spec of a path by merge functions: the policies of every node on it (least specific
 * first, as effectivePolicy orders them) reduced from the most specific, each merged into the result
 * by `merge` when given, else by its kind's `PolicyKind.merge` (a ConfigError names a kind without one).
 */
export function reducePolicies<S>(
  view: TopologyView,
  path: readonly TopologyNode[],
  specOf: (policy: TopologyNode) => S | undefined,
  merge?: MergeFunction<S>,
): ReducedPolicy<S> {
  const ordered = policiesOnPath(view, path, specOf)
  let result: S | undefined
  for (let i = ordered.length - 1; i >= 0; i--) {
    const { node, spec } = ordered[i]!
    const fn = merge ?? view.definition.policies?.find((k) => k.kind === node.kind)?.merge
    if (!fn)
      throw new ConfigError(
        `reducePolicies: policy kind "${node.kind}" (${node.locator}) has no merge function: give PolicyKind.merge, or reducePolicies' merge`,
      )
    result = fn(spec, result, node)
  }
  return { spec: result, policies: ordered.map((o) => o.node.locator) }
}
