// A tracer that keeps its spans in memory, of the OpenTelemetry API's shape (startActiveSpan, and the
// Span methods statewright calls): what the tests read spans from, with no SDK. A span's parent is
// the span active where it started (AsyncLocalStorage, as the SDK's context manager does).
import { AsyncLocalStorage } from 'node:async_hooks'
import { randomBytes } from 'node:crypto'
import type { SpanLike, TracerLike } from '@statewright/statedb'

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
}

export class RecordingTracer implements TracerLike {
  readonly spans: RecordedSpan[] = []
  private readonly active = new AsyncLocalStorage<RecordedSpan>()

  startActiveSpan<F extends (span: SpanLike) => unknown>(name: string, fn: F): ReturnType<F> {
    const parent = this.active.getStore()
    const rec: RecordedSpan = {
      name,
      parent: parent?.name,
      traceId: parent?.traceId ?? randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      attributes: {},
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
      spanContext: () => ({ traceId: rec.traceId, spanId: rec.spanId }),
    }
    return this.active.run(rec, () => fn(span)) as ReturnType<F>
  }
}
