// A tracer that keeps its spans in memory, of the OpenTelemetry API's shape (startActiveSpan, and the
// Span methods statewright calls): what the tests read spans from, with no SDK. A span's parent is
// the span active where it started (AsyncLocalStorage, as the SDK's context manager does), or the
// span of the OpenTelemetry Context it was given (read with the API, as the SDK does); `root` starts a
// new trace; links are kept.
import { AsyncLocalStorage } from 'node:async_hooks'
import { randomBytes } from 'node:crypto'
import { trace, type Context } from '@opentelemetry/api'
import type { SpanContextLike, SpanLike, SpanOptionsLike, TracerLike } from '@statewright/statedb'

export interface RecordedSpan {
  name: string
  parent: string | undefined
  attributes: Record<string, string | number | boolean>
  exceptions: string[]
  status: { code: number; message?: string } | undefined
  ended: boolean
  /** W3C ids: the trace's (the parent's, or new for a root span) and the span's own. */
  traceId: string
  spanId: string
  /** The parent's span id (the active span's, or the given Context's). */
  parentSpanId: string | undefined
  links: SpanContextLike[]
}

export class RecordingTracer implements TracerLike {
  readonly spans: RecordedSpan[] = []
  private readonly active = new AsyncLocalStorage<RecordedSpan>()

  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, options: SpanOptionsLike, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, options: SpanOptionsLike, context: unknown, fn: F): ReturnType<F>
  startActiveSpan(name: string, ...rest: unknown[]): unknown {
    const fn = rest[rest.length - 1] as (span: SpanLike) => unknown
    const options = (rest.length > 1 ? rest[0] : {}) as SpanOptionsLike
    const given = rest.length > 2 ? trace.getSpanContext(rest[1] as Context) : undefined
    const active = options.root ? undefined : this.active.getStore()
    const parent = given ? this.spans.find((s) => s.spanId === given.spanId) : active
    const rec: RecordedSpan = {
      name,
      parent: parent?.name,
      parentSpanId: given?.spanId ?? active?.spanId,
      links: (options.links ?? []).map((l) => l.context),
      traceId: given?.traceId ?? active?.traceId ?? randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      attributes: { ...options.attributes },
      exceptions: [],
      status: undefined,
      ended: false,
    }
    this.spans.push(rec)
    const span: SpanLike = {
      setAttribute: (k, v) => {
        rec.attributes[k] = v
      },
      recordException: (e) => {
        rec.exceptions.push(typeof e === 'string' ? e : e.message)
      },
      setStatus: (s) => {
        rec.status = s
      },
      isRecording: () => !rec.ended,
      end: () => {
        rec.ended = true
      },
      spanContext: () => ({ traceId: rec.traceId, spanId: rec.spanId, traceFlags: 1 }),
    }
    return this.active.run(rec, () => fn(span))
  }

  /** The spans named `name`. */
  named(name: string): RecordedSpan[] {
    return this.spans.filter((s) => s.name === name)
  }
}
