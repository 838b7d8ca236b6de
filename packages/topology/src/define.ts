// A topology's definition: which kinds are nodes (targetables, policies, other objects), how a kind
// splits into sections (a Gateway's listeners, an HTTPRoute's rules) and how nodes link.
// A link names its parents from the child (`parents(child)`) or its children from the parent
// (`children(parent)`), as locators. A returned locator of an object whose sections are of the link's
// kind stands for all of them (a route's parentRef without sectionName names every listener);
// `accepts(parent, child)` then narrows (hostnames that intersect). Links are stored by those
// locators, so a change costs O(its links) and reads use indexes, never scans.
// Any kind may be either end of a link, policies included (policy-machinery links all nodes alike).
import { ConfigError } from './errors.ts'
import type { Table } from '@statewright/statedb'
import { locator } from './locator.ts'

/** What a node is, as policy-machinery sorts them: targetables (policies attach to them), policies, other objects. */
export type NodeRole = 'targetable' | 'policy' | 'object'

/** A node of the topology: an object, a section of one, or a policy. Immutable. */
export interface TopologyNode<O = any> {
  /** `<kind>[.<group>]:[<namespace>/]<name>`; a section: its object's locator, then `#<section>`. */
  readonly locator: string
  /** The node's kind as the definition names it ("Gateway", "Listener", "HTTPRouteRule"). */
  readonly kind: string
  readonly group: string
  readonly namespace?: string
  readonly name: string
  readonly section?: string
  /** The object (a section: its value, e.g. the listener). */
  readonly object: O
  /** A section: the locator of the object it belongs to. */
  readonly owner?: string
  /** Targetable, policy or object (a section has its object's role). */
  readonly role: NodeRole
  /** A policy (attached to targets by targetRef): `role === 'policy'`. */
  readonly policy: boolean
  /** A policy: the locators it targets. */
  readonly targets?: readonly string[]
  /** The input table and key that made this node. */
  readonly source: string
}

/** A section of an object: becomes a node `<object's locator>#<name>` of its own kind, linked below the object. */
export interface Section {
  kind: string
  group?: string
  name: string
  object: unknown
}

/** What every kind of a topology has: its group, kind and how to read its objects. */
export interface KindBase<O> {
  /** The node kind, unique in the topology ("Gateway"). */
  kind: string
  /** API group ("" for core kinds; default ""). */
  group?: string
  /** The table of the kind's objects (a StateOfWorldController fills it in from its watches). */
  table?: Table<O>
}

export interface TargetableKind<O = any> extends KindBase<O> {
  /** Sections of an object, each a node below it (listeners of a Gateway, rules of a route). */
  sections?(obj: O): Section[]
}

export interface PolicyKind<P = any> extends KindBase<P> {
  /**
   * The locators a policy targets (default: `spec.targetRef` and `spec.targetRefs`, in the policy's
   * namespace, `sectionName` as the section).
   */
  targetRefs?(policy: P): string[]
  /**
   * How a policy of this kind merges into what the more specific policies of a path made
   * (policy-machinery's `GetMergeStrategy`): `reducePolicies` calls it with this policy's spec (the
   * source, less specific), the result so far (the target; undefined before the first) and the policy.
   */
  merge?: MergeFunction<any, P>
}

/**
 * A merge strategy: the result of merging `source` (a less specific policy's spec) into `target`
 * (the reduction of the more specific ones, undefined when there is none yet).
 */
export type MergeFunction<S, P = any> = (source: S, target: S | undefined, policy: TopologyNode<P>) => S

export interface LinkDefinition<C = any, P = any> {
  /** The parent's node kind. */
  from: string
  /** The child's node kind. */
  to: string
  /** Locators of the child's parents (or of objects whose sections of kind `from` are all candidates). */
  parents?(child: TopologyNode<C>): string[]
  /** Locators of the parent's children (or of objects whose sections of kind `to` are all candidates). */
  children?(parent: TopologyNode<P>): string[]
  /** Narrows candidates (read time; both nodes exist). */
  accepts?(parent: TopologyNode<P>, child: TopologyNode<C>): boolean
}

export interface TopologyDefinition {
  targetables: TargetableKind[]
  policies?: PolicyKind[]
  /** Other nodes (derived objects such as ConfigMaps); not targets of policies. */
  objects?: TargetableKind[]
  links: LinkDefinition[]
  /** Cycles are allowed (reads skip the edge that closes one) instead of a TopologyCycleError. */
  allowLoops?: boolean
}

export { TopologyCycleError } from './errors.ts'

/** Checks a definition: unique kinds, links between known kinds, each link with parents or children. */
export function defineTopology<D extends TopologyDefinition>(def: D): D {
  const kinds = new Map<string, string>()
  const add = (what: string, k: KindBase<unknown>) => {
    if (typeof k?.kind !== 'string' || !k.kind) throw new ConfigError(`topology: a ${what} has no kind`)
    if (kinds.has(k.kind)) throw new ConfigError(`topology: kind "${k.kind}" is defined twice (as ${kinds.get(k.kind)} and ${what})`)
    kinds.set(k.kind, what)
  }
  for (const t of def.targetables ?? []) add('targetable', t)
  for (const p of def.policies ?? []) {
    add('policy', p)
    if (p.merge !== undefined && typeof p.merge !== 'function')
      throw new ConfigError(`topology: policy kind "${p.kind}": merge must be a function (source, target, policy) => result`)
  }
  for (const o of def.objects ?? []) add('object', o)
  const sectionKinds = new Set<string>()
  for (const [i, l] of (def.links ?? []).entries()) {
    if (!l.parents && !l.children)
      throw new ConfigError(`topology: link ${i} (${l.from} -> ${l.to}) needs parents(child) or children(parent)`)
    for (const k of [l.from, l.to]) if (!kinds.has(k)) sectionKinds.add(k)
  }
  // a kind no table holds must be a section kind; it is checked when sections are made
  void sectionKinds
  return def
}

/** A Gateway API reference: a parentRef, a backendRef, a policy's targetRef. */
export type ObjectRef = { group?: string; kind?: string; name?: string; namespace?: string; sectionName?: string }

/** Default policy targets: spec.targetRef / spec.targetRefs, relative to the policy's namespace. */
export function targetRefLocators(policy: {
  metadata?: { namespace?: string }
  spec?: { targetRef?: ObjectRef; targetRefs?: ObjectRef[] }
}): string[] {
  const refs = [
    ...(policy.spec?.targetRef ? [policy.spec.targetRef] : []),
    ...(Array.isArray(policy.spec?.targetRefs) ? policy.spec.targetRefs : []),
  ]
  return refs
    .filter((r) => r && typeof r.kind === 'string' && typeof r.name === 'string')
    .map((r) => {
      const ns = r.namespace ?? policy.metadata?.namespace
      return locator({
        kind: r.kind!,
        group: r.group ?? '',
        name: r.name!,
        ...(ns ? { namespace: ns } : {}),
        ...(r.sectionName ? { section: r.sectionName } : {}),
      })
    })
}
