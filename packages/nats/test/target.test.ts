// NatsKvTarget, KvSecondaries and KvStatusWriter against a real nats-server: CAS put that rereads on
// conflict and never loses an update, create-if-absent, delete and prune only of what carries our
// owner label, ownership checks, status write-back by CAS.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { NatsConnection } from '@nats-io/transport-node'
import { DB } from '@statewright/statedb'
import { Reconciler, waitForSettled } from '@statewright/reconciler'
import { KvSecondaries, KvStatusWriter, NatsKvTarget, desiredKv, isCasConflict, newDesiredKvTable } from '@statewright/nats'
import { bucketContents, natsClient, openBucket, startNatsServer, type RunningNatsServer } from './helpers.ts'

let server: RunningNatsServer
let nc: NatsConnection

test.before(async () => {
  server = await startNatsServer()
  nc = await natsClient(server.url)
})

test.after(async () => {
  await nc?.close()
  await server?.stop()
})

const get = async (kv: Awaited<ReturnType<typeof openBucket>>, k: string) => {
  const e = await kv.get(k)
  return e && e.operation === 'PUT' ? JSON.parse(new TextDecoder().decode(e.value)) : undefined
}

test('a reconciler drives a bucket: create, CAS update, delete; prune removes only our keys', async () => {
  const kv = await openBucket(nc, 't1')
  await kv.put('foreign', JSON.stringify({ spec: 'theirs' }))
  await kv.put('stale-ours', JSON.stringify({ metadata: { labels: { 'statewright.io/owner': 'me' } }, spec: 1 }))
  const want = newDesiredKvTable<{ spec: number }>()
  const db = new DB({ tables: [want.table] })
  const target = new NatsKvTarget<{ spec: number }>({ kv, owner: 'me' })
  const r = new Reconciler({
    db,
    table: want.table,
    statusIndex: want.statusIndex,
    retry: { minMs: 10, maxMs: 100 },
    getObjectStatus: (d) => d.status,
    setObjectStatus: (d, status) => ({ ...d, status }),
    operations: target.operations,
    batchOperations: target.batchOperations,
  })
  await r.start()
  await db.write(want.table, (t) => {
    for (let i = 0; i < 5; i++) want.table.insert(t, desiredKv(`k${i}`, { spec: i }))
  })
  assert.equal(await waitForSettled(db, want.table, want.statusIndex), [])
  assert.equal((await get(kv, 'k3')).metadata.labels, { 'statewright.io/owner': 'me' })
  await db.write(want.table, (t) => {
    want.table.insert(t, desiredKv('k3', { spec: 33 }))
    want.table.delete(t, { key: 'k4' } as never)
  })
  assert.equal(await waitForSettled(db, want.table, want.statusIndex), [])
  assert.is((await get(kv, 'k3')).spec, 33)
  assert.is(await get(kv, 'k4'), undefined)
  await r.triggerFullReconciliation()
  const contents = await bucketContents(kv)
  assert.equal([...contents.keys()].sort(), ['foreign', 'k0', 'k1', 'k2', 'k3'], 'prune removed stale-ours, kept foreign')
  assert.is(target.stats.pruned, 1)
  await r.stop()
})

test('a CAS conflict rereads and retries: concurrent writers never lose an update', async () => {
  const kv = await openBucket(nc, 't2')
  const target = new NatsKvTarget<{ spec: number }>({ kv, owner: 'me', maxAttempts: 50 })
  await target.put('x', { spec: 0 })
  // someone else writes behind the target's back: its remembered revision is stale
  await kv.put('x', JSON.stringify({ metadata: { labels: { 'statewright.io/owner': 'me' } }, spec: -1 }))
  assert.is(await target.put('x', { spec: 1 }), true)
  assert.is((await get(kv, 'x')).spec, 1, 'the stale revision was detected, reread, and the put applied')
  assert.ok(target.stats.conflicts >= 1)
  // many concurrent CAS increments through KvStatusWriter-style read-modify-write: none lost
  const status = new KvStatusWriter({ kv, maxAttempts: 100 })
  await kv.put('counter', JSON.stringify({ spec: {}, status: { n: 0 } }))
  const inc = async () => {
    for (;;) {
      const e = (await kv.get('counter'))! // value and revision from one read
      const cur = JSON.parse(new TextDecoder().decode(e.value))
      try {
        await kv.update('counter', JSON.stringify({ ...cur, status: { n: cur.status.n + 1 } }), e.revision)
        return
      } catch (err) {
        if (!isCasConflict(err)) throw err
      }
    }
  }
  await Promise.all(Array.from({ length: 20 }, inc))
  assert.is((await get(kv, 'counter')).status.n, 20)
  assert.is(await status.writeStatus({ key: 'counter' }, { n: 20 }), false, 'an equal status writes nothing')
  assert.is(await status.writeStatus({ key: 'counter' }, { n: 21, ok: true }), true)
  assert.equal(await get(kv, 'counter'), { spec: {}, status: { n: 21, ok: true } })
})

test('KvSecondaries: creates, updates ours, never touches a foreign key, deletes only ours', async () => {
  const kv = await openBucket(nc, 't3')
  const sec = new KvSecondaries({ kv, kind: 'Cfg' })
  const mine = (e: { value: any }) => e.value?.metadata?.annotations?.owner === 'p1'
  const stamped = sec.withStamps({ key: 'a', value: { data: 1 } }, { labels: { l: 'p1' }, annotations: { owner: 'p1' } })
  assert.equal(await sec.apply(stamped, mine), { result: 'created', version: '1' })
  assert.equal((await sec.apply(stamped, mine)).result, 'unchanged')
  assert.equal((await sec.apply({ ...stamped, value: { ...(stamped.value as object), data: 2 } }, mine)).result, 'updated')
  await kv.put('b', JSON.stringify({ data: 'theirs' }))
  assert.equal((await sec.apply({ key: 'b', value: { data: 3, metadata: { annotations: { owner: 'p1' } } } }, mine)).result, 'foreign')
  assert.equal(await get(kv, 'b'), { data: 'theirs' })
  await kv.put('c', '{broken')
  assert.equal((await sec.apply({ key: 'c', value: {} }, mine)).result, 'foreign', 'a value that is not JSON is not ours')
  assert.is(await sec.delete({ key: 'b', value: {} }, mine), false)
  assert.is(await sec.delete({ key: 'a', value: {} }, mine), true)
  assert.is(await get(kv, 'a'), undefined)
  assert.throws(
    () => sec.withStamps({ key: 'd', value: 'a string' }, { labels: {}, annotations: {} }),
    /bucket "t3", key "d": the value must be a JSON object/,
  )
})

test.run()
