// The spans of a Manager's functions: every run of a derive function (`controller.derive`), of a
// reconcile step (`controller.reconcile_step`) and of a finalizer's cleanup
// (`controller.finalizer_cleanup`) runs in a span of the Manager's tracer (ManagerOptions.tracer,
// default @opentelemetry/api's global tracer when installed), with the object's key and kind, the
// run's reason and the function's name as attributes, and a throw as the span's error.
// Invariants:
// - Zero cost without a tracer: the Manager passes the function itself, unwrapped (wrapRun returns
//   `fn` unchanged), so no span object is made and nothing is recorded.
// - A run's log lines name its trace: ctx.logger (derive and reconcile step) is the Manager's
//   logger with the span's trace_id and span_id, set only when traced.
// - The span is active while the function runs, so spans the function starts (and any
//   instrumentation of its I/O) are its children.
// - A run links to the cause of its input (statedb's causeOf: the watch event or list that delivered
//   the object, or the request whose answer it is), so a run names the change that made it.
// - A run's result is remembered with the run's span (runCause), kept apart from the causes of
//   objects: a function that returns a row it read does not make that row's cause the run. The
//   applies, status writes and Events made from the result take the run as their parent.
import { causeOf, inSpan, validSpanContext, type Logger, type SpanContextLike, type SpanLike, type TracerLike } from '@statewright/statedb'

const runs = new WeakMap<object, SpanContextLike>()

/** The span of the run that returned `result`, or threw it (traced runs only). */
export function runCause(result: unknown): SpanContextLike | undefined {
  return typeof result === 'object' && result !== null ? runs.get(result) : undefined
}

/** The attributes of a run's span for an input (its key and kind when it is a Kubernetes object). */
export function runAttributes(input: unknown, name: string, reason?: string): Record<string, string> {
  const a: Record<string, string> = { 'statewright.function': name }
  if (reason !== undefined) a['statewright.reason'] = reason
  const o = input as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } } | null
  if (o && typeof o === 'object' && o.metadata && typeof o.metadata.name === 'string') {
    const ns = typeof o.metadata.namespace === 'string' && o.metadata.namespace ? `${o.metadata.namespace}/` : ''
    a['k8s.object.key'] = ns + o.metadata.name
    if (typeof o.kind === 'string') a['k8s.object.kind'] = o.kind
  }
  return a
}

/**
 * `fn` run in a span `spanName` of `tracer` per call, or `fn` itself without a tracer. With a
 * `logger`, a context object gets `logger`: that logger's child with the span's trace_id and span_id.
 */
export function wrapRun<I, C extends object, R>(
  tracer: TracerLike | undefined,
  spanName: string,
  name: string,
  fn: (input: I, ctx: C) => R,
  logger?: Logger,
): (input: I, ctx: C) => R {
  if (!tracer) return fn
  return (input, ctx) => {
    const cause = causeOf(input)
    const run = (span: SpanLike | undefined): R => {
      const sc = validSpanContext(span)
      if (!span || !sc) return fn(input, ctx)
      const reason = (ctx as { reason?: unknown }).reason
      for (const [k, v] of Object.entries(runAttributes(input, name, typeof reason === 'string' ? reason : undefined)))
        span.setAttribute(k, v)
      let r: R
      try {
        r = logger ? fn(input, { ...ctx, logger: logger.child({ trace_id: sc.traceId, span_id: sc.spanId }) }) : fn(input, ctx)
      } catch (err) {
        if (typeof err === 'object' && err !== null) runs.set(err, sc) // a failed run's Event and status are its own too
        throw err
      }
      if (typeof r === 'object' && r !== null && !(r instanceof Promise)) runs.set(r, sc)
      return r
    }
    return inSpan(tracer, spanName, run, cause ? { links: [{ context: cause, attributes: { 'statewright.link': 'cause' } }] } : undefined)
  }
}
