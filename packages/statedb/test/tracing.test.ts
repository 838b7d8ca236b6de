// The ground floor's tracing: inSpan without a tracer makes nothing; with a parent, the span is that
// parent's child through @opentelemetry/api's Context (the SDK reads it with trace.getSpanContext);
// links and a new trace go as SpanOptions; causes are remembered per object, weakly.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { trace, type Context } from '@opentelemetry/api'
import { causeOf, inSpan, rememberCause, type SpanLike, type SpanOptionsLike, type TracerLike } from '@statewright/statedb'

interface Started {
  name: string
  options: SpanOptionsLike | undefined
  parent: { traceId: string; spanId: string } | undefined
  ended: boolean
}

function tracer(): { t: TracerLike; started: Started[] } {
  const started: Started[] = []
  const t = {
    startActiveSpan(name: string, ...rest: unknown[]) {
      const fn = rest[rest.length - 1] as (s: SpanLike) => unknown
      const rec: Started = {
        name,
        options: rest.length > 1 ? (rest[0] as SpanOptionsLike) : undefined,
        parent: rest.length > 2 ? trace.getSpanContext(rest[1] as Context) : undefined,
        ended: false,
      }
      started.push(rec)
      const span: SpanLike = {
        setAttribute: () => undefined,
        recordException: () => undefined,
        setStatus: () => undefined,
        isRecording: () => true,
        end: () => void (rec.ended = true),
        spanContext: () => ({ traceId: 'a'.repeat(32), spanId: String(started.length).padStart(16, '0'), traceFlags: 1 }),
      }
      return fn(span)
    },
  } as TracerLike
  return { t, started }
}

test('no tracer: the function runs with no span', () => {
  assert.is(
    inSpan(undefined, 'x', (span) => (span === undefined ? 'none' : 'span')),
    'none',
  )
})

test('a parent: the span starts in a Context whose span is the parent; links and root go as options', async () => {
  const { t, started } = tracer()
  const parent = { traceId: 'b'.repeat(32), spanId: 'c'.repeat(16), traceFlags: 1 }
  const r = await inSpan(t, 'child', async () => 7, { parent, attributes: { k: 'v' } })
  assert.is(r, 7)
  assert.equal(started[0]!.parent?.spanId, parent.spanId)
  assert.equal(started[0]!.parent?.traceId, parent.traceId)
  assert.equal(started[0]!.options, { attributes: { k: 'v' } })
  assert.ok(started[0]!.ended)
  inSpan(t, 'event', () => undefined, { root: true, links: [{ context: parent }] })
  assert.equal(started[1]!.options, { root: true, links: [{ context: parent }] })
  assert.is(started[1]!.parent, undefined)
})

test('causes: remembered per object, none for others and for primitives', () => {
  const a = {}
  const b = {}
  assert.is(causeOf(a), undefined)
  rememberCause(a, { traceId: 't', spanId: 's' })
  rememberCause('x', { traceId: 't', spanId: 's' })
  rememberCause(b, undefined)
  assert.equal(causeOf(a), { traceId: 't', spanId: 's' })
  assert.is(causeOf(b), undefined)
  assert.is(causeOf('x'), undefined)
  assert.is(causeOf(null), undefined)
})

test.run()
