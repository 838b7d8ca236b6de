import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { collectingLogger } from '../../../test/lib/logger.ts'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { Reflector, type KubeObject, type ReflectorOptions } from '@statewright/k8s'
import { LineDecoder, parseEvent } from '../src/ndjson.ts'
import {
  WIDGET,
  waitFor,
  clusterFor,
  create,
  diffState,
  objectTable,
  patch,
  remove,
  sameState,
  serverState,
  startServer,
  tableState,
  waitTable,
  widget,
} from './helpers.ts'

test('initial sync, then adds, updates and deletes', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    server.control.seed({ apiVersion: 'example.com/v1', kind: 'Widget' }, 1234, { template: { spec: { size: 1 } } })
    const table = objectTable()
    const db = new DB({ tables: [table] })
    const r = new Reflector({ cluster, db, table, kind: { apiVersion: 'example.com/v1', kind: 'Widget' }, pageSize: 100 })
    await r.start()
    assert.is(table.initialized(db.readTxn())[0], false)
    await r.waitSynced(AbortSignal.timeout(10_000))
    assert.ok(table.initialized(db.readTxn())[0])
    assert.is(table.count(db.readTxn()), 1234)
    assert.ok(sameState(await serverState(cluster), tableState(db, table)))
    // list pages: 1234 / 100 -> 13 list requests
    assert.is(server.control.requestLog().filter((e) => !e.watch && e.query.limit === '100').length, 13)

    await create(cluster, widget('new-one', { size: 2 }))
    await patch(cluster, 'obj-0', { spec: { size: 3 } }) // seeded names are obj-<i>
    await remove(cluster, 'obj-5')
    const want = await serverState(cluster)
    await waitTable(db, table, () => sameState(want, tableState(db, table)), 'the table to follow the server')
    const h = r.health()
    assert.is(h.state, 'watching')
    assert.ok(h.synced)
    assert.ok(h.ready)
    assert.is(h.lists, 1)
    assert.is(h.objects, 1234)
    assert.ok(h.events >= 3, `events ${h.events}`)
    // the watch asked for bookmarks and a server-side timeout in [300, 600)
    const w = server.control.requestLog().find((e) => e.watch)!
    assert.is(w.query.allowWatchBookmarks, 'true')
    assert.ok(Number(w.query.timeoutSeconds) >= 300 && Number(w.query.timeoutSeconds) < 600)
    await r.stop()
    assert.is(r.health().state, 'stopped')
    assert.is(r.health().ready, false, 'a stopped reflector is not ready')
    void diffState
  } finally {
    await cluster.close()
    await server.stop()
  }
})

async function setup(opts: Parameters<typeof startServer>[0] = {}, ropts: Partial<ReflectorOptions> = {}) {
  const server = await startServer(opts)
  const cluster = clusterFor(server)
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const r = new Reflector({ cluster, db, table, kind: WIDGET, retry: { minMs: 20, maxMs: 200 }, ...ropts })
  const synced = () =>
    serverState(cluster).then((want) =>
      waitTable(db, table, () => sameState(want, tableState(db, table)), 'the table to equal the server').catch(() => {
        throw new Error(`table differs from server: ${diffState(want, tableState(db, table))}`)
      }),
    )
  const done = async () => {
    await r.stop()
    await cluster.close()
    await server.stop()
  }
  return { server, cluster, table, db, r, synced, done }
}

