// Write transactions: locks, async writers, errors (each checks its message), validation mode,
// inspection.

import fc from 'fast-check'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, defineIndex, dump, httpHandler, Query, Table, setValidation, type WriteTxn } from '../src/index.ts'

interface Obj {
  id: string
  n: number
  alias?: string
}
const byId = defineIndex<Obj, string>({ name: 'id', key: (o) => o.id, unique: true })
const byAlias = defineIndex<Obj, string>({ name: 'alias', keys: (o) => (o.alias ? [o.alias] : []), unique: true })

function setup(n = 3) {
  const tables = Array.from({ length: n }, (_, i) => new Table<Obj>({ name: `t${i}`, primary: byId, indexes: [byAlias] }))
  return { db: new DB({ tables }), tables }
}

test('many async writers with random interleavings: no lost update, no deadlock', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          tables: fc.uniqueArray(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }),
          yields: fc.integer({ min: 0, max: 3 }),
        }),
        {
          minLength: 2,
          maxLength: 12,
        },
      ),
      async (writers) => {
        const { db, tables } = setup()
        let inside = new Set<number>()
        await Promise.all(
          writers.map(async (w, i) => {
            const txn = await db.writeTxn(w.tables.map((t) => tables[t]!))
            for (const t of w.tables) {
              assert.not.ok(inside.has(t), `two writers inside table t${t}`)
              inside.add(t)
            }
            for (let y = 0; y < w.yields; y++) await Promise.resolve()
            for (const t of w.tables) {
              const table = tables[t]!
              const cur = table.get(txn, byId.query('counter'))?.n ?? 0
              await Promise.resolve() // read-modify-write across an await: the lock must hold
              table.insert(txn, { id: 'counter', n: cur + 1 })
              table.insert(txn, { id: `w${i}`, n: i })
            }
            for (const t of w.tables) inside.delete(t)
            txn.commit()
          }),
        )
        const r = db.readTxn()
        for (let t = 0; t < 3; t++) {
          const expected = writers.filter((w) => w.tables.includes(t)).length
          assert.is(tables[t]!.get(r, byId.query('counter'))?.n ?? 0, expected, `t${t}: every increment kept`)
        }
        inside = new Set()
      },
    ),
    { numRuns: 100 },
  )
})

test('waiting writers are served in arrival order; tryWriteTxn does not wait', async () => {
  const { db, tables } = setup(1)
  const t = tables[0]!
  const first = await db.writeTxn(t)
  assert.is(db.tryWriteTxn(t), undefined)
  const order: number[] = []
  const waiters = [1, 2, 3].map((i) =>
    db.writeTxn(t).then((txn) => {
      order.push(i)
      t.insert(txn, { id: `w${i}`, n: i })
      txn.commit()
    }),
  )
  first.commit()
  await Promise.all(waiters)
  assert.equal(order, [1, 2, 3])
  assert.ok(db.tryWriteTxn(t), 'free again')
})

test('errors name the table, index and key', async () => {
  const { db, tables } = setup(2)
  const [a, b] = tables as [Table<Obj>, Table<Obj>]
  const txn = await db.writeTxn(a)
  a.insert(txn, { id: 'x', n: 1, alias: 'same' })
  assert.throws(
    () => a.insert(txn, { id: 'y', n: 1, alias: 'same' }),
    (e: Error) => e.message === 'table "t0": unique index "alias" already has key "same" (held by object "x"; inserting object "y")',
  )
  assert.is(a.get(txn, byId.query('y')), undefined, 'the failed insert left nothing behind')
  assert.throws(() => b.insert(txn, { id: 'z', n: 1 }), /table "t1" is not locked by this write transaction \(declared: t0\)/)
  assert.throws(() => a.list(txn, new Query<Obj>('nope', 'k')).toArray(), /table "t0" has no index "nope" \(indexes: id, alias, revision\)/)
  txn.commit()
  assert.throws(() => a.insert(txn, { id: 'w', n: 1 }), /write transaction already committed \(used on table "t0"\)/)
  assert.throws(() => txn.commit(), /write transaction already committed/)
  const bad = defineIndex<Obj, string>({ name: 'bad', key: (o) => (o as any).missing })
  const t2 = new Table<Obj>({ name: 'keys', primary: byId, indexes: [bad] })
  db.register(t2)
  await db.write(t2, (w: WriteTxn) => {
    assert.throws(
      () => t2.insert(w, { id: 'q', n: 1 }),
      /table "keys", index "bad": cannot key object "q": unsupported key part of type undefined/,
    )
  })
  assert.throws(() => new Table<Obj>({ name: '9bad', primary: byId }), /invalid table name "9bad"/)
  assert.throws(() => defineIndex<Obj, string>({ name: 'has space', key: (o) => o.id }), /invalid index name "has space"/)
  assert.throws(() => defineIndex<Obj, string>({ name: 'revision', key: (o) => o.id }), /reserved/)
  assert.throws(() => db.register(new Table<Obj>({ name: 't0', primary: byId })), /a table named "t0" is already registered/)
  const stranger = new Table<Obj>({ name: 'stranger', primary: byId })
  assert.throws(() => stranger.get(db.readTxn(), byId.query('x')), /table "stranger" is not registered with this database/)
})

