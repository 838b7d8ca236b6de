// What a Manager is given: its options and their validation, and the options of the parts it makes
// (watch, derive, reconcile, finalizer). The Component contract is component.ts's.
// Invariants:
// - Options are checked once, in the constructor (a ConfigError naming the manager); what depends on
//   the parts added (leader-only parts with sharding) is checked by start().
import type { PromRegistry } from '@statewright/reconciler'
import type { Cluster, KindRef, KubeObject, RepairPacing, ReflectorOptions } from '@statewright/k8s'
import type { DB, RetryOptions, Table } from '@statewright/statedb'
import type { DeriveContext } from '../derive/options.ts'
import type { CleanupContext, FinalizerOptions } from '../finalizers.ts'
import type { HttpOptions } from '../http.ts'
import { ConfigError } from '../errors.ts'
import type { Logger, TracerLike } from '@statewright/statedb'
import type { Placed } from './desired.ts'
import type { ReconcileContext, ReconcileResult } from './reconcilestep.ts'
import type { WebhookServerOptions } from '../webhooks/server.ts'

export type { Component, ComponentHealth } from './component.ts'

export interface ManagedFinalizerOptions<T extends object = KubeObject> extends Pick<
  FinalizerOptions,
  'name' | 'kind' | 'condition' | 'retry' | 'cleanupTimeoutMs'
> {
  /** The table of the kind (from watch()). */
  on: Table<T>
  /** Releases what the object holds outside the cluster. Must be idempotent; throw to retry. */
  cleanup(obj: T, ctx: CleanupContext): void | Promise<void>
}

export interface ManagerOptions {
  /** The controller's name: field manager, owner label value, Event source, metrics label. */
  name: string
  /** Condition transitions as Events in reconcile steps (default true: each step's `conditionEvents`). */
  conditionEvents?: boolean
  /** The database (default: a new one). Tables of other parts may share it. */
  db?: DB
  /** The cluster (default: KUBECONFIG or in-cluster config). A given cluster is not closed by stop(). */
  cluster?: Cluster
  /**
   * More clusters, by their `name`: watch(kind, { cluster }) reflects from one, and a derivation
   * places an object in one with inCluster(name, obj). Leader election and Events of objects in the
   * default cluster use `cluster`; each cluster gets its own Event recorder.
   */
  clusters?: Cluster[]
  /** The HTTP server (default port 8080 on 127.0.0.1); false: none. */
  http?: HttpOptions | false
  logger?: Logger
  /**
   * The tracer of every run of a derive function, reconcile step and finalizer cleanup (spans
   * `controller.derive`, `controller.reconcile_step`, `controller.finalizer_cleanup`); default
   * @opentelemetry/api's global tracer when that package is installed; false: none (no spans).
   */
  tracer?: TracerLike | false
  /**
   * CustomResourceDefinitions to install (server-side apply) when start() begins, each waited for
   * until Established: for development and tests; production installs them with `manifests()`.
   */
  installCrds?: ReadonlyArray<{ readonly crd: KubeObject }>
  /** The admission webhooks' HTTPS server (started when a webhook is added; see webhook()). */
  webhooks?: WebhookServerOptions
  /** A kubeconfig file to make the cluster from (instead of `cluster`; the --kubeconfig flag). */
  kubeconfig?: string
  /**
   * A second server for /healthz, /livez and /readyz only (the --health-probe-bind-address flag when
   * it differs from the metrics address), without the token: kubelet probes cannot send one.
   */
  probes?: HttpOptions
  /** A prom-client Registry for every metric (default: a new one when prom-client is installed). */
  registry?: PromRegistry
  /** Run the leader-only parts only while holding this Lease. */
  leaderElection?: {
    namespace: string
    name?: string
    identity?: string
    leaseDurationMs?: number
    renewDeadlineMs?: number
    retryPeriodMs?: number
    /**
     * Apply with the resourceVersion we last wrote (or read) as a precondition, so that a write a
     * stalled former leader sends late fails with 409 instead of overwriting a newer value (default true).
     */
    preconditions?: boolean
    /**
     * Release the Lease on stop, so a standby takes over at once (default true). false: a stop is
     * seen as a crash, the standby waits for the Lease to expire (controller-runtime's
     * `LeaderElectionReleaseOnCancel` false; the takeover bench measures both parts).
     */
    releaseOnStop?: boolean
  }
  /**
   * Share the work among replicas by shard (instead of one leader): each input of a derivation
   * belongs to shard fnv1a(namespace/name) % shards, a replica derives and applies only the shards
   * whose Lease it holds (k8s ShardedLeases), deletes and prunes only in them, and hands a shard over
   * without deleting what it applied. Leader-only components (finalizers) need leaderElection instead.
   */
  sharding?: {
    namespace: string
    shards: number
    identity?: string
    leaseDurationMs?: number
    renewDeadlineMs?: number
    retryPeriodMs?: number
    /**
     * Apply with the resourceVersion we last wrote (or observed) as a precondition, so that a write a
     * stalled former holder sends late fails with 409 instead of overwriting a newer value (default true).
     */
    preconditions?: boolean
    /**
     * Cache only the held shards' objects: the owned kinds are watched with a selector on the shard
     * label (which the Manager sets), and so are inputs watched with `sharded: true` (default true).
     */
    cachePerShard?: boolean
    /** Delete member Leases of replicas gone this long (default 4 lease durations). */
    memberGcMs?: number
  }
  /** Stop gracefully on SIGTERM/SIGINT, then exit (default true). */
  handleSignals?: boolean
  /** How long stop() lets in-flight applies finish (default 30 000 ms). */
  shutdownTimeoutMs?: number
  /** Backoff of failing applies (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter 0.2). */
  retry?: RetryOptions
  /** Pacing of drift repairs and fight detection. */
  drift?: RepairPacing
  /** Full reconciliation (with prune) every this many ms (default the reconciler's DEFAULT_FULL_RECONCILIATION_INTERVAL_MS, 300 000; 0: never). */
  fullReconciliationIntervalMs?: number
  /** Limit pruning to one namespace (default: every namespace). */
  pruneNamespace?: string
  /**
   * Take over an existing object of a desired name that lacks our owner label (default true, as
   * server-side apply does). False: never adopt; the apply fails (retried with backoff, an error in
   * /statusz) until the foreign object is gone.
   */
  adopt?: boolean
}

