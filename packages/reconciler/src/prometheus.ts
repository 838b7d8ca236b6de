// Prometheus metrics with prom-client, named after controller-runtime's
// (controller_runtime_reconcile_total, ..._reconcile_time_seconds, workqueue_depth):
//
//   <prefix>_reconcile_total{reconciler, operation, result}     counter, objects
//   <prefix>_reconcile_errors_total{reconciler, operation}      counter, failed objects
//   <prefix>_reconcile_time_seconds{reconciler, operation}      histogram, per call (a batch call is one)
//   <prefix>_reconcile_current_errors{reconciler}               gauge, objects in error now
//   <prefix>_reconcile_retry_queue_depth{reconciler}            gauge
//   <prefix>_reconcile_prune_total{reconciler}                  counter, prune runs
//   <prefix>_reconcile_prune_errors_total{reconciler}           counter
//   <prefix>_reconcile_out_of_sync_total{reconciler}            counter, objects found out of sync
//   <prefix>_reconcile_full_time_seconds{reconciler}            histogram, full reconciliations
//
// The default prefix is "statewright". Metrics go to the given registry (default: prom-client's
// global one); two PrometheusMetrics on one registry need different prefixes.

import { Counter, Gauge, Histogram, register as globalRegistry, type Registry } from 'prom-client'
import type { Metrics, OperationName, OperationResult } from './metrics.ts'

export interface PrometheusMetricsOptions {
  registry?: Registry
  prefix?: string
  /** Histogram buckets for operation durations, seconds. */
  buckets?: number[]
}

const DEFAULT_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60]

export class PrometheusMetrics implements Metrics {
  readonly reconcileTotal: Counter<'reconciler' | 'operation' | 'result'>
  readonly reconcileErrors: Counter<'reconciler' | 'operation'>
  readonly reconcileTime: Histogram<'reconciler' | 'operation'>
  readonly currentErrors: Gauge<'reconciler'>
  readonly retryQueueDepth: Gauge<'reconciler'>
  readonly pruneTotal: Counter<'reconciler'>
  readonly pruneErrors: Counter<'reconciler'>
  readonly outOfSync: Counter<'reconciler'>
  readonly fullTime: Histogram<'reconciler'>

  constructor(opts: PrometheusMetricsOptions = {}) {
    const p = opts.prefix ?? 'statewright'
    const registers = [opts.registry ?? globalRegistry]
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
    this.pruneErrors = new Counter({ name: `${p}_reconcile_prune_errors_total`, help: 'Failed prune runs.', labelNames: ['reconciler'], registers })
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

  prune(reconciler: string, _seconds: number, error: boolean): void {
    this.pruneTotal.inc({ reconciler })
    if (error) this.pruneErrors.inc({ reconciler })
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
