// An Update that leaves its clone unstorable (here: a unique-index conflict) fails that object, which
// is retried like any failure; the loop and every other object carry on.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { Reconciler, newStatusIndex, statusPending, waitForSettled, type Status } from '@statewright/reconciler'
import { until, within } from './helpers.ts'

interface Slot {
  readonly id: string
  readonly slot?: string
  readonly status: Status
}

test("a write-back refused by statedb becomes the object's error and is retried; the loop goes on", async () => {
  const byId = defineIndex<Slot, string>({ name: 'id', key: (o) => o.id, unique: true })
  const bySlot = defineIndex<Slot, string>({ name: 'slot', keys: (o) => (o.slot === undefined ? [] : [o.slot]), unique: true })
  const statusIndex = newStatusIndex<Slot>((o) => o.status)
  const table = new Table<Slot>({ name: 'slots', primary: byId, indexes: [bySlot, statusIndex] })
  const db = new DB({ tables: [table] })
  let updates = 0
  const rec = new Reconciler<Slot>({
    db,
    table,
    statusIndex,
    getObjectStatus: (o) => o.status,
    setObjectStatus: (o, status) => ({ ...o, status }),
    retry: { minMs: 1, maxMs: 4 },
    operations: {
      // Every object claims the same unique slot: only one can be stored with it.
      update: (o) => {
        updates++
        ;(o as { slot?: string }).slot = 'the-slot'
      },
      delete: () => {},
    },
  })
  rec.start()
  try {
    await db.write(table, (w) => {
      table.insert(w, { id: 'a', status: statusPending() })
      table.insert(w, { id: 'b', status: statusPending() })
    })
    await until(() => table.list(db.readTxn(), statusIndex.kind('error')).count() === 1, 3000, 'one object in error')
    const r = db.readTxn()
    const failed = table.list(r, statusIndex.kind('error')).toArray()[0]!
    assert.match(failed.status.error ?? '', /unique index "slot" already has key "the-slot"/)
    assert.is(failed.slot, undefined, 'the error status went onto the stored object, not the unstorable clone')
    assert.is(table.list(r, statusIndex.kind('done')).count(), 1)
    const before = updates
    await until(() => updates >= before + 2, 3000, 'the failed object to be retried')
    // Free the slot: the retried object takes it and is done.
    await db.write(table, (w) => table.delete(w, table.get(w, bySlot.query('the-slot'))!))
    await until(() => table.get(db.readTxn(), byId.query(failed.id))?.status.kind === 'done', 3000, 'the retried object to succeed')
    // The loop is alive: a new object is acted on (and fails on the taken slot, visibly).
    await db.write(table, (w) => table.insert(w, { id: 'c', status: statusPending() }))
    await until(() => table.get(db.readTxn(), byId.query('c'))?.status.kind === 'error', 3000, 'the new object to be reconciled')
    await until(() => rec.health().level === 'degraded', 3000, 'health to show the failure')
    assert.match(rec.health().message, /unique index "slot"/)
  } finally {
    await rec.stop()
  }
})

test.run()
