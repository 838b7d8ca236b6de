// What a TestServer is started with, and the checks its options get at construction: a ConfigError
// naming the option (a NaN from a CLI flag would otherwise grow the history without bound or send
// bookmarks in a tight loop).
import type { ResourceTypeInput } from './resources.ts'
import type { DeletionTiming } from './object-deletes.ts'
import type { ServiceResolver } from './webhook-client.ts'
import { ConfigError } from './errors.ts'

export interface TestServerOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number
  host?: string
  /** Bearer token clients must send; default a fixed random-looking token. `null` disables auth. */
  token?: string | null
  /** Seed for fault decisions, uids and generated names. */
  seed?: number
  /** Watch history kept for resumes (events); older resumes get 410 Expired. */
  historySize?: number
  bookmarkIntervalMs?: number
  /** Cluster/user/context name in the kubeconfig. */
  name?: string
  /** Write the kubeconfig here (default: a temporary file removed by stop()). */
  kubeconfigPath?: string
  /** Answer expired watch resumes with HTTP 410 instead of an ERROR event. */
  watchExpiredAsHttp410?: boolean
  /**
   * Serve HTTPS with a CA and a serving certificate generated at startup, in memory; the kubeconfig
   * carries the CA. Needed for kubectl/client-go, which never send a bearer token over plain HTTP.
   * Off by default for the library (client-node is fine with HTTP, and tests start many servers);
   * the CLI serves HTTPS unless `--insecure-http`.
   */
  tls?: boolean
  /** Kinds to register at start. */
  kinds?: ResourceTypeInput[]
  /**
   * Authorize requests with RBAC, as kube-apiserver's RBAC authorizer (rbac.ts): the server's token is
   * the admin; ServiceAccount tokens (control.serviceAccountToken, control.kubeconfigFor) get what
   * their Roles and ClusterRoles bound to them allow, and a 403 for the rest. Default false: every
   * request with the server's token is allowed.
   */
  rbac?: boolean
  /**
   * Garbage collection by ownerReferences (default true): dependents whose owners are all gone are
   * deleted, Orphan and Foreground propagation are carried out. `false` behaves like envtest: nothing
   * is collected, and the `orphan`/`foregroundDeletion` finalizers stay until a client removes them.
   */
  gc?: boolean
  /**
   * How long the emulated namespace controller and kubelet take after a DELETE (ms): a deleted
   * namespace stays Terminating for `namespaceMs` (default 200) before it is emptied and removed; a
   * scheduled Pod deleted with a grace period stays Terminating for min(grace, `podMs`) (default 1000).
   * `control.finishDeletions()` fast-forwards both.
   */
  deletionTiming?: Partial<DeletionTiming>
  /**
   * Where a webhook's Service reference (`clientConfig.service`, admission and CRD conversion) is
   * reached: `(namespace, name, port) => 'https://127.0.0.1:8443'`, like kube-apiserver's
   * ServiceResolver; the reference's path is appended and the certificate must name
   * `<name>.<namespace>.svc`. Without it, calling a Service reference fails saying so.
   */
  serviceResolver?: ServiceResolver
  /** How long a CRD conversion webhook may take (default 30000 ms, kube-apiserver's). */
  conversionTimeoutMs?: number
}

/** Throws a ConfigError naming the first option out of range. */
export function checkOptions(o: TestServerOptions): void {
  const bad = (what: string, v: unknown) => new ConfigError(`TestServer: ${what}, got ${String(v)}`)
  if (o.port !== undefined && !(Number.isInteger(o.port) && o.port >= 0 && o.port <= 65535))
    throw bad('port must be a whole number from 0 to 65535', o.port)
  if (o.historySize !== undefined && !(Number.isInteger(o.historySize) && o.historySize >= 0))
    throw bad('historySize must be a whole number of events, 0 or more', o.historySize)
  if (o.bookmarkIntervalMs !== undefined && !(o.bookmarkIntervalMs > 0 && Number.isFinite(o.bookmarkIntervalMs)))
    throw bad('bookmarkIntervalMs must be a positive number of ms', o.bookmarkIntervalMs)
  if (o.seed !== undefined && !Number.isFinite(o.seed)) throw bad('seed must be a finite number', o.seed)
  if (o.conversionTimeoutMs !== undefined && !(o.conversionTimeoutMs > 0 && Number.isFinite(o.conversionTimeoutMs)))
    throw bad('conversionTimeoutMs must be a positive number of ms', o.conversionTimeoutMs)
}
