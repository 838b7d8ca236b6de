// Prometheus metrics (prom-client) for reflectors and targets. One K8sMetrics per registry: every
// reflector and target of the process shares it, labelled by name and cluster.
import { Counter, Gauge, Registry } from 'prom-client'

export class K8sMetrics {
  readonly registry: Registry
  readonly reflectorObjects: Gauge<'reflector' | 'cluster'>
  readonly reflectorEvents: Counter<'reflector' | 'cluster' | 'type'>
  readonly reflectorRelists: Counter<'reflector' | 'cluster'>
  readonly reflectorErrors: Counter<'reflector' | 'cluster'>
  readonly reflectorLastSync: Gauge<'reflector' | 'cluster'>
  readonly reflectorUp: Gauge<'reflector' | 'cluster'>
  readonly targetOps: Counter<'target' | 'cluster' | 'op' | 'result'>

  constructor(registry: Registry = new Registry(), prefix = 'statewright_k8s_') {
    this.registry = registry
    const r = [registry]
    this.reflectorObjects = new Gauge({ name: `${prefix}reflector_objects`, help: 'Objects in the reflector table after the last write', labelNames: ['reflector', 'cluster'], registers: r })
    this.reflectorEvents = new Counter({ name: `${prefix}reflector_events_total`, help: 'Watch events received', labelNames: ['reflector', 'cluster', 'type'], registers: r })
    this.reflectorRelists = new Counter({ name: `${prefix}reflector_lists_total`, help: 'Complete lists (initial, after 410, state-of-world)', labelNames: ['reflector', 'cluster'], registers: r })
    this.reflectorErrors = new Counter({ name: `${prefix}reflector_errors_total`, help: 'Failed lists and watches', labelNames: ['reflector', 'cluster'], registers: r })
    this.reflectorLastSync = new Gauge({ name: `${prefix}reflector_last_sync_seconds`, help: 'Unix time of the last complete list', labelNames: ['reflector', 'cluster'], registers: r })
    this.reflectorUp = new Gauge({ name: `${prefix}reflector_watching`, help: '1 while the reflector is synced and watching', labelNames: ['reflector', 'cluster'], registers: r })
    this.targetOps = new Counter({ name: `${prefix}target_operations_total`, help: 'Target operations (apply, delete, prune) by result', labelNames: ['target', 'cluster', 'op', 'result'], registers: r })
  }
}
