// The contract between the Manager and a part with a lifecycle (controller-runtime's Runnable and
// LeaderElectionRunnable in one): statewright's one lifecycle contract (statedb's Lifecycle: start,
// stop, health, settled) with a name, leader-only or not, and optional parts the Manager shows
// (a graph, reconcilers, RBAC rules) or waitForConvergence asks (idle, writes).
// Invariants:
// - Readiness never depends on an object's error: a Component reports object errors as `failing`
//   and a degraded level, not as unready.
import type { Reconciler } from '@statewright/reconciler'
import type { Health, Lifecycle } from '@statewright/statedb'
import type { InspectGraph } from '@statewright/topology'

/** One rule of a ClusterRole: the verbs allowed on some resources of some API groups. */
export interface PolicyRule {
  apiGroups: string[]
  resources: string[]
  verbs: string[]
}

/** A part the Manager starts and stops (finalizers, controllers, anything with a lifecycle). */
export interface Component extends Lifecycle {
  readonly name: string
  /** Readiness and health, with the failing objects. */
  health(): ComponentHealth
  /** Runs only while this replica leads (default false). */
  leaderOnly?: boolean
  /** For waitForConvergence: nothing to do now. */
  idle?(): boolean
  /** For waitForConvergence: writes the part made to a cluster so far (a pass with new ones goes round again). */
  writes?(): number
  /** A graph to show (GET /topology, the web view's Topology, `statewright topology`). */
  graph?(): InspectGraph
  /** The RBAC rules of the requests the part makes itself (merged into manifests()' ClusterRole). */
  readonly rbac?: ReadonlyArray<PolicyRule>
  /** Reconcilers the part runs, whose per-object status to show (GET /reconcilers, the web view, `statewright status`). */
  reconcilers?(): ReadonlyArray<Reconciler<any>>
}

/** A component's health: the shared `Health` (level, message, ready) and its failing objects. */
export interface ComponentHealth extends Health {
  /** Object errors, a few, with keys. */
  failing?: ReadonlyArray<{ key: string; error: string }>
}
