// Prometheus metrics with prom-client, named after controller-runtime's
// (controller_runtime_reconcile_total, ..._reconcile_time_seconds, workqueue_depth):
//
//   <prefix>_reconcile_total{reconciler, operation, result}     counter, objects
//   <prefix>_reconcile_errors_total{reconciler, operation}      counter, failed objects
//   <prefix>_reconcile_time_seconds{reconciler, operation}      histogram, per call (a batch call is one)
//   <prefix>_reconcile_current_errors{reconciler}               gauge, objects in error now
//   <prefix>_reconcile_retry_queue_depth{reconciler}            gauge
//   <prefix>_reconcile_rounds_total{reconciler}                 counter, incremental rounds
//   <prefix>_reconcile_round_time_seconds{reconciler}           histogram, incremental rounds
//   <prefix>_reconcile_prune_total{reconciler}                  counter, prune runs
//   <prefix>_reconcile_prune_errors_total{reconciler}           counter
//   <prefix>_reconcile_prune_current_error{reconciler}          gauge, 1 while the last prune failed
//   <prefix>_reconcile_prune_time_seconds{reconciler}           histogram, prunes
//   <prefix>_reconcile_out_of_sync_total{reconciler}            counter, objects found out of sync
//   <prefix>_reconcile_full_time_seconds{reconciler}            histogram, full reconciliations
//
// The default prefix is "statewright". Metrics go to the given registry (default: prom-client's
// global one); two PrometheusMetrics on one registry need different prefixes.
//
// prom-client is an optional peer dependency: it is loaded when the first PrometheusMetrics is built,
// never at import, so the package works without it (InMemoryMetrics, or no metrics). For the same
// reason no public type here names a prom-client type (a consumer without prom-client must still
// type-check our .d.ts without skipLibCheck): the registry is described by the little we need.

import { requireOptionalPeer } from '@statewright/statedb'
import type * as PromClient from 'prom-client'
import type { Metrics, OperationName, OperationResult } from './metrics.ts'

/** A prom-client (15.x) `Registry`, described by what callers use: `metrics()` for a /metrics page. */
export interface PromRegistry {
  metrics(): Promise<string>
  readonly contentType: string
}

export interface PrometheusMetricsOptions {
  /** A prom-client `Registry` (default: prom-client's global `register`). */
  registry?: PromRegistry
  prefix?: string
  /** Histogram buckets for operation durations, seconds. */
  buckets?: number[]
}

const DEFAULT_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60]

export class PrometheusMetrics implements Metrics {
  // private: their prom-client types must not reach the .d.ts (see the top of the file)
  private readonly reconcileTotal: PromClient.Counter<'reconciler' | 'operation' | 'result'>
  private readonly reconcileErrors: PromClient.Counter<'reconciler' | 'operation'>
  private readonly reconcileTime: PromClient.Histogram<'reconciler' | 'operation'>
  private readonly currentErrors: PromClient.Gauge<'reconciler'>
  private readonly retryQueueDepth: PromClient.Gauge<'reconciler'>
  private readonly pruneTotal: PromClient.Counter<'reconciler'>
  private readonly pruneErrors: PromClient.Counter<'reconciler'>
  private readonly pruneCurrentError: PromClient.Gauge<'reconciler'>
  private readonly pruneTime: PromClient.Histogram<'reconciler'>
  private readonly roundsTotal: PromClient.Counter<'reconciler'>
  private readonly roundTime: PromClient.Histogram<'reconciler'>
  private readonly outOfSync: PromClient.Counter<'reconciler'>
  private readonly fullTime: PromClient.Histogram<'reconciler'>

