// Results.reverse(): the same results as the ascending scan, in the opposite order, for every query
// form (property tests over random tables; the reverse tree iterator crosses leaves and branches).

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { byRevision, DB, defineIndex, Table } from '../src/index.ts'

interface Obj {
  id: string | number
  tag: string
  alias: string
}
const byId = defineIndex<Obj, string | number>({ name: 'id', key: (o) => o.id, unique: true })
const byTag = defineIndex<Obj, string>({ name: 'tag', key: (o) => o.tag })
const byAlias = defineIndex<Obj, string>({ name: 'alias', key: (o) => o.alias, unique: true })

const idArb = fc.oneof(fc.string({ maxLength: 3, unit: fc.constantFrom('a', 'b', 'c', '\uffff') }), fc.integer({ min: -5, max: 500 }))

test('reverse() yields the ascending results backwards: all, prefix, lowerBound, revisions, non-unique lists', () => {
  fc.assert(
    fc.property(
      fc.array(idArb, { maxLength: 400 }),
      fc.array(fc.constantFrom('', 'a', 'ab', 'b', '\uffff'), { minLength: 1, maxLength: 4 }),
      (ids, probes) => {
        const t = new Table<Obj>({ name: 't', primary: byId, indexes: [byTag, byAlias] })
        const db = new DB({ tables: [t] })
        const w = db.tryWriteTxn(t)!
        ids.forEach((id, i) => t.insert(w, { id, tag: i % 3 ? 'x' : 'y', alias: `al${String(id)}` }))
        const txn = w.commit()
        const back = (r: { reverse(): Iterable<Obj> } & Iterable<Obj>) => {
          const fwd = [...r].map((o) => o.id)
          const rev = [...r.reverse()].map((o) => o.id)
          assert.equal(rev, fwd.reverse())
        }
        back(t.all(txn))
        back(t.lowerBound(txn, byRevision(0)))
        back(t.lowerBound(txn, byRevision(Math.floor(ids.length / 2))))
        back(t.list(txn, byTag.query('x')))
        back(t.prefix(txn, byTag.query('')))
        for (const p of probes) {
          back(t.prefix(txn, byId.query(p)))
          back(t.lowerBound(txn, byId.query(p)))
          back(t.prefix(txn, byAlias.query(`al${p}`)))
          back(t.lowerBound(txn, byAlias.query(`al${p}`)))
        }
        back(t.lowerBound(txn, byId.query(250)))
        back(t.prefix(txn, byId.query(7)))
      },
    ),
    { numRuns: 150 },
  )
})

test('reverse of the revision index: newest write first', async () => {
  const t = new Table<Obj>({ name: 't', primary: byId, indexes: [byTag] })
  const db = new DB({ tables: [t] })
  for (const id of ['b', 'a', 'c', 'a']) await db.write(t, (w) => t.insert(w, { id, tag: '', alias: id }))
  assert.equal(
    [...t.lowerBound(db.readTxn(), byRevision(0)).reverse()].map((o) => o.id),
    ['a', 'c', 'b'],
  )
})

test.run()
