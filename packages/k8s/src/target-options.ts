// What a Target is told (clusters, field manager, ownership, pruning, fences, preconditions) and the
// counters it keeps. Defaults are stated on each field; the behaviour they choose is target.ts's.
import type { ReadTxn } from '@statewright/statedb'
import type { Cluster } from './cluster.ts'
import type { WriteFence } from './fence.ts'
import type { KindRef, KubeObject } from './gvk.ts'
import type { K8sMetrics } from './metrics.ts'

export interface TargetOptions {
  /** The clusters, by name (Cluster.name); the first is the default for objects that name none. */
  clusters: Cluster | Cluster[]
  /** Field manager of server-side apply (default "statewright"). */
  fieldManager?: string
  /** Take over fields other managers own (default true: the desired state wins). */
  force?: boolean
  /**
   * Apply onto an object of the same name that lacks our ownership label (default true: server-side
   * apply takes it over). False: such an object is never adopted; the apply fails with a
   * ForeignObjectError (retried with backoff), and the object is created once the foreign one is gone.
   */
  adopt?: boolean
  /** Ownership label key (default "statewright.io/owner") and value (default the field manager). */
  ownerLabel?: string
  owner?: string
  /** Kinds pruned in every cluster, besides those seen in the desired table. */
  kinds?: KindRef[]
  /** Namespace pruning is limited to (default: all namespaces). */
  pruneNamespace?: string
  /**
   * Which of our labelled objects prune may delete (default: all); a sharded replica prunes only its
   * shards. `txn` is the snapshot the prune's desired set was read from (when the prune has one).
   */
  prunable?: (obj: KubeObject, cluster: string, txn: ReadTxn | undefined) => boolean
  /** Concurrent requests of one batch (default 16). */
  concurrency?: number
  /**
   * The lease term a write of `obj` in `cluster` is made under (leader election: the leader's term;
   * sharding: the term of the object's shard). `null`: not ours to write (refused). Undefined: the
   * cluster's own write fence, if any.
   */
  fence?: (obj: KubeObject, cluster: string) => WriteFence | null | undefined
  /** Apply with the resourceVersion we last knew as a precondition (see the top of the file; default false). */
  preconditions?: boolean
  /** The resourceVersion of an object as observed (a reflector's cache), for preconditions after a restart. */
  observedVersion?: (obj: KubeObject, cluster: string) => string | undefined
  name?: string
  metrics?: K8sMetrics
  /**
   * Called with the server's answer to each apply that succeeded (reads that see our own writes); the
   * apply is done once its promise settles, so what waits for the apply (its status) sees the answer.
   */
  onApplied?: (obj: KubeObject, cluster: string) => void | Promise<void>
}

export interface TargetStats {
  applies: number
  changed: number
  deletes: number
  pruned: number
  conflicts: number
  errors: number
  /** Applies whose precondition failed and that were made again on the current version (their term still valid). */
  preconditionRetries: number
}
