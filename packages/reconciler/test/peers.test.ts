// The one optional-peer loader: undefined (or a ConfigError naming the package and the install
// command) when the package is missing; the module when it is installed.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { ConfigError } from '@statewright/reconciler'
import { loadOptionalPeer, requireOptionalPeer } from '@statewright/statedb'

const MISSING = 'statewright-no-such-peer'

test('a missing peer: undefined from loadOptionalPeer, a ConfigError with the install command from requireOptionalPeer', () => {
  assert.is(loadOptionalPeer(MISSING), undefined)
  try {
    requireOptionalPeer(MISSING, 'Something', { range: '^1.2.3', instead: 'or leave it unset' })
    assert.unreachable('should throw')
  } catch (err) {
    assert.instance(err, ConfigError)
    assert.is(
      (err as Error).message,
      `Something needs ${MISSING}, an optional peer dependency that is not installed. Install it with: npm install ${MISSING}@^1.2.3 (or leave it unset)`,
    )
  }
})

test('an installed peer is loaded, resolved from the caller', () => {
  const prom = loadOptionalPeer<{ Registry: unknown }>('prom-client', { from: import.meta.url })
  assert.type(prom?.Registry, 'function')
  assert.is(requireOptionalPeer('prom-client', 'test'), prom)
})

test("parts: those modules of the peer alone, under the main module's names; the main module when one is not there", () => {
  const main = loadOptionalPeer<Record<string, unknown>>('prom-client', { from: import.meta.url })!
  const parts = { Registry: 'lib/registry', Counter: 'lib/counter' }
  const some = loadOptionalPeer<Record<string, unknown>>('prom-client', { from: import.meta.url, parts })!
  assert.equal(Object.keys(some).sort(), ['Counter', 'Registry'])
  assert.is(some.Counter, main.Counter) // the same module, not a copy
  assert.is(some.Registry, main.Registry)
  const other = loadOptionalPeer('prom-client', { from: import.meta.url, parts: { Counter: 'lib/no-such-file' } })
  assert.is(other, main, "another version's layout: the main module")
  assert.is(loadOptionalPeer(MISSING, { parts }), undefined)
  assert.throws(
    () => requireOptionalPeer(MISSING, 'Something', { parts }),
    (err: unknown) => err instanceof ConfigError,
  )
})

test.run()
