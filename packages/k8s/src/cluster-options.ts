// What a Cluster is made with (ClusterOptions), what one request names (RequestOptions) and what
// each answered request reports (RequestRecord, for REST client metrics).
// Invariants (kept by ./cluster.ts): every request has a timeout (requestTimeoutMs unless the request
// names its own); a write's fence defaults to the cluster's write fence, a GET is never fenced.
import type { RateLimitOptions } from '@statewright/reconciler'
import type { KubeConfig } from './clientnode.ts'
import type { Kubeconfig } from './kubeconfig.ts'
import type { WriteFence } from './fence.ts'
import type { TracerLike } from '@statewright/statedb'

/** `qps` and `burst` are the shared `RateLimitOptions` (client-go's names), each optional here. */
export interface ClusterOptions extends Partial<RateLimitOptions> {
  /**
   * Traces every request as a span `k8s.request` (`<METHOD> <path>`'s method and path as
   * attributes, the status code, an error as the span's status) and sends the span as the W3C
   * `traceparent` header, so the API server's side can join the trace. Default none (a Manager sets
   * its tracer on its clusters with setTracer).
   */
  tracer?: TracerLike
  /**
   * A loaded kubeconfig: a Kubeconfig, or a client-node KubeConfig of your own; or give `kubeconfig`
   * (YAML text); default: Kubeconfig.fromDefault() ($KUBECONFIG, ~/.kube/config, in-cluster).
   */
  kubeConfig?: KubeConfig | Kubeconfig
  kubeconfig?: string
  /** Name used in metrics, health and messages (default: the kubeconfig's current context). */
  name?: string
  /** Requests per second (token bucket refill); 0 or Infinity: no client-side limit. Default 100. */
  qps?: number
  /** Token bucket size (default 2 × qps). */
  burst?: number
  /** Timeout of a plain request, ms (default 30 000). */
  requestTimeoutMs?: number
  /** Sockets per host of the shared agent (default 64). */
  maxSockets?: number
  /** Times a request answered with 429 (or 5xx with Retry-After) is retried (default 10, as client-go). */
  maxRetryAfterAttempts?: number
  /** User-Agent header (default "statewright/0.1"). */
  userAgent?: string
  /** Called when each request is answered (code 0: no answer); for REST client metrics. Must not throw. */
  onResponse?: (r: RequestRecord) => void
}

/** One answered request, as client-go's REST client metrics see it. */
export interface RequestRecord {
  method: string
  /** HTTP status, 0 for a transport error. */
  code: number
  host: string
  seconds: number
  watch: boolean
}

export interface RequestOptions {
  method?: string
  /** Path below the server URL, e.g. /api/v1/namespaces/default/configmaps. */
  path: string
  query?: Record<string, string | number | boolean | undefined>
  body?: unknown
  contentType?: string
  /** Overrides the cluster's requestTimeoutMs. */
  timeoutMs?: number
  signal?: AbortSignal
  /** What the request is about, for error messages: "ConfigMap default/web". */
  what?: string
  /**
   * The lease term this write is made under (./fence.ts): checked right before the request is sent,
   * its timeout ends at the term's deadline, aborted when the term ends. `null`: not fenced, even by
   * the cluster's write fence (lease renewals, Events). Default: the cluster's write fence for
   * anything but a GET.
   */
  fence?: WriteFence | null
}
