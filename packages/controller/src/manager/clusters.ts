// The clusters a Manager talks to: the default one and the others by name, each with its Event
// recorder.
// Invariants:
// - Cluster names are distinct (a ConfigError names the one given twice); a name that is no
//   cluster's is a ConfigError listing the clusters.
// - Events are recorded in the cluster of the object they are about: one recorder per cluster, made
//   on first use, closed by closeEvents().
// - close() unsubscribes the REST client metrics from every cluster and closes the default cluster
//   only when the Manager made it (no `cluster` option): a cluster given to it is the caller's.
import { Cluster, EventRecorder, Kubeconfig } from '@statewright/k8s'
import { ConfigError } from '../errors.ts'
import type { Logger } from '@statewright/statedb'
import type { ControllerMetrics } from '../metrics.ts'
import type { ManagerOptions } from './options.ts'

export class ManagerClusters {
  /** The default cluster. */
  readonly default: Cluster
  /** Every cluster, by name (the default one included). */
  readonly byName = new Map<string, Cluster>()
  private readonly recorders = new Map<string, EventRecorder>()
  private readonly madeDefault: boolean
  private readonly offMetrics: Array<() => void> = []

  constructor(
    private readonly o: Pick<ManagerOptions, 'name' | 'cluster' | 'clusters' | 'kubeconfig'>,
    metrics: ControllerMetrics | undefined,
    private readonly logger: Logger,
  ) {
    this.madeDefault = !o.cluster
    this.default = o.cluster ?? this.defaultCluster()
    for (const c of [this.default, ...(o.clusters ?? [])]) {
      if (this.byName.has(c.name))
        throw new ConfigError(`Manager "${o.name}": two clusters are named "${c.name}" (give each Cluster a distinct name)`)
      this.byName.set(c.name, c)
      if (metrics) this.offMetrics.push(c.onResponse(metrics.request))
    }
  }

  /**
   * Why there is no cluster to run against (no kubeconfig, no in-cluster account): the Manager is
   * still made (its manifests() need none) and start() fails with this.
   */
  unusable: ConfigError | undefined

  private defaultCluster(): Cluster {
    if (this.o.kubeconfig !== undefined) return new Cluster({ kubeConfig: Kubeconfig.fromFile(this.o.kubeconfig) })
    try {
      return new Cluster({})
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      this.unusable = err
      // a stand-in that is never called: start() refuses first
      return new Cluster({ kubeconfig: NO_CLUSTER, name: 'none' })
    }
  }

  /** The cluster of a name (undefined: the default one). */
  named(name: string | undefined): Cluster {
    if (name === undefined) return this.default
    const c = this.byName.get(name)
    if (!c) throw new ConfigError(`Manager "${this.o.name}": no cluster named "${name}" (clusters: ${[...this.byName.keys()].join(', ')})`)
    return c
  }

  /** The Event recorder of a cluster (Events must be in the cluster of the object they are about). */
  eventsFor(cluster: string): EventRecorder {
    let r = this.recorders.get(cluster)
    if (!r) {
      r = new EventRecorder({
        cluster: this.named(cluster),
        component: this.o.name,
        logger: this.logger, // 'event not recorded' at warn, with the cluster, object and reason
      })
      this.recorders.set(cluster, r)
    }
    return r
  }

  /** Closes every Event recorder (each waits for its writes in flight). */
  async closeEvents(): Promise<void> {
    for (const r of this.recorders.values()) await r.close()
  }

  /** Unsubscribes the metrics; closes the default cluster when the Manager made it. */
  async close(): Promise<void> {
    for (const off of this.offMetrics.splice(0)) off()
    if (this.madeDefault) await this.default.close()
  }
}

const NO_CLUSTER = `apiVersion: v1
kind: Config
clusters: [{ name: none, cluster: { server: "https://127.0.0.1:1" } }]
users: [{ name: none, user: {} }]
contexts: [{ name: none, context: { cluster: none, user: none } }]
current-context: none
`
