// Tracing of a state-of-world controller's runs with OpenTelemetry, as policy-machinery traces its
// controller: a span `controller.reconcile` per run (attribute `events.count`), a child span
// `topology.build` (the topology's counts, and its cycle as the span's error), and the run's error
// recorded on the run's span. `traceReconcile(name, fn)` (reconcile.ts) gives a reconcile function
// a span of its own.
// The interfaces and helpers are statedb's (src/tracing.ts, shared with the Manager and primary);
// this module re-exports them where the state-of-world controller always had them.
export { SPAN_ERROR, SPAN_OK, inSpan, recordError, resolveTracer, type SpanLike, type TracerLike } from '@statewright/statedb'
