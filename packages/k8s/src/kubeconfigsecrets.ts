// Clusters from kubeconfig Secrets, followed as they change (multicluster-runtime's kubeconfig
// provider): every Secret a label selects in one namespace of a management cluster is a cluster of
// the registry, named after the Secret (or `nameOf`).
// Invariants:
// - a Secret added: its cluster is added; its kubeconfig changed (rotated credentials): the old
//   cluster is removed and the new one added, so caches on it (WatchOnDemand) close and reopen on
//   the new credentials; a Secret deleted: its cluster is removed;
// - a Secret whose kubeconfig does not parse is logged (naming the Secret, never its content) and
//   changes nothing: the cluster it had, if any, stays on its last good credentials;
// - only clusters this provider added are removed by it.
import { createHash } from 'node:crypto'
import { DB, Table, defineIndex, type ChangeIterator } from '@statewright/statedb'
import { logTo, type Logger } from '@statewright/statedb'
import { Reflector } from './reflector.ts'
import { ConfigError } from './errors.ts'
import { namespacedName, type KubeObject } from './gvk.ts'
import type { Cluster } from './cluster.ts'
import { kubeconfigInSecret, type ClusterDefaults, type ClusterRegistry } from './registry.ts'

export interface KubeconfigSecretsOptions {
  /** Where the Secrets are (the management cluster). */
  cluster: Cluster
  namespace: string
  /** Which Secrets hold kubeconfigs (e.g. `sigs.k8s.io/multicluster-runtime-kubeconfig=true`). */
  labelSelector?: string
  registry: ClusterRegistry
  /** The data key (default: the first of "value", "value.yaml", "kubeconfig"). */
  key?: string
  /** The cluster's name in the registry (default: the Secret's name). */
  nameOf?: (secret: KubeObject) => string
  /** Options of every Cluster made (rate limits, timeouts). */
  defaults?: ClusterDefaults
  logger?: Logger
}

const byName = defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true })

export class KubeconfigSecrets {
  private readonly options: KubeconfigSecretsOptions
  private readonly table = new Table<KubeObject>({ name: 'kubeconfig-secrets', primary: byName })
  private readonly db = new DB({ tables: [this.table] })
  private readonly reflector: Reflector
  /** Secret key -> the cluster name added for it and a digest of its kubeconfig. */
  private readonly added = new Map<string, { name: string; digest: string }>()
  private readonly ctrl = new AbortController()
  private loop: Promise<void> | undefined

  constructor(o: KubeconfigSecretsOptions) {
    this.options = o
    this.reflector = new Reflector({
      cluster: o.cluster,
      db: this.db,
      table: this.table,
      kind: { apiVersion: 'v1', kind: 'Secret' },
      namespace: o.namespace,
      name: `kubeconfig-secrets/${o.namespace}`,
      ...(o.labelSelector ? { labelSelector: o.labelSelector } : {}),
      ...(o.logger ? { logger: o.logger } : {}),
    })
  }

  /** Starts watching; resolves once the Secrets present are clusters of the registry. */
  async start(signal?: AbortSignal): Promise<this> {
    await this.reflector.start()
    await this.reflector.waitSynced(signal)
    const changes = this.table.changes(this.db.readTxn())
    this.follow(changes) // the Secrets there are now: the first batch holds them all
    this.loop = (async () => {
      try {
        while (!this.ctrl.signal.aborted) if (!(await this.follow(changes))) return
      } finally {
        changes.close()
      }
    })()
    return this
  }

  /** Stops watching; the clusters added stay in the registry (remove them or close the registry). */
  async stop(): Promise<void> {
    this.ctrl.abort()
    await this.loop
    await this.reflector.stop()
  }

  /** Applies one batch of Secret changes to the registry; the result resolves when more came (false: stopped). */
  private follow(changes: ChangeIterator<KubeObject>): Promise<boolean> {
    const [batch, watch] = changes.next(this.db.readTxn())
    for (const ch of batch) {
      const key = namespacedName(ch.object)
      if (ch.deleted) this.forget(key)
      else this.put(key, ch.object)
    }
    return watch.wait(this.ctrl.signal).then(
      () => true,
      () => false,
    )
  }

  private put(key: string, secret: KubeObject): void {
    const o = this.options
    const name = o.nameOf ? o.nameOf(secret) : String(secret.metadata.name)
    const what = `Secret ${key}`
    // parse first: a broken kubeconfig leaves the cluster on its last good credentials
    let text: string
    try {
      const found = kubeconfigInSecret(what, (secret as { data?: Record<string, string> }).data ?? {}, o.key)
      if (!found.kubeconfig.getCurrentCluster()) throw new ConfigError(`${what}: its kubeconfig's current context names no cluster`)
      text = found.text
    } catch (err) {
      this.log(err as Error, name)
      return
    }
    const digest = createHash('sha256').update(text).digest('hex')
    const had = this.added.get(key)
    if (had && had.digest === digest && had.name === name) return
    const registry = o.registry
    if (registry.get(name) && !had) {
      this.log(new ConfigError(`${what}: cluster "${name}" is already registered by someone else; not replaced`), name)
      return
    }
    if (had) void registry.remove(had.name)
    try {
      registry.addKubeconfig(name, text, o.defaults ?? {})
      this.added.set(key, { name, digest })
    } catch (err) {
      this.added.delete(key)
      this.log(err as Error, name)
    }
  }

  private forget(key: string): void {
    const had = this.added.get(key)
    if (!had) return
    this.added.delete(key)
    void this.options.registry.remove(had.name)
  }

  private log(err: Error, cluster: string): void {
    logTo(this.options.logger, 'error', { err, cluster, namespace: this.options.namespace }, 'kubeconfig secret not applied')
  }
}