for (const asHttp of [false, true]) {
  test(`410 after compaction (${asHttp ? 'HTTP 410' : 'ERROR event'}): relist replaces the table atomically`, async () => {
    const t = await setup({ watchExpiredAsHttp410: asHttp })
    try {
      t.server.control.seed(WIDGET, 100)
      await t.r.start()
      await t.r.waitSynced(AbortSignal.timeout(5000))
      // Keep the reflector from watching while the world changes and history is forgotten.
      const unfail = t.server.control.fail({ watch: true, status: 500 })
      t.server.control.resetWatches()
      for (let i = 0; i < 10; i++) await remove(t.cluster, `obj-${i}`)
      for (let i = 0; i < 10; i++) await create(t.cluster, widget(`later-${i}`))
      await patch(t.cluster, 'obj-50', { spec: { size: 9 } })
      t.server.control.compact()
      // Watch every write to the table: the relist must land in one transaction.
      const revBefore = t.table.revision(t.db.readTxn())
      const seen: number[] = []
      let stop = false
      void (async () => {
        while (!stop) {
          const txn = t.db.readTxn()
          seen.push(t.table.count(txn))
          const [, w] = t.table.allWatch(txn)
          await w.wait(AbortSignal.timeout(5000)).catch(() => {})
        }
      })()
      unfail()
      await t.synced()
      stop = true
      assert.ok(t.r.health().relists >= 1, 'relisted')
      assert.is(t.r.health().lists, 2)
      // 100 before; the relist removed 10 and added 10 in one commit: nobody saw 90 or 110.
      assert.not.ok(
        seen.some((n) => n !== 100),
        `counts seen: ${seen}`,
      )
      assert.ok(t.table.revision(t.db.readTxn()) > revBefore)
      // unchanged objects were not rewritten by the relist: 10 deletes + 10 inserts + 1 update
      assert.is(t.table.revision(t.db.readTxn()) - revBefore, 21)
    } finally {
      await t.done()
    }
  })
}

test('recovers from 5xx lists, refused connections, 429 Retry-After, resets and delays with nothing lost', async () => {
  const errors: string[] = []
  const t = await setup({}, { logger: collectingLogger((e) => errors.push((e.fields.err as Error).message)) })
  try {
    t.server.control.seed(WIDGET, 300)
    const unfail = t.server.control.fail({ watch: false, method: 'GET', path: '/widgets', status: 500, count: 3 })
    await t.r.start()
    await t.r.waitSynced(AbortSignal.timeout(10_000))
    unfail()
    assert.ok(t.r.health().errors >= 3, `errors ${t.r.health().errors}`)
    assert.ok(
      errors.some((m) => m.includes('500')),
      errors.join('\n'),
    )
    let n = 0
    const writes = async (k: number) => {
      for (let i = 0; i < k; i++, n++) {
        if (n % 3 === 0) await create(t.cluster, widget(`w-${n}`, { n }))
        else if (n % 3 === 1) await patch(t.cluster, `obj-${n}`, { spec: { n } })
        else await remove(t.cluster, `obj-${n}`)
      }
    }
    const watching = () => waitFor(() => t.server.control.watchCount() === 1, 'the reflector to watch again')
    await writes(20)
    await watching()
    t.server.control.resetWatches()
    await writes(20)
    await watching()
    await t.server.control.refuseConnections(200)
    await writes(20)
    await watching()
    const unthrottle = t.server.control.fail({ watch: true, status: 429, retryAfterSeconds: 0.1, count: 2 })
    t.server.control.closeWatches()
    await writes(20)
    await watching()
    unthrottle()
    const undelay = t.server.control.delay({ watch: true, ms: 150, count: 2 })
    t.server.control.resetWatches()
    await writes(20)
    await watching()
    undelay()
    await t.synced()
    const h = t.r.health()
    assert.is(h.state, 'watching')
    assert.ok(
      h.watches >= 4,
      `watches ${h.watches} ${JSON.stringify(h)} ${JSON.stringify(
        t.server.control
          .requestLog()
          .filter((e) => e.method === 'GET')
          .map((e) => [e.status, e.watch, e.query.resourceVersion]),
      )} ${errors.join('\n')}`,
    )
  } finally {
    await t.done()
  }
})

test('retry: without the option a failing reflector backs off with the shared default, 100 ms doubling, jittered ±20%', async () => {
  const times: number[] = []
  const t = await setup({}, { retry: undefined, logger: collectingLogger(() => times.push(performance.now())) })
  const heal = t.server.control.fail({ status: 500 })
  try {
    await t.r.start()
    await waitFor(() => times.length >= 4, 'four failures')
    const gaps = times.slice(1, 4).map((x, i) => x - times[i]!)
    ;[100, 200, 400].forEach((want, i) => {
      assert.ok(gaps[i]! >= want * 0.8 - 2 && gaps[i]! <= want * 1.2 + 60, `gap ${i} is ${gaps[i]!.toFixed(1)} ms, want ${want} ±20%`)
    })
    const h = t.r.health()
    assert.is(h.state, 'backoff')
    assert.is(h.level, 'degraded', 'failing lists make the shared health level degraded')
    assert.match(h.message, /500/)
  } finally {
    heal()
    await t.done()
  }
  assert.is(t.r.health().level, 'stopped')
})

