// The shared retry settings: one default, filled by resolveRetry and checked there; backoffDelay
// doubles from minMs, caps at maxMs and spreads by jitter without passing the cap.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { backoffDelay, ConfigError, DEFAULT_RETRY, resolveRetry } from '@statewright/statedb'

test('the one default: 100 ms doubling to 30 s, jitter 0.2', () => {
  assert.equal({ ...DEFAULT_RETRY }, { minMs: 100, maxMs: 30_000, jitter: 0.2 })
  assert.equal(resolveRetry(), { minMs: 100, maxMs: 30_000, jitter: 0.2 })
  assert.equal(resolveRetry({ maxMs: 500 }), { minMs: 100, maxMs: 500, jitter: 0.2 })
  assert.equal(resolveRetry({ jitter: 0 }), { minMs: 100, maxMs: 30_000, jitter: 0 })
  assert.ok(Object.isFrozen(DEFAULT_RETRY))
})

test('bad settings are a ConfigError naming the option and who took it', () => {
  assert.throws(
    () => resolveRetry({ minMs: 0 }),
    (e: unknown) => e instanceof ConfigError && /retry\.minMs/.test(e.message),
  )
  assert.throws(
    () => resolveRetry({ minMs: 500, maxMs: 100 }, 'reflector x'),
    (e: unknown) => e instanceof ConfigError && /^reflector x: retry\.minMs \(500\) is above/.test(e.message),
  )
  assert.throws(
    () => resolveRetry({ jitter: 1.5 }),
    (e: unknown) => e instanceof ConfigError && /retry\.jitter/.test(e.message),
  )
})

test('backoffDelay with the default: doubling, capped, jittered by at most ±20%, never past the cap', () => {
  const r = resolveRetry()
  const none = { ...r, jitter: 0 }
  assert.equal(
    [1, 2, 3, 4].map((n) => backoffDelay(n, none)),
    [100, 200, 400, 800],
  )
  assert.is(backoffDelay(5000, none), 30_000)
  assert.is(
    backoffDelay(1, r, () => 0),
    80,
  )
  assert.is(
    backoffDelay(1, r, () => 0.5),
    100,
  )
  assert.ok(Math.abs(backoffDelay(1, r, () => 0.999_999) - 120) < 0.01)
  assert.is(
    backoffDelay(5000, r, () => 0.999),
    30_000,
  )
})

test.run()
