// The shape of a graph that inspection shows: what a component's graph() returns (the topology of
// gateways, routes and policies), what the controller's GET /topology serves as JSON, and what
// @statewright/cli renders (DOT, SVG, a layout). Here, with the topology whose vocabulary it
// speaks, because the producer (the controller) and the renderer (the cli) both stand on it.
// Invariant: plain JSON data (no functions, no cycles): it crosses the wire as it is.

/** The reasons of a Gateway API policy's status conditions (GEP-713), as the graph shows them. */
export type PolicyStatusReason = 'Enforced' | 'PartiallyEnforced' | 'Overridden' | 'Accepted' | 'Invalid' | 'TargetNotFound' | 'Unknown'

/** A graph an inspectable part shows (the topology of gateways, routes, policies...). */
export interface InspectGraph {
  nodes: Array<{
    /** A locator, e.g. "gateway.gateway.networking.k8s.io:ns/gw-1", "httproute.gateway.networking.k8s.io:ns/r#rule-1". */
    id: string
    kind: string
    name: string
    namespace?: string
    /** True for policy nodes (RateLimitPolicy...). */
    policy?: boolean
    /** A policy's status reason (PolicyStatusReason), or any other status a part shows. */
    status?: PolicyStatusReason | (string & {})
    /** For targetables: their effective policy (JSON), shown on click. */
    effective?: unknown
  }>
  edges: Array<{ from: string; to: string; /** A policy's targetRef edge. */ policy?: boolean }>
}

/** A component's graph, as GET /topology serves it. */
export interface NamedGraph {
  component: string
  graph: InspectGraph
}
