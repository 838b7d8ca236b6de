// Prometheus metrics (prom-client) for reflectors and targets. One K8sMetrics per registry: every
// reflector and target of the process shares it, labelled by name and cluster.
//
// prom-client is an optional peer dependency: it is required when a K8sMetrics is built, never at
// import, so the package works without it (reflectors and targets without `metrics`). No public type
// names a prom-client type, so a consumer without prom-client still type-checks our .d.ts.
import type * as PromClient from 'prom-client'
import type { PromRegistry } from '@statewright/reconciler'
import { requireOptionalPeer } from '@statewright/statedb'

/** A metric's label values by label name. */
export type MetricLabels<L extends string> = Partial<Record<L, string | number>>
/** The part of a prom-client Counter the reflectors and targets use. */
export interface CounterLike<L extends string> {
  inc(labels: MetricLabels<L>, value?: number): void
}
/** The part of a prom-client Gauge the reflectors and targets use. */
export interface GaugeLike<L extends string> {
  set(labels: MetricLabels<L>, value: number): void
}

export class K8sMetrics {
  /** The prom-client Registry the metrics are in (`await registry.metrics()` for a /metrics page). */
  readonly registry: PromRegistry
  readonly reflectorObjects: GaugeLike<'reflector' | 'cluster'>
  readonly reflectorEvents: CounterLike<'reflector' | 'cluster' | 'type'>
  readonly reflectorRelists: CounterLike<'reflector' | 'cluster'>
  readonly reflectorErrors: CounterLike<'reflector' | 'cluster'>
  readonly reflectorLastSync: GaugeLike<'reflector' | 'cluster'>
  readonly reflectorUp: GaugeLike<'reflector' | 'cluster'>
  readonly reflectorInactivityRestarts: CounterLike<'reflector' | 'cluster'>
  readonly targetOps: CounterLike<'target' | 'cluster' | 'op' | 'result'>
  readonly driftRepairs: CounterLike<'cluster'>
  readonly driftFights: GaugeLike<'cluster'>

  /** `registry`: a prom-client Registry (default: a new one). */
  constructor(registry?: PromRegistry, prefix = 'statewright_k8s_') {
    const { Counter, Gauge, Registry } = requireOptionalPeer<Pick<typeof PromClient, 'Counter' | 'Gauge' | 'Registry'>>(
      'prom-client',
      'K8sMetrics',
      {
        from: import.meta.url,
        range: '^15.1.3',
        instead: 'or leave `metrics` unset',
        parts: { Counter: 'lib/counter', Gauge: 'lib/gauge', Registry: 'lib/registry' }, // not its main module's default metrics and @opentelemetry/api
      },
    )
    const reg = (registry as PromClient.Registry | undefined) ?? new Registry()
    this.registry = reg
    const r = [reg]
    this.reflectorObjects = new Gauge({
      name: `${prefix}reflector_objects`,
      help: 'Objects in the reflector table after the last write',
      labelNames: ['reflector', 'cluster'],
      registers: r,
    })
    this.reflectorEvents = new Counter({
      name: `${prefix}reflector_events_total`,
      help: 'Watch events received',
      labelNames: ['reflector', 'cluster', 'type'],
      registers: r,
    })
    this.reflectorRelists = new Counter({
      name: `${prefix}reflector_lists_total`,
      help: 'Complete lists (initial, after 410, state-of-world)',
      labelNames: ['reflector', 'cluster'],
      registers: r,
    })
    this.reflectorErrors = new Counter({
      name: `${prefix}reflector_errors_total`,
      help: 'Failed lists and watches',
      labelNames: ['reflector', 'cluster'],
      registers: r,
    })
    this.reflectorLastSync = new Gauge({
      name: `${prefix}reflector_last_sync_seconds`,
      help: 'Unix time of the last complete list',
      labelNames: ['reflector', 'cluster'],
      registers: r,
    })
    this.reflectorUp = new Gauge({
      name: `${prefix}reflector_watching`,
      help: '1 while the reflector is synced and watching',
      labelNames: ['reflector', 'cluster'],
      registers: r,
    })
    this.reflectorInactivityRestarts = new Counter({
      name: `${prefix}reflector_inactivity_restarts_total`,
      help: 'Watches restarted after no event and no bookmark for inactivityTimeoutMs',
      labelNames: ['reflector', 'cluster'],
      registers: r,
    })
    this.driftRepairs = new Counter({
      name: `${prefix}drift_repairs_total`,
      help: 'Managed objects marked for repair after an external edit or delete',
      labelNames: ['cluster'],
      registers: r,
    })
    this.driftFights = new Gauge({
      name: `${prefix}drift_fights`,
      help: 'Managed objects another writer keeps reverting (repairs backed off)',
      labelNames: ['cluster'],
      registers: r,
    })
    this.targetOps = new Counter({
      name: `${prefix}target_operations_total`,
      help: 'Target operations (apply, delete, prune) by result',
      labelNames: ['target', 'cluster', 'op', 'result'],
      registers: r,
    })
  }
}
