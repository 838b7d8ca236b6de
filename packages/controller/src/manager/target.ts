// The Manager's Target: what applies the desired table to the Manager's clusters (server-side apply
// with the Manager's name as field manager; prune of the objects carrying its owner label).
// Invariants:
// - Prune deletes only what `prunable` allows: never a child of an owner whose function has not
//   succeeded in this process (./pruneguard.ts).
// - Sharded, prune deletes only objects of a shard this replica holds (their shard label): another
//   replica's objects are never pruned here.
// - With leader election or sharding, every apply and delete is fenced by the term it is made under
//   (./fences.ts), and preconditions are on unless turned off: an apply carries the resourceVersion
//   last known (after a restart, the one the owned-kind table observed), so a write made late fails
//   with 409 instead of overwriting a newer one.
import { Target, type Cluster, type K8sMetrics, type KubeObject } from '@statewright/k8s'
import type { ReadTxn } from '@statewright/statedb'
import { shardLabelOf } from './desired.ts'
import type { WriteFences } from './fences.ts'
import type { ManagerOptions } from './options.ts'

export function newManagerTarget(o: {
  options: Pick<ManagerOptions, 'name' | 'sharding' | 'leaderElection' | 'pruneNamespace' | 'adopt'>
  clusters: Cluster[]
  /** Shards this replica holds now. */
  held: ReadonlySet<number>
  fences: WriteFences
  /** The resourceVersion an owned object was last observed with. */
  observedVersion: (obj: KubeObject, cluster: string) => string | undefined
  metrics: K8sMetrics | undefined
  /** The server's answer to an apply (the Manager puts it in the tables that reflect it). */
  onApplied: (obj: KubeObject, cluster: string) => Promise<void>
  /** Whether prune may delete an object of ours that is not desired (the PruneGuard's verdict). */
  prunable: (obj: KubeObject, cluster: string, txn: ReadTxn | undefined) => boolean
}): Target {
  const { options: m, held, fences } = o
  return new Target({
    clusters: o.clusters,
    fieldManager: m.name,
    prunable: m.sharding
      ? (obj: KubeObject, cluster: string, txn: ReadTxn | undefined) => held.has(shardLabelOf(obj)) && o.prunable(obj, cluster, txn)
      : o.prunable,
    ...(m.sharding || m.leaderElection ? { fence: (obj: KubeObject) => fences.ofDesired(obj) } : {}),
    ...((m.sharding && m.sharding.preconditions !== false) || (m.leaderElection && m.leaderElection.preconditions !== false)
      ? { preconditions: true, observedVersion: o.observedVersion }
      : {}),
    ...(m.pruneNamespace ? { pruneNamespace: m.pruneNamespace } : {}),
    ...(m.adopt === false ? { adopt: false } : {}),
    ...(o.metrics ? { metrics: o.metrics } : {}),
    onApplied: o.onApplied,
  })
}
