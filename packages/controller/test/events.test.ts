// Coalescing of state-of-world events, against a model: whatever happened to an object between two
// runs, the one event says where it was before and where it is now (existed before and now: update;
// only now: create; only before: delete; neither: nothing), also when a failed run gives its events back.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { PendingEvents } from '../src/stateofworld/events.ts'

const obj = (name: string, v: number) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'd' },
  data: { v: String(v) },
})

test('randomized: one event per object, from its state at the last take to its state now', () => {
  const op = fc.record({ name: fc.constantFrom('a', 'b', 'c'), del: fc.boolean(), take: fc.nat(4), fail: fc.boolean() })
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const q = new PendingEvents()
      const now = new Map<string, number>() // the model: current versions
      let before = new Map<string, number>() // versions at the last take
      let v = 0
      const check = (events: ReturnType<PendingEvents['take']>) => {
        const got = new Map(events.map((e) => [(e.new ?? e.old)!.metadata.name!, e]))
        for (const name of new Set([...before.keys(), ...now.keys(), ...got.keys()])) {
          const b = before.get(name)
          const n = now.get(name)
          const e = got.get(name)
          const want = b === undefined ? (n === undefined ? undefined : 'create') : n === undefined ? 'delete' : 'update'
          if (want === 'update' && b === n) {
            assert.ok(!e || e.type === 'update')
            continue
          }
          assert.is(e?.type, want, `${name}: before ${b}, now ${n}`)
          if (e?.new) assert.is((e.new as any).data.v, String(n))
          if (e?.old) assert.is((e.old as any).data.v, String(b))
        }
      }
      for (const o of ops) {
        if (o.del) {
          if (now.has(o.name)) {
            q.add('ConfigMap', '', obj(o.name, now.get(o.name)!), true)
            now.delete(o.name)
          }
        } else {
          v++
          now.set(o.name, v)
          q.add('ConfigMap', '', obj(o.name, v), false)
        }
        if (o.take === 0) {
          const events = q.take()
          if (o.fail) {
            q.restore(events)
            continue
          } // a failed run: nothing was consumed
          check(events)
          before = new Map(now)
        }
      }
      check(q.take())
    }),
    { numRuns: 500 },
  )
})

test('a delete of an object never seen (written and deleted between two reads) is no event', () => {
  const q = new PendingEvents()
  q.add('ConfigMap', '', obj('ghost', 1), true)
  assert.equal(q.take(), [])
})

test.run()
