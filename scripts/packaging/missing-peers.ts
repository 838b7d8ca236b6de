// Type-checked (strict, without skipLibCheck) in the consumer without prom-client: the reconciler's
// .d.ts must not need the optional peer.
import { InMemoryMetrics, PrometheusMetrics, type Metrics, type PromRegistry } from '@statewright/reconciler'

export const metrics: Metrics = new InMemoryMetrics()
export const make = (registry: PromRegistry): Metrics => new PrometheusMetrics({ registry })
