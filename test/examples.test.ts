// The documented examples run and say what the docs say they say.

import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { tour } from '../examples/statedb-tour.ts'

test('the statedb tour (docs/statedb.md) runs and shows snapshots, watches, changes, CAS and initialization', async () => {
  const lines: string[] = []
  await tour((l) => lines.push(l))
  assert.equal(lines, [
    'todo: groceries, taxes',
    'watch fired; old snapshot still has 2 memos, new one 1',
    'change r3: upserted taxes',
    'change r4: deleted groceries',
    'compare-and-swap: first true, second (stale revision) false',
    'written since revision 4: taxes',
    'initialized: before false, after true',
  ])
})

test.run()
