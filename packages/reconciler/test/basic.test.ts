import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { waitForSettled } from '@statewright/reconciler'
import { byId, setup, within } from './helpers.ts'

test('inserts reach the target and are marked done; deletes remove them', async () => {
  const s = setup()
  s.rec.start()
  try {
    await s.insert('a', 1)
    const rev = await s.insert('b', 2)
    await s.rec.waitForRevision(rev, { signal: within(2000) })
    assert.equal(
      [...s.target.state],
      [
        ['a', 1],
        ['b', 2],
      ],
    )
    const errs = await waitForSettled(s.db, s.table, s.statusIndex, { signal: within(2000) })
    assert.equal(errs, [])
    const a = s.table.get(s.db.readTxn(), byId.query('a'))
    assert.is(a?.status.kind, 'done')
    assert.is(a?.realizedAt, 1, 'mutation of the clone is kept')
    const rev2 = await s.remove('a')
    await s.rec.waitForRevision(rev2, { signal: within(2000) })
    assert.equal([...s.target.state], [['b', 2]])
  } finally {
    await s.rec.stop()
  }
})

test.run()
