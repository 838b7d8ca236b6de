// The reflector core (src/reflector/): the Batcher it writes watch events with. Its sessions,
// resume, relist and inactivity bound are tested with a fake source below, and through both
// sources in packages/k8s/test/reflector.test.ts and packages/nats/test/reflector.test.ts.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Batcher } from '../src/reflector/batch.ts'

test('Batcher coalesces by key, flushes by size and by delay, in order', async () => {
  const batches: Array<Array<[string, string]>> = []
  const b = new Batcher<number>(3, 20, async (m) => {
    batches.push([...m].map(([k, p]) => [k, `${p.type}:${p.object}`]))
  })
  b.add('a', { type: 'upsert', object: 1 })
  b.add('a', { type: 'delete', object: 2 })
  b.add('b', { type: 'upsert', object: 3 })
  assert.is(b.length, 2)
  await b.add('c', { type: 'upsert', object: 4 })
  assert.equal(batches, [
    [
      ['a', 'delete:2'],
      ['b', 'upsert:3'],
      ['c', 'upsert:4'],
    ],
  ])
  b.add('d', { type: 'upsert', object: 5 })
  await new Promise((r) => setTimeout(r, 60))
  assert.equal(batches[1], [['d', 'upsert:5']])
  b.add('e', { type: 'upsert', object: 6 })
  await b.discard()
  await b.flush()
  assert.is(batches.length, 2)
})

test.run()