test('readiness: lost while the watch cannot be re-established, back once it is; a routine watch restart keeps it', async () => {
  const t = await setup({}, { retry: { minMs: 20, maxMs: 50 }, lostAfterMs: 300 })
  try {
    await t.r.start()
    await t.r.waitSynced(AbortSignal.timeout(5000))
    await waitFor(() => t.r.health().ready && t.server.control.watchCount() === 1, 'ready and watching')
    await create(t.cluster, widget('w1', { size: 1 }))
    await waitTable(t.db, t.table, (txn) => t.table.count(txn) === 1, 'the watch to deliver an event')
    const states: boolean[] = []
    const sample = setInterval(() => states.push(t.r.health().ready), 1)
    t.server.control.closeWatches() // a routine end of a watch that delivered: it resumes from its resourceVersion
    await waitFor(() => t.server.control.watchCount() === 1 && t.r.health().watches >= 2, 'the watch to resume')
    clearInterval(sample)
    assert.ok(states.every(Boolean), 'ready through a routine watch restart')
    const heal = t.server.control.fail({ watch: true, status: 500 })
    t.server.control.closeWatches()
    await waitFor(() => !t.r.health().ready, 'unready while the watch fails')
    // the state cycles between backoff and the next attempt; what stays is the error that lost it
    assert.ok(['backoff', 'watching', 'listing'].includes(t.r.health().state), t.r.health().state)
    assert.match(t.r.health().lastError ?? '', /500/)
    heal()
    await waitFor(() => t.r.health().ready, 'ready again')
  } finally {
    await t.done()
  }
})

test("readiness: an object whose transform throws is that object's error, never a lost watch", async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const errors: string[] = []
  const r = new Reflector({
    cluster,
    db,
    table,
    kind: WIDGET,
    lostAfterMs: 100,
    logger: collectingLogger((e) => errors.push((e.fields.err as Error).message)),
    transform: (o: any) => {
      if (o.metadata.name === 'bad') throw new Error('cannot transform')
      return o
    },
  })
  try {
    await r.start()
    await r.waitSynced(AbortSignal.timeout(5000))
    await create(cluster, widget('bad', { size: 1 }))
    await create(cluster, widget('good', { size: 1 }))
    await waitTable(db, table, (txn) => table.count(txn) === 1, 'good arrives')
    assert.ok(
      errors.some((m) => m.includes('cannot transform')),
      'the object error is reported',
    )
    await new Promise((res) => setTimeout(res, 250)) // past lostAfterMs: the threshold itself is what is tested
    assert.ok(r.health().ready, JSON.stringify(r.health()))
  } finally {
    await r.stop()
    await cluster.close()
    await server.stop()
  }
})

test('state-of-world mode: periodic full relists, no watch', async () => {
  const t = await setup({}, { stateOfWorld: { intervalMs: 50 } })
  try {
    t.server.control.seed(WIDGET, 20)
    await t.r.start()
    await t.r.waitSynced(AbortSignal.timeout(5000))
    await remove(t.cluster, 'obj-3')
    await create(t.cluster, widget('fresh'))
    await t.synced()
    assert.ok(t.r.health().lists >= 2)
    assert.is(t.server.control.requestLog().filter((e) => e.watch).length, 0)
  } finally {
    await t.done()
  }
})

