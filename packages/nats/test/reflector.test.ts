// NatsKvReflector against a real nats-server (it must be installed: `apt-get install -y nats-server`;
// without it these tests fail and say so): initial values in one transaction, puts, deletes and
// purges, bad values, a missing bucket, connections cut by a TCP proxy, server restarts, and lost
// history forcing a relist.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { collectingLogger, type LogEntry } from '../../../test/lib/logger.ts'
import type { NatsConnection } from '@nats-io/transport-node'
import { DB } from '@statewright/statedb'
import { NatsKvReflector } from '@statewright/nats'
import type { KvWatchEntry } from '@nats-io/kv'
import type { PendingEvent } from '@statewright/statedb'
import { KvReflectedRows } from '../src/reflector-rows.ts'
import {
  TcpProxy,
  bucketContents,
  natsClient,
  openBucket,
  purgeStream,
  rowTable,
  sameContents,
  startNatsServer,
  tableContents,
  until,
  waitTable,
  type RunningNatsServer,
} from './helpers.ts'

let server: RunningNatsServer
let admin: NatsConnection

test.before(async () => {
  server = await startNatsServer()
  admin = await natsClient(server.url)
})

test.after(async () => {
  await admin?.close()
  await server?.stop()
})

test('initial values go into the table in one transaction that initializes it; puts, deletes and purges follow', async () => {
  const kv = await openBucket(admin, 'init')
  for (let i = 0; i < 50; i++) await kv.put(`k${i}`, JSON.stringify({ i }))
  await kv.delete('k3')
  const table = rowTable()
  const db = new DB({ tables: [table] })
  // count the transactions that touch the table until it is initialized
  let commits = 0
  let initializedAtCount = -1
  const r = new NatsKvReflector({ nc: admin, bucket: 'init', db, table })
  await r.start()
  void (async () => {
    let txn = db.readTxn()
    for (;;) {
      const [ready, w] = table.initialized(txn)
      if (ready) {
        initializedAtCount = table.count(txn)
        return
      }
      const [, all] = table.allWatch(txn)
      await Promise.race([w.wait(AbortSignal.timeout(5000)), all.wait(AbortSignal.timeout(5000))]).catch(() => {})
      txn = db.readTxn()
      if (table.count(txn) > 0 && !table.initialized(txn)[0]) commits++
    }
  })()
  await r.waitSynced(AbortSignal.timeout(5000))
  assert.is(initializedAtCount === -1 ? table.count(db.readTxn()) : initializedAtCount, 49)
  assert.is(commits, 0, 'no partial list was ever visible')
  await kv.put('k0', JSON.stringify({ i: 'changed' }))
  await kv.delete('k1')
  await kv.purge('k2')
  await kv.put('new', JSON.stringify({ n: 1 }))
  try {
    await waitTable(
      db,
      table,
      (t) => table.count(t) === 48 && (table.get(t, table.primary.query('k0'))?.value as any)?.i === 'changed',
      'updates',
    )
    // nats-server 2.9.10 may skip entries around the purge (gaps.test.ts): the reflector then finds
    // the gap and lists again, so the table reaches the bucket a little later
    const want = await bucketContents(kv)
    await waitTable(db, table, () => sameContents(tableContents(db, table), want), 'the table to equal the bucket')
    const h = r.health()
    assert.is(h.lists, 1 + h.relists)
    assert.is(h.relists, h.gaps, 'a list again only for a skipped entry')
    assert.is(h.ready, true)
    assert.ok(h.revision >= 54)
  } finally {
    await r.stop()
  }
})

test('a key put and deleted within one batch is a deletion for change iterators (its row written and deleted), and no row', async () => {
  const table = rowTable()
  const db = new DB({ tables: [table] })
  const rows = new KvReflectedRows({ nc: admin, bucket: 'b', db, table }, 'b', (err) => assert.unreachable(err.message))
  const entry = (key: string, revision: number, operation: 'PUT' | 'DEL' | 'PURGE', value?: unknown) =>
    ({
      bucket: 'b',
      key,
      revision,
      operation,
      value: new TextEncoder().encode(value === undefined ? '' : JSON.stringify(value)),
    }) as unknown as KvWatchEntry
  const batch = (...es: KvWatchEntry[]) =>
    new Map<string, PendingEvent<KvWatchEntry>>(es.map((e) => [e.key, { type: e.operation === 'PUT' ? 'upsert' : 'delete', object: e }]))
  await db.write(table, (txn) => rows.apply(txn, batch(entry('kept', 1, 'PUT', { n: 1 }))))
  const it = table.changes(db.readTxn())
  it.next(db.readTxn()) // what the table held
  // the batch's latest of `gone` is its DEL (its PUT coalesced away); `kept` is deleted as usual
  await db.write(table, (txn) => rows.apply(txn, batch(entry('gone', 2, 'DEL'), entry('kept', 3, 'PURGE'))))
  const changes = [...it.next(db.readTxn())[0]].map((c) => ({
    deleted: c.deleted,
    key: c.object.key,
    revision: c.object.revision,
    value: c.object.value,
  }))
  assert.equal(changes, [
    { deleted: true, key: 'gone', revision: 2, value: undefined },
    { deleted: true, key: 'kept', revision: 1, value: { n: 1 } },
  ])
  assert.is(table.count(db.readTxn()), 0)
  it.close()
})