test('validation mode freezes stored objects: mutating one throws', async () => {
  setValidation(true)
  try {
    const { db, tables } = setup(1)
    const t = tables[0]!
    const obj = { id: 'x', n: 1 }
    await db.write(t, (w) => t.insert(w, obj))
    assert.throws(() => {
      ;(obj as { n: number }).n = 2
    }, TypeError)
  } finally {
    setValidation(false)
  }
})

test('dump and the read-only HTTP handler', async () => {
  interface Secretish {
    id: string
    kind: string
    data?: Record<string, string>
  }
  const sid = defineIndex<Secretish, string>({ name: 'id', key: (o) => o.id, unique: true })
  const kinds = defineIndex<Secretish, string>({ name: 'kind', key: (o) => o.kind })
  const t = new Table<Secretish>({ name: 'things', primary: sid, indexes: [kinds] })
  const db = new DB({ tables: [t] })
  await db.write(t, (w) => {
    t.insert(w, { id: 'cm', kind: 'ConfigMap', data: { a: 'b' } })
    t.insert(w, { id: 's', kind: 'Secret', data: { password: 'hunter2' } })
  })
  const d = dump(db) as any
  assert.is(d.things.objects.length, 2)
  assert.not.ok(JSON.stringify(d).includes('hunter2'), 'secret data is redacted')
  const server = createServer(httpHandler(db))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    const tablesList: any = await (await fetch(`${base}/tables`)).json()
    assert.equal(
      tablesList.map((x: any) => [x.name, x.objects, x.revision]),
      [['things', 2, 2]],
    )
    const byKind: any = await (await fetch(`${base}/tables/things?index=kind&key=ConfigMap`)).json()
    assert.equal(
      byKind.map((e: any) => e.object.id),
      ['cm'],
    )
    const got = await fetch(`${base}/tables/things?index=id&key=nope&op=get`)
    assert.is(got.status, 404)
    const badIndex = await fetch(`${base}/tables/things?index=zzz&key=a`)
    assert.is(badIndex.status, 400)
    assert.match(((await badIndex.json()) as any).error, /has no index "zzz"/)
    assert.is((await fetch(`${base}/tables/things`, { method: 'DELETE' })).status, 405)
    const all = await (await fetch(`${base}/tables/things`)).text()
    assert.not.ok(all.includes('hunter2'))
    // stream changes: the current objects, then a live insert
    const ac = new AbortController()
    const res = await fetch(`${base}/tables/things/changes`, { signal: ac.signal })
    const reader = res.body!.getReader()
    let text = ''
    const readUntil = async (n: number) => {
      while (text.split('\n').filter(Boolean).length < n) text += new TextDecoder().decode((await reader.read()).value)
    }
    await readUntil(2)
    await db.write(t, (w) => t.insert(w, { id: 'late', kind: 'ConfigMap' }))
    await readUntil(3)
    const lines = text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
    assert.equal(
      lines.map((l) => l.object.id),
      ['cm', 's', 'late'],
    )
    ac.abort()
    await reader.cancel().catch(() => {})
    for (let i = 0; i < 50 && db.stats()[0]!.changeIterators > 0; i++) await new Promise((r) => setTimeout(r, 10))
    assert.is(db.stats()[0]!.changeIterators, 0, 'the stream closed its iterator')
  } finally {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  }
})

test('metrics hooks see commits and aborts', async () => {
  const seen: string[] = []
  const t = new Table<Obj>({ name: 'm', primary: byId })
  const db = new DB({
    tables: [t],
    metrics: {
      writeTxnCommitted: (i) => seen.push(`commit ${i.tables.join(',')} ${i.durationSeconds >= 0}`),
      writeTxnAborted: (i) => seen.push(`abort ${i.tables.join(',')}`),
    },
  })
  await db.write(t, (w) => t.insert(w, { id: 'a', n: 1 }))
  const w = await db.writeTxn(t)
  w.abort()
  assert.equal(seen, ['commit m true', 'abort m'])
})

test('a snapshot taken before a table was registered sees it empty', async () => {
  const { db } = setup(1)
  const before = db.readTxn()
  const late = new Table<Obj>({ name: 'late', primary: byId })
  db.register(late)
  await db.write(late, (w) => late.insert(w, { id: 'x', n: 1 }))
  assert.is(late.count(before), 0)
  assert.is(late.get(before, byId.query('x')), undefined)
  assert.is(late.count(db.readTxn()), 1)
})

test.run()