  constructor(opts: PrometheusMetricsOptions = {}) {
    const { Counter, Gauge, Histogram, Registry } = requireOptionalPeer<
      Pick<typeof PromClient, 'Counter' | 'Gauge' | 'Histogram' | 'Registry'>
    >('prom-client', 'PrometheusMetrics', {
      range: '^15.1.3',
      instead: 'or use InMemoryMetrics / no metrics',
      // not its main module's default metrics and @opentelemetry/api
      parts: { Counter: 'lib/counter', Gauge: 'lib/gauge', Histogram: 'lib/histogram', Registry: 'lib/registry' },
    })
    // prom-client's global `register` is its Registry class's globalRegistry (lib/registry.js)
    const register = (Registry as unknown as { globalRegistry: PromClient.Registry }).globalRegistry
    const p = opts.prefix ?? 'statewright'
    const registers = [(opts.registry as PromClient.Registry | undefined) ?? register]
    const buckets = opts.buckets ?? DEFAULT_BUCKETS
    this.reconcileTotal = new Counter({
      name: `${p}_reconcile_total`,
      help: 'Objects reconciled, by operation and result.',
      labelNames: ['reconciler', 'operation', 'result'],
      registers,
    })
    this.reconcileErrors = new Counter({
      name: `${p}_reconcile_errors_total`,
      help: 'Objects whose operation failed.',
      labelNames: ['reconciler', 'operation'],
      registers,
    })
    this.reconcileTime = new Histogram({
      name: `${p}_reconcile_time_seconds`,
      help: 'Duration of an operation call (a batch call counts once).',
      labelNames: ['reconciler', 'operation'],
      buckets,
      registers,
    })
    this.currentErrors = new Gauge({
      name: `${p}_reconcile_current_errors`,
      help: 'Objects whose last operation failed (updates and deletes), waiting for a retry.',
      labelNames: ['reconciler'],
      registers,
    })
    this.retryQueueDepth = new Gauge({
      name: `${p}_reconcile_retry_queue_depth`,
      help: 'Objects queued for a retry.',
      labelNames: ['reconciler'],
      registers,
    })
    this.pruneTotal = new Counter({ name: `${p}_reconcile_prune_total`, help: 'Prune runs.', labelNames: ['reconciler'], registers })
    this.pruneErrors = new Counter({
      name: `${p}_reconcile_prune_errors_total`,
      help: 'Failed prune runs.',
      labelNames: ['reconciler'],
      registers,
    })
    this.pruneCurrentError = new Gauge({
      name: `${p}_reconcile_prune_current_error`,
      help: '1 while the last prune failed, else 0.',
      labelNames: ['reconciler'],
      registers,
    })
    this.pruneTime = new Histogram({
      name: `${p}_reconcile_prune_time_seconds`,
      help: 'Duration of prunes (alone or in a full reconciliation).',
      labelNames: ['reconciler'],
      buckets,
      registers,
    })
    this.roundsTotal = new Counter({
      name: `${p}_reconcile_rounds_total`,
      help: 'Incremental reconciliation rounds.',
      labelNames: ['reconciler'],
      registers,
    })
    this.roundTime = new Histogram({
      name: `${p}_reconcile_round_time_seconds`,
      help: 'Duration of incremental rounds (operations and the write-back).',
      labelNames: ['reconciler'],
      buckets,
      registers,
    })
    this.outOfSync = new Counter({
      name: `${p}_reconcile_out_of_sync_total`,
      help: 'Objects found out of sync by full reconciliation.',
      labelNames: ['reconciler'],
      registers,
    })
    this.fullTime = new Histogram({
      name: `${p}_reconcile_full_time_seconds`,
      help: 'Duration of full reconciliations (prune and update of every object).',
      labelNames: ['reconciler'],
      buckets,
      registers,
    })
  }

  operation(reconciler: string, op: OperationName, result: OperationResult, seconds: number, count: number): void {
    this.reconcileTotal.inc({ reconciler, operation: op, result }, count)
    if (result === 'error') this.reconcileErrors.inc({ reconciler, operation: op }, count)
    this.reconcileTime.observe({ reconciler, operation: op }, seconds)
  }

  prune(reconciler: string, seconds: number, error: boolean): void {
    this.pruneTotal.inc({ reconciler })
    if (error) this.pruneErrors.inc({ reconciler })
    this.pruneCurrentError.set({ reconciler }, error ? 1 : 0)
    this.pruneTime.observe({ reconciler }, seconds)
  }

  round(reconciler: string, seconds: number): void {
    this.roundsTotal.inc({ reconciler })
    this.roundTime.observe({ reconciler }, seconds)
  }

  fullReconciliation(reconciler: string, seconds: number, outOfSync: number): void {
    this.fullTime.observe({ reconciler }, seconds)
    if (outOfSync > 0) this.outOfSync.inc({ reconciler }, outOfSync)
  }

  state(reconciler: string, currentErrors: number, retryQueueDepth: number): void {
    this.currentErrors.set({ reconciler }, currentErrors)
    this.retryQueueDepth.set({ reconciler }, retryQueueDepth)
  }
}