test('namespace and label selector; transform to several objects drops stale outputs', async () => {
  interface Port {
    id: string
    widget: string
    port: number
  }
  const server = await startServer()
  const cluster = clusterFor(server)
  const byId = defineIndex<Port, string>({ name: 'id', key: (p) => p.id, unique: true })
  const ports = new Table<Port>({ name: 'ports', primary: byId })
  const db = new DB({ tables: [ports] })
  const r = new Reflector<Port>({
    cluster,
    db,
    table: ports,
    kind: WIDGET,
    namespace: 'default',
    labelSelector: 'team=a',
    key: (p) => p.id,
    transform: (w) =>
      ((w.spec as any)?.ports ?? []).map((port: number) => ({ id: `${w.metadata.name}:${port}`, widget: String(w.metadata.name), port })),
  })
  const ids = () =>
    ports
      .all(db.readTxn())
      .toArray()
      .map((p) => p.id)
      .sort()
      .join(',')
  try {
    await cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } },
    })
    await create(cluster, widget('a', { ports: [80, 443] }, { team: 'a' }))
    await create(cluster, widget('b', { ports: [22] }, { team: 'b' }))
    await create(cluster, widget('c', { ports: [8080] }, { team: 'a' }, 'other'))
    await r.start()
    await r.waitSynced(AbortSignal.timeout(5000))
    assert.is(ids(), 'a:443,a:80')
    await patch(cluster, 'a', { spec: { ports: [443, 8443] } })
    await waitTable(db, ports, () => ids() === 'a:443,a:8443', 'stale output a:80 to go')
    await create(cluster, widget('d', { ports: [1] }, { team: 'a' }))
    await waitTable(db, ports, () => ids() === 'a:443,a:8443,d:1', 'd:1')
    await remove(cluster, 'a')
    await waitTable(db, ports, () => ids() === 'd:1', 'a to go')
    // a relist rebuilds outputs and removes stale ones too
    server.control.compact()
    await patch(cluster, 'd', { spec: { ports: [2] } })
    server.control.resetWatches()
    await waitTable(db, ports, () => ids() === 'd:2', 'd:2')
  } finally {
    await r.stop()
    await cluster.close()
    await server.stop()
  }
})

test('field selector, and merge into existing objects', async () => {
  const t = await setup(
    {},
    {
      fieldSelector: 'metadata.name!=hidden',
      merge: (old, obj) => ({ ...obj, metadata: { ...obj.metadata, annotations: { ...(old.metadata.annotations ?? {}), seen: 'yes' } } }),
    },
  )
  try {
    await create(t.cluster, widget('shown', { v: 1 }))
    await create(t.cluster, widget('hidden', { v: 1 }))
    await t.r.start()
    await t.r.waitSynced(AbortSignal.timeout(5000))
    assert.equal(
      t.table
        .all(t.db.readTxn())
        .toArray()
        .map((o) => o.metadata.name),
      ['shown'],
    )
    await patch(t.cluster, 'shown', { spec: { v: 2 } })
    await waitTable(t.db, t.table, (x) => (t.table.all(x).first()?.spec as any)?.v === 2, 'v2')
    assert.is(t.table.all(t.db.readTxn()).first()!.metadata.annotations?.seen, 'yes')
  } finally {
    await t.done()
  }
})

