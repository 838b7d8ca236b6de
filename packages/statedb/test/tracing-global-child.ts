// Child of tracing-global.test.ts (a fresh process, so nothing else has loaded @opentelemetry/api):
// prints what the default tracer did before and after a tracer provider is registered.
import { createRequire } from 'node:module'
import { inSpan, resolveTracer, type SpanLike, type TracerLike } from '@statewright/statedb'

const require = createRequire(import.meta.url)
const apiLoaded = () => Object.keys(require.cache).some((k) => k.includes('@opentelemetry'))
const tracer = resolveTracer(undefined, 'test')
const before = inSpan(tracer, 'a', (span) => ({ recording: span?.isRecording(), ctx: span?.spanContext?.(), loaded: apiLoaded() }))

const { trace } = require('@opentelemetry/api') as typeof import('@opentelemetry/api')
const names: string[] = []
const recording: SpanLike = {
  setAttribute: () => recording,
  recordException: () => {},
  setStatus: () => recording,
  isRecording: () => true,
  end: () => {},
}
const mine = {
  startActiveSpan: (name: string, ...rest: unknown[]) => (names.push(name), (rest[rest.length - 1] as (s: SpanLike) => unknown)(recording)),
} as TracerLike
trace.setGlobalTracerProvider({ getTracer: () => mine as never })
const after = inSpan(tracer, 'b', (span) => span?.isRecording())
console.log(JSON.stringify({ tracer: tracer !== undefined, before, after, names }))