test('an empty bucket initializes the table at once', async () => {
  await openBucket(admin, 'empty')
  const table = rowTable()
  const db = new DB({ tables: [table] })
  const r = new NatsKvReflector({ nc: admin, bucket: 'empty', db, table })
  await r.start()
  await r.waitSynced(AbortSignal.timeout(5000))
  assert.is(table.initialized(db.readTxn())[0], true)
  const kv = await openBucket(admin, 'empty')
  await kv.put('a', '{"x":1}')
  await waitTable(db, table, (t) => table.count(t) === 1, 'the first put')
  await r.stop()
})

test('a value that does not decode is an error naming bucket, key and revision; the reflector keeps running', async () => {
  const kv = await openBucket(admin, 'bad')
  await kv.put('good', '{"ok":true}')
  const badRev = await kv.put('broken', '{not json')
  const errors: string[] = []
  const table = rowTable()
  const db = new DB({ tables: [table] })
  const r = new NatsKvReflector({
    nc: admin,
    bucket: 'bad',
    db,
    table,
    logger: collectingLogger((e) => errors.push((e.fields.err as Error).message)),
  })
  await r.start()
  await r.waitSynced(AbortSignal.timeout(5000))
  assert.equal([...tableContents(db, table).keys()], ['good'])
  assert.is(errors.length, 1)
  assert.match(errors[0]!, `bucket "bad", key "broken", revision ${badRev}: cannot decode the value`)
  const rev2 = await kv.put('broken2', '[1,')
  await kv.put('after', '{"fine":1}')
  await waitTable(db, table, (t) => table.count(t) === 2, 'the entry after the bad one')
  assert.match(errors[1]!, `key "broken2", revision ${rev2}`)
  assert.is(r.health().errors, 2)
  assert.match(r.health().lastError!, 'broken2')
  await r.stop()
})

test('a missing bucket is retried with backoff and health says why; created later, it syncs', async () => {
  const table = rowTable()
  const db = new DB({ tables: [table] })
  const r = new NatsKvReflector({ nc: admin, bucket: 'later', db, table, retry: { minMs: 20, maxMs: 100 } })
  await r.start()
  await until(() => r.health().errors >= 3, 'three failed attempts')
  const h = r.health()
  assert.is(h.synced, false)
  assert.is(h.ready, false)
  assert.match(h.lastError!, 'bucket "later": bucket not found')
  assert.is(table.initialized(db.readTxn())[0], false)
  const kv = await openBucket(admin, 'later')
  await kv.put('x', '{"v":1}')
  await r.waitSynced(AbortSignal.timeout(5000))
  assert.is(table.count(db.readTxn()), 1)
  await r.stop()
})

