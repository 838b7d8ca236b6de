// The one tracing interface of statewright: the part of an OpenTelemetry Tracer and Span the
// packages use (TracerLike, SpanLike), resolving the tracer (the one given, none, or
// @opentelemetry/api's global tracer), running a function in a span (inSpan), and the causes of
// objects (rememberCause, causeOf).
// It lives here, on the ground floor next to the Logger, because the controller (its Manager's
// derive, reconcile steps and finalizers, and the state-of-world controller), primary (its syncs)
// and k8s (its requests and watch events) all trace, and none may import another upward. It is tiny
// and imports no OpenTelemetry at runtime: the API is an optional peer, loaded through
// loadOptionalPeer only when no tracer is given (and then at the first span once a tracer provider is
// registered, an SDK's start registers one: 50 modules a process that does not trace does not need)
// or a span needs an explicit parent.
// Invariants:
// - without a tracer (`tracer: false`, or no @opentelemetry/api installed) inSpan calls its function
//   with no span: no span objects, nothing recorded.
// - A span ends whatever its function does; an error is recorded on it (exception and status
//   ERROR) and rethrown unchanged. An async function's span ends when its promise settles.
// - A cause is the span context that made an object (the watch event that delivered it, the run that
//   returned it, the request whose answer it is). It is held weakly by the object itself: it goes
//   when the object goes, and nothing is kept when nothing traces (causeOf is then one flag test).
// - A span given a parent is that parent's child (through @opentelemetry/api's context when it is
//   installed; otherwise it links to the parent instead), whatever span is active.
import { isOptionalPeerInstalled, loadOptionalPeer } from './peers.ts'

/** The part of an OpenTelemetry Span this package uses. */
export interface SpanLike {
  setAttribute(key: string, value: string | number | boolean): unknown
  recordException(exception: Error | string): unknown
  setStatus(status: { code: number; message?: string }): unknown
  isRecording(): boolean
  end(): void
  /** The span's ids (an OpenTelemetry Span has it): what a run's logs and links name. */
  spanContext?(): SpanContextLike
}

/** A span's ids: OpenTelemetry's SpanContext (W3C trace and span ids, trace flags). */
export interface SpanContextLike {
  traceId: string
  spanId: string
  traceFlags?: number
}

/** The part of OpenTelemetry's SpanOptions this package uses. */
export interface SpanOptionsLike {
  /** A new trace, whatever span is active. */
  root?: boolean
  /** Spans this one follows from without being their child (the watch event that caused a run). */
  links?: Array<{ context: SpanContextLike; attributes?: Record<string, string | number | boolean> }>
  attributes?: Record<string, string | number | boolean>
}

/** The part of an OpenTelemetry Tracer this package uses (an `@opentelemetry/api` Tracer is one). */
export interface TracerLike {
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, options: SpanOptionsLike, fn: F): ReturnType<F>
  /** `context` is an OpenTelemetry Context (the parent's, made by inSpan). */
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, options: SpanOptionsLike, context: unknown, fn: F): ReturnType<F>
}

/** Where a span starts: its parent (default: the active span), links, a new trace. */
export interface SpanStart extends SpanOptionsLike {
  /** The span's parent, e.g. the run that produced the object a request writes. */
  parent?: SpanContextLike | undefined
}

/** OpenTelemetry's SpanStatusCode (OK, ERROR), without importing the API. */
export const SPAN_OK = 1
export const SPAN_ERROR = 2

/** OpenTelemetry's INVALID_TRACEID: the trace id of the API's no-op spans. */
const INVALID_TRACE_ID = '00000000000000000000000000000000'

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
  spanContext: () => ({ traceId: INVALID_TRACE_ID, spanId: '0000000000000000' }),
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

  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, options: SpanOptionsLike, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, options: SpanOptionsLike, context: unknown, fn: F): ReturnType<F>
  startActiveSpan(spanName: string, ...rest: unknown[]): unknown {
    if (!this.tracer) {
      const fn = rest[rest.length - 1] as (span: SpanLike) => unknown
      if (!otelProviderRegistered()) return fn(NO_SPAN)
      const api = loadOptionalPeer<{ trace: { getTracer(name: string): TracerLike } }>('@opentelemetry/api', { from: import.meta.url })
      if (!api) return fn(NO_SPAN)
      this.tracer = api.trace.getTracer(this.name)
    }
    const t = this.tracer as unknown as { startActiveSpan(name: string, ...rest: unknown[]): unknown }
    return t.startActiveSpan(spanName, ...rest)
  }
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err))

/** Records an error on a span: the exception, and status ERROR with its message. */
export function recordError(span: SpanLike | undefined, err: unknown): void {
  if (!span) return
  span.recordException(err instanceof Error ? err : String(err))
  span.setStatus({ code: SPAN_ERROR, message: messageOf(err) })
}

interface OtelContextApi {
  context: { active(): unknown }
  trace: { setSpanContext(context: unknown, sc: SpanContextLike & { traceFlags: number; isRemote?: boolean }): unknown }
}
let otel: OtelContextApi | null | undefined

/** An OpenTelemetry Context whose span is `parent`, or undefined when @opentelemetry/api is not installed. */
function contextOf(parent: SpanContextLike): unknown {
  if (otel === undefined) otel = loadOptionalPeer<OtelContextApi>('@opentelemetry/api', { from: import.meta.url }) ?? null
  if (!otel) return undefined
  // the active context (its baggage kept) with the parent as its span
  return otel.trace.setSpanContext(otel.context.active(), { ...parent, traceFlags: parent.traceFlags ?? 1 })
}

/** A span context that names a sampled, valid span (the API's no-op spans have all-zero ids). */
export function validSpanContext(span: SpanLike | undefined): SpanContextLike | undefined {
  if (!span?.isRecording()) return undefined
  const sc = span.spanContext?.()
  if (!sc || sc.traceId === INVALID_TRACE_ID) return undefined
  return sc
}

let anyCause = false
const causes = new WeakMap<object, SpanContextLike>()

/** Remembers the span that made `obj` (a watch event's receipt, a run, a request), for spans about it later. */
export function rememberCause(obj: unknown, cause: SpanContextLike | undefined): void {
  if (!cause || typeof obj !== 'object' || obj === null) return
  anyCause = true
  causes.set(obj, cause)
}

/** The span that made `obj` (see rememberCause), if any. */
export function causeOf(obj: unknown): SpanContextLike | undefined {
  if (!anyCause || typeof obj !== 'object' || obj === null) return undefined
  return causes.get(obj)
}

/**
 * Runs `fn` in an active span of `tracer` (or without one): the span ends after it, with its error
 * recorded and rethrown. `fn` may be async; the span then ends when its promise settles. `start`
 * gives the span a parent (other than the active span), links, or a new trace.
 */
export function inSpan<T>(tracer: TracerLike | undefined, name: string, fn: (span: SpanLike | undefined) => T, start?: SpanStart): T {
  if (!tracer) return fn(undefined)
  const run = (span: SpanLike) => {
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
  }
  if (!start) return tracer.startActiveSpan(name, run)
  const { parent, ...options } = start
  if (parent) {
    const context = contextOf(parent)
    if (context !== undefined) return tracer.startActiveSpan(name, options, context, run)
    options.links = [...(options.links ?? []), { context: parent, attributes: { 'statewright.link': 'parent' } }]
  }
  return tracer.startActiveSpan(name, options, run)
}
