// The inspection handler's pages (limit/after with the next key in a header) and a change stream that
// starts after a page's revision (since=) and says when its backlog is sent: what a viewer of a
// 100 000-object table needs to show one page and follow it live.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DB, Table, defineIndex, httpHandler } from '../src/index.ts'

interface Obj {
  name: string
  color: string
}
const byName = defineIndex<Obj, string>({ name: 'name', key: (o) => o.name, unique: true })
const byColor = defineIndex<Obj, string>({ name: 'color', key: (o) => o.color })

async function fixture(n: number) {
  const t = new Table<Obj>({ name: 'objs', primary: byName, indexes: [byColor] })
  const db = new DB({ tables: [t] })
  await db.write(t, (w) => {
    for (let i = 0; i < n; i++) t.insert(w, { name: `o${String(i).padStart(3, '0')}`, color: i % 2 ? 'red' : 'blue' })
  })
  const server = createServer(httpHandler(db, { annotate: (_t, o) => ({ note: (o as Obj).color.length }) }))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    db,
    t,
    base,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

test('pages: limit and continue walk the whole table once, in key order, with the count and revision', async () => {
  const f = await fixture(25)
  try {
    const seen: string[] = []
    let token: string | null = null
    for (let pages = 0; pages < 10; pages++) {
      const r: Response = await fetch(`${f.base}/tables/objs?limit=10${token ? `&continue=${token}` : ''}`)
      assert.is(r.headers.get('x-statedb-count'), '25')
      assert.is(r.headers.get('x-statedb-revision'), String(f.t.revision(f.db.readTxn())))
      const body = (await r.json()) as Array<{ key: string; note: number; object: Obj }>
      for (const e of body) {
        assert.is(e.key, e.object.name)
        assert.is(e.note, e.object.color.length, 'annotated')
      }
      seen.push(...body.map((e) => e.key))
      token = r.headers.get('x-statedb-continue')
      if (token === null) break
    }
    assert.equal(
      seen,
      Array.from({ length: 25 }, (_, i) => `o${String(i).padStart(3, '0')}`),
    )
    // a page after a key that was deleted meanwhile starts at the next one
    await f.db.write(f.t, (w) => {
      f.t.delete(w, { name: 'o005', color: 'red' })
    })
    const r = (await (await fetch(`${f.base}/tables/objs?limit=2&after=o005`)).json()) as Array<{ key: string }>
    assert.equal(
      r.map((e) => e.key),
      ['o006', 'o007'],
    )
    // an index query pages too
    const red = await fetch(`${f.base}/tables/objs?index=color&key=red&limit=3&after=o003`)
    assert.equal(
      ((await red.json()) as Array<{ key: string }>).map((e) => e.key),
      ['o007', 'o009', 'o011'],
    )
    assert.is(Buffer.from(red.headers.get('x-statedb-continue')!, 'base64url').toString(), 'o011')
    assert.is((await fetch(`${f.base}/tables/objs?limit=0`)).status, 400)
    await f.db.write(f.t, (w) => {
      f.t.deleteAll(w)
    })
    const empty = await fetch(`${f.base}/tables/objs?limit=2&after=o001`)
    assert.equal([empty.status, await empty.json(), empty.headers.get('x-statedb-count')], [200, [], '0'], 'an empty table: an empty page')
  } finally {
    await f.close()
  }
})

test('changes?since=R: only what was written after R, a sync line, then live changes and deletes', async () => {
  const f = await fixture(5)
  const ctl = new AbortController()
  try {
    const since = f.t.revision(f.db.readTxn())
    await f.db.write(f.t, (w) => {
      f.t.insert(w, { name: 'late', color: 'green' })
    })
    const res = await fetch(`${f.base}/tables/objs/changes?since=${since}`, { signal: ctl.signal })
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let buf = ''
    const lines: any[] = []
    const until = async (pred: () => boolean) => {
      const deadline = Date.now() + 5000
      while (!pred()) {
        assert.ok(Date.now() < deadline, `timed out; lines: ${JSON.stringify(lines)}`)
        const { value, done } = await reader.read()
        if (done) break
        buf += value
        let i
        while ((i = buf.indexOf('\n')) >= 0) {
          lines.push(JSON.parse(buf.slice(0, i)))
          buf = buf.slice(i + 1)
        }
      }
    }
    await until(() => lines.some((l) => l.sync))
    assert.equal(
      lines.map((l) => (l.sync ? 'sync' : l.key)),
      ['late', 'sync'],
      'the backlog holds only what came after since',
    )
    await f.db.write(f.t, (w) => {
      f.t.delete(w, { name: 'o001', color: 'red' })
    })
    await until(() => lines.length >= 3)
    assert.equal({ key: lines[2].key, deleted: lines[2].deleted, note: lines[2].note }, { key: 'o001', deleted: true, note: 3 })
    assert.is((await fetch(`${f.base}/tables/objs/changes?since=x`)).status, 400)
  } finally {
    ctl.abort()
    await f.close()
  }
})

test('revision times: an entry carries when it was written (within 100 ms); old revisions have none', async () => {
  const f = await fixture(1)
  try {
    const before = Date.now()
    await f.db.write(f.t, (w) => {
      f.t.insert(w, { name: 'new', color: 'x' })
    })
    const after = Date.now()
    const [e] = (await (await fetch(`${f.base}/tables/objs?index=name&key=new`)).json()) as Array<{ time: number }>
    assert.ok(e!.time >= before - 100 && e!.time <= after, `time ${e!.time} in [${before - 100}, ${after}]`)
    assert.is(f.t.revisionTime(10_000), undefined, 'a revision not written yet')
  } finally {
    await f.close()
  }
})

test('the revision clock keeps 4096 windows and forgets older revisions', async () => {
  const { RevisionClock } = await import('../src/clock.ts')
  const c = new RevisionClock()
  for (let i = 1; i <= 5000; i++) c.mark(i * 2, i * 1000)
  assert.is(c.timeOf(10_000), 5_000_000)
  assert.is(c.timeOf(9_999), 5_000_000, 'a revision between two samples belongs to the later window')
  assert.is(c.timeOf(2 * 904), undefined, 'dropped')
  assert.is(c.timeOf(2 * 906), 906_000)
  c.mark(10_001, 5_000_050)
  assert.is(c.timeOf(10_001), 5_000_000, 'the same 100 ms window')
  // while it grows (its arrays start small and double): every sample kept, in order
  const g = new RevisionClock()
  for (let i = 1; i <= 100; i++) {
    g.mark(i * 2, i * 1000)
    for (const j of [1, i >> 1, i]) if (j > 0) assert.is(g.timeOf(j * 2), j * 1000, `${j} of ${i}`)
  }
})

test('the revision index is queried like any other: get by revision, lowerBound in revision order, a bad key is 400', async () => {
  const f = await fixture(5)
  try {
    await f.db.write(f.t, (w) => f.t.insert(w, { name: 'o001', color: 'green' })) // o001 is now the newest write
    const newest = f.t.revision(f.db.readTxn())
    let r = await fetch(`${f.base}/tables/objs?index=revision&key=${newest}&op=get`)
    assert.is(r.status, 200)
    assert.is(((await r.json()) as { object: Obj }).object.name, 'o001')
    r = await fetch(`${f.base}/tables/objs?index=revision&key=0&op=lowerBound`)
    assert.is(r.status, 200)
    const text = await r.text()
    const names = (JSON.parse(text) as Array<{ object: Obj }>).map((e) => e.object.name)
    assert.equal(names, ['o000', 'o002', 'o003', 'o004', 'o001'], 'in revision order')
    r = await fetch(`${f.base}/tables/objs?index=revision&key=abc`)
    assert.is(r.status, 400)
    assert.match(await r.text(), /the revision index takes a revision/)
    r = await fetch(`${f.base}/tables/objs?index=nope&key=1`)
    assert.match(await r.text(), /indexes: name, color, revision/)
  } finally {
    await f.close()
  }
})

test.run()
