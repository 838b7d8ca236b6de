import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB } from '@statewright/statedb'
import { Reflector } from '@statewright/k8s'
import { WIDGET, clusterFor, create, diffState, objectTable, patch, remove, sameState, serverState, startServer, tableState, waitTable, widget } from './helpers.ts'

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
    assert.is(h.lists, 1)
    assert.is(h.objects, 1234)
    assert.ok(h.events >= 3, `events ${h.events}`)
    // the watch asked for bookmarks and a server-side timeout in [300, 600)
    const w = server.control.requestLog().find((e) => e.watch)!
    assert.is(w.query.allowWatchBookmarks, 'true')
    assert.ok(Number(w.query.timeoutSeconds) >= 300 && Number(w.query.timeoutSeconds) < 600)
    await r.stop()
    assert.is(r.health().state, 'stopped')
    void diffState
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test.run()
