// resolveTracer's default, @opentelemetry/api's global tracer, when the API is installed: the API is
// loaded at the first span once a tracer provider is registered, not before; until then a span
// records nothing (the API's invalid context), as the API's own tracer does without a provider.
// In a child process (./tracing-global-child.ts), so that nothing else has loaded the API.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { test } from 'uvu'
import * as assert from 'uvu/assert'

test('the global tracer: no API loaded and nothing recorded without a provider; the provider once registered', () => {
  const child = fileURLToPath(new URL('./tracing-global-child.ts', import.meta.url))
  const r = spawnSync(process.execPath, ['--conditions=@statewright/source', '--import', 'tsx', child], { encoding: 'utf8' })
  assert.is(r.status, 0, r.stderr)
  assert.equal(JSON.parse(r.stdout), {
    tracer: true,
    before: { recording: false, ctx: { traceId: '0'.repeat(32), spanId: '0'.repeat(16) }, loaded: false },
    after: true,
    names: ['b'],
  })
})

test.run()
