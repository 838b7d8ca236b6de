// A registry of clusters by name: from kubeconfig text or files (one cluster per context), from a
// kubeconfig stored in a Secret (Cluster API's `<cluster>-kubeconfig` convention: key `value`), or an
// existing Cluster. One Cluster per name, hence one keep-alive agent and one rate limiter per cluster
// shared by every reflector, target and lease on it (client-node would open a socket per request).
import { ConfigError, StoppedError } from './errors.ts'
import { readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { Kubeconfig } from './kubeconfig.ts'
import { Cluster } from './cluster.ts'
import type { ClusterOptions } from './cluster-options.ts'

export type ClusterDefaults = Omit<ClusterOptions, 'kubeConfig' | 'kubeconfig' | 'name'>

export interface SecretRef {
  /** Where the Secret is (usually the management cluster). */
  cluster: Cluster
  namespace: string
  name: string
  /** The data key (default: the first of "value", "value.yaml", "kubeconfig"). */
  key?: string
  /** The context to use (default: the kubeconfig's current context). */
  context?: string
}

const SECRET_KEYS = ['value', 'value.yaml', 'kubeconfig']

/**
 * The kubeconfig a Secret's data holds (under `key`, else the first of "value", "value.yaml",
 * "kubeconfig"), parsed. Throws a ConfigError naming the Secret (`what`) when there is none or it does
 * not parse; YAML errors quote the lines around the fault (tokens, keys), so only the first line of one is kept.
 */
export function kubeconfigInSecret(what: string, data: Record<string, string>, key?: string): { text: string; kubeconfig: Kubeconfig } {
  const k = key ?? SECRET_KEYS.find((n) => data[n] !== undefined)
  if (!k || data[k] === undefined) throw new ConfigError(`${what} has no kubeconfig (keys: ${Object.keys(data).join(', ') || 'none'})`)
  const text = Buffer.from(data[k], 'base64').toString('utf8')
  try {
    return { text, kubeconfig: Kubeconfig.fromString(text) }
  } catch (err) {
    const why = String((err as Error)?.message ?? err).split('\n')[0]
    throw new ConfigError(`${what}: key "${k}" is not a valid kubeconfig: ${why}`)
  }
}

/** A cluster added to or removed from a registry (a removed cluster is closed after its listeners ran). */
export interface RegistryEvent {
  type: 'added' | 'removed'
  name: string
  cluster: Cluster
}

export class ClusterRegistry {
  private readonly clusters = new Map<string, { cluster: Cluster; owned: boolean }>()
  private closed = false
  private readonly listeners = new Set<(e: RegistryEvent) => void>()

  /**
   * Calls `listener` for every cluster added or removed from now on (caches follow their cluster:
   * WatchOnDemand closes the caches of a removed cluster and reopens them when a cluster of that name
   * is added again, on its new credentials). Returns the unsubscribe function.
   */
  subscribe(listener: (e: RegistryEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private emit(e: RegistryEvent): void {
    for (const l of [...this.listeners]) {
      try {
        l(e)
      } catch {
        /* a listener's failure is its own; the registry goes on */
      }
    }
  }

  constructor(private readonly defaults: ClusterDefaults = {}) {}

  /** Adds an existing Cluster (not closed by the registry unless `owned`). */
  add(name: string, cluster: Cluster, owned = false): Cluster {
    this.put(name, cluster, owned)
    return cluster
  }

  /** A cluster from kubeconfig YAML, at `context` (default: the current context). */
  addKubeconfig(name: string, yaml: string, opts: { context?: string } & ClusterDefaults = {}): Cluster {
    return this.fromKubeConfig(name, Kubeconfig.fromString(yaml), opts)
  }

  /**
   * One cluster per context of a kubeconfig file (default: every context), named after the context.
   */
  addKubeconfigFile(path: string, opts: { contexts?: string[] } & ClusterDefaults = {}): Cluster[] {
    const text = readFileSync(path, 'utf8')
    const probe = Kubeconfig.fromString(text, dirname(path))
    const contexts = opts.contexts ?? probe.getContexts().map((c) => c.name)
    // Relative paths in the file are resolved against its directory (client-go's rule).
    return contexts.map((ctx) => this.fromKubeConfig(ctx, Kubeconfig.fromString(text, dirname(path)), { ...opts, context: ctx }))
  }

  /** A cluster from a kubeconfig in a Secret. */
  async addFromSecret(name: string, ref: SecretRef, opts: ClusterDefaults = {}): Promise<Cluster> {
    const secret = await ref.cluster.request({
      path: `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/secrets/${encodeURIComponent(ref.name)}`,
      what: `Secret ${ref.namespace}/${ref.name}`,
    })
    const { kubeconfig: kc } = kubeconfigInSecret(`Secret ${ref.namespace}/${ref.name}`, secret?.data ?? {}, ref.key)
    return this.fromKubeConfig(name, kc, { ...opts, context: ref.context })
  }

  get(name: string): Cluster | undefined {
    return this.clusters.get(name)?.cluster
  }

  /** The cluster by name; throws when unknown. */
  require(name: string): Cluster {
    const c = this.get(name)
    if (!c) throw new ConfigError(`cluster registry: no cluster named "${name}" (known: ${this.names().join(', ') || 'none'})`)
    return c
  }

  names(): string[] {
    return [...this.clusters.keys()].sort()
  }

  /** Removes a cluster, closing it if the registry created it. */
  async remove(name: string): Promise<void> {
    const e = this.clusters.get(name)
    if (!e) return
    this.clusters.delete(name)
    this.emit({ type: 'removed', name, cluster: e.cluster })
    if (e.owned) await e.cluster.close()
  }

  /** Closes every cluster the registry created. */
  async close(): Promise<void> {
    this.closed = true
    const all = [...this.clusters.values()]
    this.clusters.clear()
    await Promise.all(all.filter((e) => e.owned).map((e) => e.cluster.close()))
  }

  private fromKubeConfig(name: string, kc: Kubeconfig, opts: { context?: string } & ClusterDefaults): Cluster {
    const { context, ...rest } = opts
    if (context) {
      if (!kc.getContextObject(context)) throw new ConfigError(`kubeconfig: no context "${context}"`)
      kc.setCurrentContext(context)
    }
    const cluster = new Cluster({ ...this.defaults, ...rest, kubeConfig: kc, name })
    this.put(name, cluster, true)
    return cluster
  }

  private put(name: string, cluster: Cluster, owned: boolean): void {
    if (this.closed) throw new StoppedError('cluster registry: closed')
    if (this.clusters.has(name)) {
      if (owned) void cluster.close()
      throw new ConfigError(`cluster registry: "${name}" is already registered (remove it first)`)
    }
    this.clusters.set(name, { cluster, owned })
    this.emit({ type: 'added', name, cluster })
  }
}
