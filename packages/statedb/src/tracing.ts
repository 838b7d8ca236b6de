// The one tracing interface of statewright: the part of an OpenTelemetry Tracer and Span the
// packages use (TracerLike, SpanLike), resolving the tracer (the one given, none, or
// @opentelemetry/api's global tracer), and running a function in a span (inSpan).
// It lives here, on the ground floor next to the Logger, because the controller (its Manager's
// derive, reconcile steps and finalizers, and the state-of-world controller) and primary (its
// syncs) both trace, and neither may import the other upward. It is tiny and imports no
// OpenTelemetry at runtime: the API is an optional peer, loaded through loadOptionalPeer only when
// no tracer is given.
// Invariants:
// - without a tracer (`tracer: false`, or no @opentelemetry/api installed) inSpan calls its function
//   with no span: no span objects, nothing recorded.
// - A span ends whatever its function does; an error is recorded on it (exception and status
//   ERROR) and rethrown unchanged. An async function's span ends when its promise settles.
import { loadOptionalPeer } from './peers.ts'

/** The part of an OpenTelemetry Span this package uses. */
export interface SpanLike {
  setAttribute(key: string, value: string | number | boolean): unknown
  recordException(exception: Error | string): unknown
  setStatus(status: { code: number; message?: string }): unknown
  isRecording(): boolean
  end(): void
  /** The span's ids (an OpenTelemetry Span has it): what a run's logs and links name. */
  spanContext?(): { traceId: string; spanId: string }
}

/** The part of an OpenTelemetry Tracer this package uses (an `@opentelemetry/api` Tracer is one). */
export interface TracerLike {
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, fn: F): ReturnType<F>
}

/** OpenTelemetry's SpanStatusCode (OK, ERROR), without importing the API. */
export const SPAN_OK = 1
export const SPAN_ERROR = 2

/** The tracer to use: the one given, none (`false`), or @opentelemetry/api's global tracer when the API is installed. */
export function resolveTracer(tracer: TracerLike | false | undefined, name: string): TracerLike | undefined {
  if (tracer === false) return undefined
  if (tracer) return tracer
  const api = loadOptionalPeer<{ trace: { getTracer(name: string): TracerLike } }>('@opentelemetry/api', { from: import.meta.url })
  return api?.trace.getTracer(name)
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err))

/** Records an error on a span: the exception, and status ERROR with its message. */
export function recordError(span: SpanLike | undefined, err: unknown): void {
  if (!span) return
  span.recordException(err instanceof Error ? err : String(err))
  span.setStatus({ code: SPAN_ERROR, message: messageOf(err) })
}

/**
 * Runs `fn` in an active span of `tracer` (or without one): the span ends after it, with its error
 * recorded and rethrown. `fn` may be async; the span then ends when its promise settles.
 */
export function inSpan<T>(tracer: TracerLike | undefined, name: string, fn: (span: SpanLike | undefined) => T): T {
  if (!tracer) return fn(undefined)
  return tracer.startActiveSpan(name, (span: SpanLike) => {
    let async = false
    try {
      const r = fn(span)
      if (r instanceof Promise) {
        async = true
        return r.then(
          (v) => {
            span.end()
            return v
          },
          (err: unknown) => {
            recordError(span, err)
            span.end()
            throw err
          },
        ) as T
      }
      return r
    } catch (err) {
      recordError(span, err)
      throw err
    } finally {
      if (!async) span.end()
    }
  })
}
