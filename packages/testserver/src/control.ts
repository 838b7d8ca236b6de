// The control API: what a test does to the server besides speaking HTTP to it (faults, seeding,
// registering kinds, inspecting requests). Every method acts synchronously on the server's state
// unless it returns a Promise.
import type { TestServer, TypeMeta, RequestLogEntry } from './server.ts'
import type { FailRule, DelayRule } from './faults.ts'
import { GarbageCollector, type GcFailure } from './gc.ts'
import { ConfigError } from './errors.ts'
import type { ResourceType, ResourceTypeInput } from './resources.ts'

export interface Control {
  /** Ends every open watch with a clean end of stream; returns how many. */
  closeWatches(): number
  /** Destroys every open watch's socket (the client sees a reset); returns how many. */
  resetWatches(): number
  /** Forgets the watch history and list snapshots: resuming from any older version gets 410 Expired. */
  compact(): void
  /** Holds matching requests for `ms` before handling them. Returns a function that removes the rule. */
  delay(rule: DelayRule): () => void
  /** Fails a share of matching requests with 5xx or 429 (+ Retry-After). Returns a remover. */
  fail(rule: FailRule): () => void
  /** Removes every fail and delay rule. */
  clearFaults(): void
  /** Refuses connections for `ms` (open connections are reset); resolves once it listens again. */
  refuseConnections(ms: number): Promise<void>
  /** How often bookmarks go out on watches that allow them. */
  setBookmarkInterval(ms: number): void
  /** Sends a bookmark now on every watch that allows them. */
  sendBookmarks(): void
  /** Answer expired watch resumes with HTTP 410 (true) or an ERROR event (false, the default). */
  setExpiredAsHttp410(on: boolean): void
  /** Inserts n objects without HTTP, named `${prefix}${i}`, in one batch (one version each). */
  seed(kind: TypeMeta, n: number, opts?: { namespace?: string; template?: any; prefix?: string }): void
  /** Registers a kind at run time (a CRD does the same over HTTP). */
  registerKind(input: ResourceTypeInput): ResourceType
  /** Reseeds the fault PRNG. */
  reseed(seed: number): void
  /** Every request so far (method, path, query, status, token, user agent). */
  requestLog(): RequestLogEntry[]
  clearRequestLog(): void
  /** The current global resourceVersion. */
  resourceVersion(): number
  /** Number of open watches. */
  watchCount(): number
  /**
   * Fast-forwards the emulated controllers: every Terminating namespace is emptied and removed, every
   * gracefully deleted Pod is removed now (instead of after deletionTiming). Returns how many steps ran.
   */
  finishDeletions(): number
  /** Reads an object without HTTP (undefined when absent). */
  get(kind: TypeMeta, name: string, namespace?: string): any
  /** The garbage collector's failed steps, oldest first (a delete a webhook denied; the newest 100). */
  gcFailures(): GcFailure[]
  /** RBAC (`rbac: true`): a kubeconfig that authenticates as the ServiceAccount <namespace>/<name>. */
  kubeconfigFor(namespace: string, name: string): string
  /**
   * RBAC (`rbac: true`): stores, as the admin, the RBAC objects among `objects` (ServiceAccounts,
   * ClusterRoles, Roles and their bindings; a Manager's manifests() say what it needs) and the
   * namespaces they name; the other objects are left out. Existing ones are replaced.
   */
  grant(objects: ReadonlyArray<{ apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } }>): Promise<void>
}

const RBAC_KINDS = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'])

export function makeControl(s: TestServer): Control {
  return {
    closeWatches: () => s.watches.closeAll('graceful'),
    resetWatches: () => s.watches.closeAll('reset'),
    compact: () => {
      s.store.compact()
      s.objects.expireSnapshots()
    },
    delay: (rule) => s.faults.delayResponses(rule),
    fail: (rule) => s.faults.failRequests(rule),
    clearFaults: () => s.faults.clear(),
    refuseConnections: (ms) => s.refuseConnections(ms),
    setBookmarkInterval: (ms) => s.watches.setBookmarkInterval(ms),
    sendBookmarks: () => s.watches.sendBookmarks(),
    setExpiredAsHttp410: (on) => {
      s.watches.expiredAsHttp410 = on
    },
    seed: (kind, n, o = {}) => {
      s.objects.seed(s.kind(kind), o.namespace ?? 'default', n, o.template, o.prefix)
    },
    registerKind: (input) => s.registry.register(input),
    reseed: (seed) => s.faults.reseed(seed),
    requestLog: () => s.requestLog(),
    clearRequestLog: () => s.clearRequestLog(),
    resourceVersion: () => s.store.rv,
    watchCount: () => s.watches.count,
    finishDeletions: () => s.objects.lifecycle.finishAll(),
    get: (kind, name, namespace) => {
      const t = s.kind(kind)
      return s.store.get(t.storageKey, t.namespaced ? (namespace ?? 'default') : '', name)
    },
    gcFailures: () => [...(s.objects.gc instanceof GarbageCollector ? s.objects.gc.failures : [])],
    kubeconfigFor: (namespace, name) => s.kubeconfigFor(namespace, name),
    grant: async (objects) => {
      if (!s.rbac) throw new ConfigError('grant: the server runs without RBAC (start it with rbac: true)')
      const nsType = s.type('v1', 'Namespace')
      for (const o of objects) {
        if (!o?.kind || !RBAC_KINDS.has(o.kind) || !o.apiVersion) continue
        const t = s.type(o.apiVersion, o.kind)
        const ns = t.namespaced ? (o.metadata?.namespace ?? 'default') : ''
        if (ns && !s.store.get(nsType.storageKey, '', ns))
          await s.objects.create(nsType, '', { metadata: { name: ns } }, { manager: 'statewright-grant' })
        const body = structuredClone(o) as any
        const cur = s.store.get(t.storageKey, ns, body.metadata.name)
        if (cur) {
          body.metadata = { ...body.metadata, resourceVersion: cur.metadata.resourceVersion }
          await s.objects.update(t, ns, body.metadata.name, body, { manager: 'statewright-grant' })
        } else await s.objects.create(t, ns, body, { manager: 'statewright-grant' })
      }
    },
  }
}