export interface WatchOptions extends Pick<
  ReflectorOptions,
  'namespace' | 'labelSelector' | 'fieldSelector' | 'keepManagedFields' | 'transform'
> {
  /** The table's name (default: the kind, lower case, plural-ish: "sites"; "<cluster>-sites" for another cluster). */
  name?: string
  /**
   * Sharded managers: the objects carry the shard label (`statewright.io/shard`, set by whoever
   * creates them, e.g. a mutating webhook), so this replica watches only the shards it holds.
   */
  sharded?: boolean
  /** The cluster to reflect from, by name (default: the manager's `cluster`). */
  cluster?: string
}

export interface ManagedDeriveOptions<In> {
  name?: string
  from: Table<In> | ReadonlyArray<Table<In>>
  joins?: ReadonlyArray<Table<any>>
  /** The objects this input wants in the cluster (applied by server-side apply, pruned when gone). */
  fn: (input: In, ctx: DeriveContext) => KubeObject | Placed | ReadonlyArray<KubeObject | Placed> | undefined | null
  /** Kinds this derivation produces: pruned and watched for drift (like controller-runtime's Owns). */
  owns?: KindRef<any>[]
  /** The last state of an input that was deleted (best effort, once; see DeriveOptions.onDeleted). */
  onDeleted?: (last: In) => void
}

export interface ManagedReconcileOptions<T extends object = KubeObject> {
  /** Names the step in health, logs and its results table (default: the primary table's name). */
  name?: string
  /** The primary kind: a table from watch(), or a kind to watch (with default options). */
  for: Table<T> | KindRef<T>
  /** Tables `fn` reads through ctx.get/ctx.list; their changes run it again for the readers. */
  joins?: ReadonlyArray<Table<any>>
  /**
   * One object's reconcile: the children to apply, the status to write, when to look again.
   * Synchronous over the snapshot (as derive's fn); a throw is the object's error (Ready=False, an
   * Event, a retry with backoff).
   */
  fn: (obj: T, ctx: ReconcileContext) => ReconcileResult | undefined | void
  /** Kinds the children have: pruned and watched for drift (like controller-runtime's Owns). */
  owns?: KindRef<any>[]
  /**
   * Called once with the last state of a primary object that was deleted, in the round that sees it
   * (its children go by garbage collection and prune): best effort, a throw is logged and not
   * retried. What must happen before the object goes belongs in a finalizer.
   */
  onDeleted?: (last: T) => void
  /** The condition that says whether the last run succeeded (default "Ready"); false: none. */
  readyCondition?: string | false
  /** Write status.observedGeneration, the generation fn saw (default true; the CRD's schema must have it). */
  observedGeneration?: boolean
  /** Make the primary the controller (ownerReferences) of children in its namespace (default true). */
  ownerReferences?: boolean
  /**
   * Which condition transitions are Events: the ready condition's (default), every condition's
   * (true), those of the types listed, or none (false). Errors (ReconcileError) are Events always.
   * The Manager's `conditionEvents: false` turns them off for every step.
   */
  conditionEvents?: boolean | readonly string[]
}

/** Throws a ConfigError for options a Manager cannot run with. */
export function validateOptions(o: ManagerOptions): void {
  if (!o.name) throw new ConfigError('Manager: `name` is required (field manager and owner label value)')
  if (o.sharding && o.leaderElection)
    throw new ConfigError(
      `Manager "${o.name}": sharding and leaderElection exclude each other (every sharded replica works, each on its shards)`,
    )
  if (o.cluster && o.kubeconfig !== undefined)
    throw new ConfigError(`Manager "${o.name}": give either cluster or kubeconfig (a file to make the cluster from), not both`)
  if (o.sharding && !(o.sharding.shards >= 1)) throw new ConfigError(`Manager "${o.name}": sharding.shards must be at least 1`)
}