test('connections cut by a proxy and a server restart while keys change: it resumes from the last revision + 1 and misses nothing', async () => {
  const srv = await startNatsServer()
  const proxy = await new TcpProxy(() => srv.port).start()
  const direct = await natsClient(srv.url)
  const nc = await natsClient(proxy.url)
  let r: NatsKvReflector | undefined
  try {
    const kv = await openBucket(direct, 'cut', 1)
    for (let i = 0; i < 20; i++) await kv.put(`k${i}`, JSON.stringify({ v: 0 }))
    const table = rowTable()
    const db = new DB({ tables: [table] })
    r = new NatsKvReflector({ nc, bucket: 'cut', db, table, retry: { minMs: 20, maxMs: 200 } })
    await r.start()
    await r.waitSynced(AbortSignal.timeout(5000))
    for (let round = 1; round <= 3; round++) {
      proxy.block()
      for (let i = 0; i < 20; i += round) await kv.put(`k${i}`, JSON.stringify({ v: round }))
      await kv.delete(`k${round}`)
      proxy.unblock()
      await waitTable(
        db,
        table,
        (t) => (table.get(t, table.primary.query('k0'))?.value as any)?.v === round && !table.get(t, table.primary.query(`k${round}`)),
        `round ${round} after a cut`,
      )
    }
    assert.ok(sameContents(tableContents(db, table), await bucketContents(kv)), 'the table equals the bucket after cuts')
    assert.is(r.health().relists, 0, 'no relist: the history was there')
    assert.ok(r.health().watches >= 4, 'watched again after each cut')

    // server restart on the same port and store, while keys change through the direct connection
    await srv.restart()
    let kv2 = kv
    await until(async () => {
      try {
        kv2 = await openBucket(direct, 'cut', 1)
        await kv2.put('k19', JSON.stringify({ v: 'restart' }))
        return true
      } catch {
        return false
      }
    }, 'the restarted server')
    await kv2.delete('k18')
    await waitTable(
      db,
      table,
      (t) => (table.get(t, table.primary.query('k19'))?.value as any)?.v === 'restart' && !table.get(t, table.primary.query('k18')),
      'changes after a restart',
    )
    assert.ok(sameContents(tableContents(db, table), await bucketContents(kv2)), 'the table equals the bucket after a restart')
    assert.is(r.health().relists, 0)
  } finally {
    await r?.stop()
    await nc.close()
    await direct.close()
    await proxy.stop()
    await srv.stop()
  }
})

test('history lost while disconnected (stream purged past the resume point): it relists and replaces the table in one transaction', async () => {
  const proxy = await new TcpProxy(() => server.port).start()
  const nc = await natsClient(proxy.url)
  try {
    const kv = await openBucket(admin, 'lost', 1)
    for (let i = 0; i < 10; i++) await kv.put(`k${i}`, JSON.stringify({ v: 0 }))
    const table = rowTable()
    const db = new DB({ tables: [table] })
    const r = new NatsKvReflector({ nc, bucket: 'lost', db, table, retry: { minMs: 20, maxMs: 200 } })
    await r.start()
    await r.waitSynced(AbortSignal.timeout(5000))
    proxy.block()
    await kv.delete('k1')
    await kv.delete('k2')
    await kv.put('k3', JSON.stringify({ v: 1 }))
    await purgeStream(admin, 'lost', 1) // the delete markers of k1 and k2 are gone
    await kv.put('k4', JSON.stringify({ v: 2 }))
    proxy.unblock()
    await until(() => r.health().relists === 1, 'a relist')
    await waitTable(
      db,
      table,
      (t) => !table.get(t, table.primary.query('k1')) && (table.get(t, table.primary.query('k4'))?.value as any)?.v === 2,
      'the relisted contents',
    )
    assert.ok(sameContents(tableContents(db, table), await bucketContents(kv)))
    assert.is(r.health().lists, 2)
    await r.stop()
  } finally {
    await nc.close()
    await proxy.stop()
  }
})

test('inactivityTimeoutMs (opt-in): a watch that delivers nothing that long is resumed from the last revision + 1, no relist; later puts arrive', async () => {
  const kv = await openBucket(admin, 'quiet')
  await kv.put('a', '{"v":1}')
  const table = rowTable()
  const db = new DB({ tables: [table] })
  const silent: LogEntry[] = []
  const logger = collectingLogger((e) => /watch silent/.test(e.msg ?? '') && silent.push(e))
  const r = new NatsKvReflector({ nc: admin, bucket: 'quiet', db, table, inactivityTimeoutMs: 200, logger })
  await r.start()
  try {
    await r.waitSynced(AbortSignal.timeout(5000))
    const rev = r.health().revision
    // a quiet bucket: the heartbeats do not reach the watch, so it is restarted (why it is opt-in)
    await until(() => r.health().inactivityRestarts >= 2, 'two restarts of the quiet watch', 30_000)
    assert.is(silent[0]?.fields.resumeFrom, rev)
    assert.is(silent[0]?.fields.bucket, 'quiet')
    await kv.put('b', '{"v":2}')
    await waitTable(db, table, (t) => table.count(t) === 2, 'the put after the restarts', 30_000)
    const h = r.health()
    assert.is(h.lists, 1, 'resumed, not relisted')
    assert.is(h.relists, 0)
    assert.ok(h.ready)
    await r.settled(AbortSignal.timeout(5000))
  } finally {
    await r.stop()
  }
  assert.ok(
    await r.settled().then(
      () => false,
      () => true,
    ),
    'settled() rejects once stopped',
  )
})

test.run()
