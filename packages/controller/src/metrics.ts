// Prometheus metrics under controller-runtime's and client-go's names, so existing Grafana
// dashboards for Go operators work: one prom-client Registry for everything a Manager runs.
// - controller_runtime_reconcile_total{controller,result}, controller_runtime_reconcile_errors_total,
//   controller_runtime_reconcile_time_seconds (histogram): runs of a reconcile step's or a derive's
//   function, as controller-runtime counts Reconcile() calls (result success, error, requeue_after);
// - statewright_controller_apply_total{controller,operation,result} and ..._apply_time_seconds: the
//   applies and deletes of the desired objects (a count of objects, not of runs);
// - workqueue_depth{name}, workqueue_adds_total{name}, workqueue_retries_total{name} (the
//   reconciler's pending and retrying objects stand for the workqueue);
// - rest_client_requests_total{code,method,host}, rest_client_request_duration_seconds{verb,host};
// - leader_election_master_status{name}.
// prom-client is an optional peer: loaded when a ControllerMetrics is built, never at import.
import type * as PromClient from 'prom-client'
import type { Metrics, OperationName, OperationResult, PromRegistry } from '@statewright/reconciler'
import { requireOptionalPeer } from '@statewright/statedb'
import type { RequestRecord } from '@statewright/k8s'

export class ControllerMetrics implements Metrics {
  readonly registry: PromRegistry
  private readonly reconcileTotal: PromClient.Counter<'controller' | 'result'>
  private readonly reconcileErrors: PromClient.Counter<'controller'>
  private readonly reconcileTime: PromClient.Histogram<'controller'>
  private readonly applyTotal: PromClient.Counter<'controller' | 'operation' | 'result'>
  private readonly applyTime: PromClient.Histogram<'controller' | 'operation'>
  private readonly depth: PromClient.Gauge<'name'>
  private readonly adds: PromClient.Counter<'name'>
  private readonly retries: PromClient.Counter<'name'>
  private readonly requests: PromClient.Counter<'code' | 'method' | 'host'>
  private readonly latency: PromClient.Histogram<'verb' | 'host'>
  private readonly leader: PromClient.Gauge<'name'>

  /** Throws, naming the install command, when prom-client is not installed. */
  constructor(registry?: PromRegistry) {
    // prom-client's metric classes alone, not its main module (default metrics, cluster, Pushgateway, @opentelemetry/api)
    const prom = requireOptionalPeer<Pick<typeof PromClient, 'Registry' | 'Counter' | 'Gauge' | 'Histogram'>>(
      'prom-client',
      'ControllerMetrics',
      {
        from: import.meta.url,
        range: '^15.1.3',
        parts: { Registry: 'lib/registry', Counter: 'lib/counter', Gauge: 'lib/gauge', Histogram: 'lib/histogram' },
      },
    )
    const reg = (registry as PromClient.Registry | undefined) ?? new prom.Registry()
    this.registry = reg
    const registers = [reg]
    const { Counter, Gauge, Histogram } = prom
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    })
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    })
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    })
    this.applyTotal = new Counter({
      name: 'statewright_controller_apply_total',
      help: 'Desired objects applied or deleted, by result',
      labelNames: ['controller', 'operation', 'result'],
      registers,
    })
    this.applyTime = new Histogram({
      name: 'statewright_controller_apply_time_seconds',
      help: 'Time per applied or deleted desired object',
      labelNames: ['controller', 'operation'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    })
    this.depth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue (objects waiting to be retried)',
      labelNames: ['name'],
      registers,
    })
    this.adds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue (objects reconciled)',
      labelNames: ['name'],
      registers,
    })
    this.retries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers,
    })
    this.requests = new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host.',
      labelNames: ['code', 'method', 'host'],
      registers,
    })
    this.latency = new Histogram({
      name: 'rest_client_request_duration_seconds',
      help: 'Request latency in seconds. Broken down by verb and host.',
      labelNames: ['verb', 'host'],
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
      registers,
    })
    this.leader = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.',
      labelNames: ['name'],
      registers,
    })
  }

  // ---- runs of a function (controller-runtime's Reconcile() calls) ----
  /** One run of a reconcile step's or a derive's function. */
  reconcileRun(controller: string, result: 'success' | 'error' | 'requeue_after', seconds: number): void {
    this.reconcileTotal.inc({ controller, result })
    if (result === 'error') this.reconcileErrors.inc({ controller })
    this.reconcileTime.observe({ controller }, seconds)
  }

  // ---- the reconciler's Metrics: applies and deletes of desired objects ----
  operation(reconciler: string, op: OperationName, result: OperationResult, seconds: number, count: number): void {
    this.applyTotal.inc({ controller: reconciler, operation: op, result }, count)
    this.applyTime.observe({ controller: reconciler, operation: op }, seconds / Math.max(1, count))
    this.adds.inc({ name: reconciler }, count)
    if (result === 'error') this.retries.inc({ name: reconciler }, count)
  }
  prune(): void {}
  fullReconciliation(): void {}
  state(reconciler: string, _currentErrors: number, retryQueueDepth: number): void {
    this.depth.set({ name: reconciler }, retryQueueDepth)
  }

  // ---- the REST client and leader election ----
  request = (r: RequestRecord): void => {
    this.requests.inc({ code: r.code === 0 ? '<error>' : String(r.code), method: r.method, host: r.host })
    if (!r.watch) this.latency.observe({ verb: r.method, host: r.host }, r.seconds)
  }
  leading(name: string, leading: boolean): void {
    this.leader.set({ name }, leading ? 1 : 0)
  }
}
