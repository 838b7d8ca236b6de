// @statewright/topology: a graph of objects and the policies attached to them, kept incrementally
// in statedb tables (policy-machinery's machinery/): kinds, locators, links, effective policies, and
// the Gateway API's kinds. The controller that reconciles against it is in @statewright/controller
// (StateOfWorldController), as policy-machinery keeps its controller/ apart.
// The one public face of the package.
export {
  defineTopology,
  targetRefLocators,
  type TopologyDefinition,
  type TopologyNode,
  type NodeRole,
  type TargetableKind,
  type KindBase,
  type ObjectRef,
  type PolicyKind,
  type LinkDefinition,
  type Section,
  type MergeFunction,
} from './define.ts'
export { locator, locatorOf, withoutSection, groupOfApiVersion, type LocatorParts } from './locator.ts'
export { Topology, type TopologyOptions, type TopologyError } from './topology.ts'
export type { GraphTables, StoredLink, Attachment, Declaration } from './rows.ts'
export { TopologyView } from './view.ts'
export { TopologyCollection, type NodeFilter, type CollectionSource } from './collection.ts'
export {
  effectivePolicy,
  reducePolicies,
  mergeInto,
  sortPolicies,
  type EffectivePolicy,
  type EffectiveRule,
  type PolicySpec,
  type MergeStrategy,
  type ReducedPolicy,
} from './effective.ts'
export { mergePatch, jsonMergeDefaults, jsonMergeOverrides } from './jsonmerge.ts'
export { gatewayApiTopology, type GatewayApiTopologyOptions } from './gatewayapi.ts'
export {
  intersectHostnames,
  routeHostnames,
  parentRefsOf,
  ruleName,
  GATEWAY_API_GROUP,
  ROUTE_KINDS,
  type RouteKind,
  type Gateway,
  type GatewayClass,
  type Listener,
  type Route,
  type RouteRule,
  type BackendService,
  type ObjectMeta,
  type ParentRef,
  type BackendRef,
} from './gatewayapi-types.ts'
export {
  StatewrightError,
  ConfigError,
  UsageError,
  StoppedError,
  TimeoutError,
  TopologyGraphError,
  TopologyCycleError,
  type TopologyGraphErrorCode,
} from './errors.ts'
export type { InspectGraph, NamedGraph, PolicyStatusReason } from './inspectgraph.ts'
