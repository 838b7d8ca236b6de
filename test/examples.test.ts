// The documented examples run and say what the docs say they say.

import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { tour } from '../examples/statedb-tour.ts'
import { main as natsPrimary } from '../examples/nats-primary.ts'

test('the statedb tour (docs/statedb.md) runs and shows snapshots, watches, changes, CAS and initialization', async () => {
  const lines: string[] = []
  await tour((l) => lines.push(l))
  assert.equal(lines, [
    'todo: groceries, taxes',
    'watch fired; old snapshot still has 2 memos, new one 1',
    'change r3: upserted taxes',
    'change r4: deleted groceries',
    'compare-and-swap: first true, second (stale revision) revisionChanged',
    'written since revision 4: taxes',
    'initialized: before false, after true',
  ])
})

test('the NATS primary example (docs/nats.md) shows ConfigMaps, ErrResourceExists, orphan GC and a server restart', async () => {
  const lines: string[] = []
  const r = await natsPrimary((l) => lines.push(l))
  assert.equal(r, { configMaps: ['app-api', 'app-shop', 'app-web-front'], garbage: 1, foreignWarnings: 1 })
  assert.ok(
    lines.some((l) =>
      l.includes('ErrResourceExists: shop: Resource "default/app-shop" already exists and is not managed by this controller'),
    ),
    lines.join('\n'),
  )
  assert.ok(
    lines.some((l) => l.includes('nats-server restarted')),
    lines.join('\n'),
  )
})

test.run()
