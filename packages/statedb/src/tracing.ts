// The one tracing interface of statewright: the part of an OpenTelemetry Tracer and Span the
// packages use (TracerLike, SpanLike), resolving the tracer (the one given, none, or
// @opentelemetry/api's global tracer), and running a function in a span (inSpan).
// It lives here, on the ground floor next to the Logger, because the controller (its Manager's
// derive, reconcile steps and finalizers, and the state-of-world controller) and primary (its
// syncs) both trace, and neither may import the other upward. It is tiny and imports no
// OpenTelemetry at runtime: the API is an optional peer, loaded through loadOptionalPeer only when
// no tracer is given, and then at the first span once a tracer provider is registered (an SDK's
// start registers one), not at start: 50 modules a process that does not trace does not need.
// Invariants:
// - without a tracer (`tracer: false`, or no @opentelemetry/api installed) inSpan calls its function
//   with no span: no span objects, nothing recorded.
// - A span ends whatever its function does; an error is recorded on it (exception and status
//   ERROR) and rethrown unchanged. An async function's span ends when its promise settles.
import { isOptionalPeerInstalled, loadOptionalPeer } from './peers.ts'

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
  return isOptionalPeerInstalled('@opentelemetry/api', { from: import.meta.url }) ? new GlobalTracer(name) : undefined
}

/** A span that records nothing, with the invalid (all-zero) context: what the API's tracer gives without a provider. */
const NO_SPAN: SpanLike = {
  setAttribute: () => NO_SPAN,
  recordException: () => {},
  setStatus: () => NO_SPAN,
  isRecording: () => false,
  end: () => {},
  spanContext: () => ({ traceId: '00000000000000000000000000000000', spanId: '0000000000000000' }),
}

/** Where @opentelemetry/api keeps its globals: `Symbol.for('opentelemetry.js.api.<major>')`, `.trace` once a provider is registered. */
const OTEL_GLOBAL = 'opentelemetry.js.api.'

function otelProviderRegistered(): boolean {
  const g = globalThis as unknown as Record<symbol, { trace?: unknown } | undefined>
  for (const s of Object.getOwnPropertySymbols(globalThis)) if (s.description?.startsWith(OTEL_GLOBAL) && g[s]?.trace) return true
  return false
}

/**
 * @opentelemetry/api's global tracer, the API loaded at the first span after a tracer provider is
 * registered; until then a span records nothing (NO_SPAN), as the API's own tracer does without a
 * provider. Once loaded it is the API's (proxy) tracer for good.
 */
class GlobalTracer implements TracerLike {
  private tracer: TracerLike | undefined
  constructor(private readonly name: string) {}

  startActiveSpan<F extends (span: SpanLike) => unknown>(spanName: string, fn: F): ReturnType<F> {
    if (!this.tracer) {
      if (!otelProviderRegistered()) return fn(NO_SPAN) as ReturnType<F>
      const api = loadOptionalPeer<{ trace: { getTracer(name: string): TracerLike } }>('@opentelemetry/api', { from: import.meta.url })
      if (!api) return fn(NO_SPAN) as ReturnType<F>
      this.tracer = api.trace.getTracer(this.name)
    }
    return this.tracer.startActiveSpan(spanName, fn)
  }
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