test('an object created and deleted within one batch (ADDED and DELETED coalesced) is a deletion for change iterators, and no row; with a transform too', async () => {
  interface Port {
    id: string
    widget: string
  }
  const server = await startServer()
  const cluster = clusterFor(server)
  const widgets = objectTable()
  const ports = new Table<Port>({ name: 'ports', primary: defineIndex<Port, string>({ name: 'id', key: (p) => p.id, unique: true }) })
  const db = new DB({ tables: [widgets, ports] })
  // a batch is written when it holds two objects (or at stop), never by its delay
  const held = { batchSize: 2, batchDelayMs: 600_000, retry: { minMs: 20, maxMs: 200 } }
  const plain = new Reflector({ cluster, db, table: widgets, kind: WIDGET, ...held })
  const transformed = new Reflector<Port>({
    cluster,
    db,
    table: ports,
    kind: WIDGET,
    key: (p) => p.id,
    transform: (w) => ({ id: `port-of-${w.metadata.name}`, widget: String(w.metadata.name) }),
    ...held,
  })
  try {
    await plain.start()
    await transformed.start()
    await plain.waitSynced(AbortSignal.timeout(5000))
    await transformed.waitSynced(AbortSignal.timeout(5000))
    const wIter = widgets.changes(db.readTxn())
    const pIter = ports.changes(db.readTxn())
    await create(cluster, widget('ghost', { size: 1 }))
    await remove(cluster, 'ghost')
    await create(cluster, widget('sentinel', { size: 2 })) // the second object of the batch: it is written
    await waitTable(db, [widgets, ports], (txn) => widgets.count(txn) === 1 && ports.count(txn) === 1, 'the sentinel in both tables')
    const txn = db.readTxn()
    const seen = (changes: Iterable<{ object: unknown; deleted: boolean }>, name: (o: any) => string) =>
      [...changes].map((c) => `${c.deleted ? 'deleted' : 'written'} ${name(c.object)}`)
    assert.equal(
      seen(wIter.next(txn)[0], (o: KubeObject) => String(o.metadata.name)),
      ['deleted ghost', 'written sentinel'],
    )
    assert.equal(
      seen(pIter.next(txn)[0], (o: Port) => o.id),
      ['deleted port-of-ghost', 'written port-of-sentinel'],
    )
    assert.equal(
      widgets
        .all(txn)
        .toArray()
        .map((o) => o.metadata.name),
      ['sentinel'],
    )
    assert.equal(
      ports
        .all(txn)
        .toArray()
        .map((o) => o.id),
      ['port-of-sentinel'],
    )
    wIter.close()
    pIter.close()
  } finally {
    await plain.stop()
    await transformed.stop()
    await cluster.close()
    await server.stop()
  }
})

test('a burst of watch events is written in a few bounded transactions', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const table = objectTable()
  let commits = 0
  const db = new DB({
    tables: [table],
    metrics: {
      writeTxnCommitted: () => {
        commits++
      },
    },
  })
  const r = new Reflector({ cluster, db, table, kind: WIDGET, batchSize: 100, batchDelayMs: 20 })
  try {
    await r.start()
    await r.waitSynced(AbortSignal.timeout(5000))
    const before = commits
    server.control.seed(WIDGET, 1000) // 1000 ADDED events in one burst
    await waitTable(db, table, (x) => table.count(x) === 1000, '1000 widgets')
    const txns = commits - before
    assert.ok(txns >= 10 && txns <= 40, `${txns} write transactions for 1000 events (batches of at most 100)`)
  } finally {
    await r.stop()
    await cluster.close()
    await server.stop()
  }
})

test('a logger that throws does not stop the reflector', async () => {
  const calls: string[] = []
  const t = await setup(
    {},
    {
      retry: { minMs: 10, maxMs: 50 },
      logger: collectingLogger((e) => {
        calls.push((e.fields.err as Error).message)
        throw new Error('a buggy logger')
      }),
      transform: (obj) => {
        if (obj.metadata.name === 'bad') throw new Error('cannot transform')
        return obj
      },
    },
  )
  try {
    const removeFault = t.server.control.fail({ path: '/widgets', watch: false, status: 500, count: 3 })
    await t.r.start()
    await t.r.waitSynced(AbortSignal.timeout(10_000))
    removeFault()
    assert.ok(calls.length >= 1, 'the failed lists were logged')
    // a failed transform reports from inside a batch write: that batch and later ones still land
    await create(t.cluster, widget('bad'))
    await create(t.cluster, widget('good'))
    await waitTable(t.db, t.table, (txn) => t.table.count(txn) === 1, 'the watch to keep working')
    await create(t.cluster, widget('later'))
    await waitTable(t.db, t.table, (txn) => t.table.count(txn) === 2, 'later batches to land')
    assert.ok(calls.some((m) => /transform of Widget.example.com default\/bad failed/.test(m)))
  } finally {
    await t.done()
  }
})

test('NDJSON lines split anywhere, even inside a UTF-8 character', () => {
  const text =
    '{"type":"ADDED","object":{"metadata":{"name":"é€"}}}\n\n{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}\n{"type":"DELETED","object":{}}'
  const bytes = Buffer.from(text)
  for (let cut = 1; cut < bytes.length; cut += 3) {
    const d = new LineDecoder()
    const lines = [...d.push(bytes.subarray(0, cut)), ...d.push(bytes.subarray(cut)), ...d.end()]
    assert.equal(
      lines.map((l) => parseEvent(l).type),
      ['ADDED', 'BOOKMARK', 'DELETED'],
    )
    assert.is(parseEvent(lines[0]).object.metadata.name, 'é€')
  }
  assert.throws(() => parseEvent('{"type":1}'), /not a watch event/)
  assert.throws(() => parseEvent('nope'), /bad JSON/)
})

test('refresh: a consistent list replaces the cache, even while the watch lags; it resolves only once that list is in the table', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    server.control.seed({ apiVersion: 'example.com/v1', kind: 'Widget' }, 20, { template: { spec: { size: 1 } } })
    const table = objectTable()
    const db = new DB({ tables: [table] })
    const r = new Reflector({ cluster, db, table, kind: { apiVersion: 'example.com/v1', kind: 'Widget' } })
    await r.start()
    await r.waitSynced(AbortSignal.timeout(10_000))
    // the watch lags: its reconnection is held by the server (a starved or slow stream)
    const off = server.control.delay({ watch: true, ms: 60_000 })
    server.control.closeWatches()
    await create(cluster, widget('late', { size: 2 }))
    await patch(cluster, 'obj-0', { spec: { size: 9 } })
    await remove(cluster, 'obj-5')
    const want = await serverState(cluster)
    assert.not.ok(sameState(want, tableState(db, table)), 'the cache lags behind the server')
    const lists = r.health().lists
    await r.refresh(AbortSignal.timeout(10_000))
    assert.ok(sameState(want, tableState(db, table)), diffState(want, tableState(db, table)))
    assert.is(r.health().lists, lists + 1)
    // callers in the same turn share one list
    await Promise.all([r.refresh(), r.refresh()])
    assert.is(r.health().lists, lists + 2)
    // a refresh that cannot list (the server refuses lists) rejects on its signal, leaving the table as it was
    const fail = server.control.fail({ watch: false, method: 'GET', path: /widgets/ })
    assert.ok(await rejected(r.refresh(AbortSignal.timeout(300))))
    fail()
    off()
    await r.stop()
    assert.ok(await rejected(r.refresh()), 'a stopped reflector never refreshes')
  } finally {
    await cluster.close()
    await server.stop()
  }
})

// issue 36 bug 5; follows client-go's reflector tests of a too large resource version (it relists
// on "Too large resource version"): a server restarted on the same port has its history back at 1,
// so the reflector's version is one the server does not have yet. It comes back by relisting.
test('a server restarted on the same port (history back at the start): the reflector relists and the table equals the new server', async () => {
  let server = await startServer({ tls: false })
  const port = server.port
  const cluster = clusterFor(server)
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const r = new Reflector({ cluster, db, table, kind: WIDGET, retry: { minMs: 20, maxMs: 200 } })
  try {
    server.control.seed(WIDGET, 30)
    for (let i = 0; i < 30; i++) await patch(cluster, `obj-${i}`, { spec: { round: 1 } })
    await r.start()
    await r.waitSynced(AbortSignal.timeout(10_000))
    const relists = r.health().relists
    const before = Number(r.health().resourceVersion)
    await server.stop()
    server = await startServer({ tls: false, port })
    server.control.seed(WIDGET, 5, { template: { spec: { fresh: true } } })
    const want = await serverState(cluster)
    assert.ok(server.control.resourceVersion() < before, 'the new server is behind the version the reflector holds')
    await waitTable(db, table, () => sameState(want, tableState(db, table)), 'the table to equal the restarted server')
    assert.ok(r.health().relists > relists, `by a relist: ${JSON.stringify(r.health())}`)
  } finally {
    await r.stop()
    await cluster.close()
    await server.stop()
  }
})

const rejected = (p: Promise<unknown>) =>
  p.then(
    () => false,
    () => true,
  )

test.run()
