// Soak: writers change Widgets and desired ConfigMaps while faults of every kind come and go; once
// the faults stop, the reflected table must equal the server and the server must hold exactly the
// desired ConfigMaps. Short by default; K8S_SOAK_SECONDS=300 runs it for five minutes.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB } from '@statewright/statedb'
import { DriftWatcher, Reflector, Target, desired, newDesiredTable, targetReconciler, type KubeObject } from '@statewright/k8s'
import { WIDGET, clusterFor, diffState, objectTable, sameState, serverState, startServer, tableState, waitFor, widget } from './helpers.ts'

const SECONDS = Number(process.env.K8S_SOAK_SECONDS ?? 3)
const CM = { apiVersion: 'v1', kind: 'ConfigMap' }

test(`soak: ${SECONDS}s of random faults, nothing lost`, async () => {
  const server = await startServer({ seed: 7, historySize: 200 })
  const cluster = clusterFor(server, { qps: 500, burst: 100 })
  const writer = clusterFor(server) // the "other users" of the cluster
  const widgets = objectTable('widgets')
  const observed = objectTable('observed')
  const d = newDesiredTable()
  const db = new DB({ tables: [widgets, d.table, observed] })
  const reflector = new Reflector({ cluster, db, table: widgets, kind: WIDGET, retry: { minMs: 10, maxMs: 300 }, watchTimeoutSeconds: 2 })
  const cmReflector = new Reflector({
    cluster,
    db,
    table: observed,
    kind: CM,
    labelSelector: 'statewright.io/owner=soak',
    retry: { minMs: 10, maxMs: 300 },
  })
  const target = new Target({ clusters: cluster, fieldManager: 'soak', kinds: [CM] })
  const rec = targetReconciler(db, d, target, { retry: { minMs: 10, maxMs: 300, jitter: 0.3 } })
  const drift = new DriftWatcher({ db, observed, desired: d })
  let rand = 12345
  const rnd = (n: number) => (rand = (rand * 1103515245 + 12345) >>> 0) % n
  let stop = false
  const faults: string[] = []
  try {
    server.control.seed(WIDGET, 200)
    await reflector.start()
    await cmReflector.start()
    rec.start()
    drift.start()
    const quiet = async (fn: () => Promise<unknown>) => {
      try {
        await fn()
      } catch {
        /* faults */
      }
    }
    const writers = (async () => {
      while (!stop) {
        const i = rnd(300)
        const op = rnd(4)
        if (op === 0)
          await quiet(() =>
            writer.request({ method: 'POST', path: '/apis/example.com/v1/namespaces/default/widgets', body: widget(`obj-${i}`, { i }) }),
          )
        else if (op === 1)
          await quiet(() => writer.request({ method: 'DELETE', path: `/apis/example.com/v1/namespaces/default/widgets/obj-${i}` }))
        else if (op === 2)
          await quiet(() =>
            writer.request({
              method: 'PATCH',
              path: `/apis/example.com/v1/namespaces/default/widgets/obj-${i}`,
              body: { spec: { v: rnd(1000) } },
              contentType: 'application/merge-patch+json',
            }),
          )
        else {
          const cm: KubeObject = {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `cm-${i % 50}`, namespace: 'default' },
            data: { v: String(rnd(1000)) },
          }
          await db.write(d.table, (w) => {
            if (rnd(5) === 0) d.table.delete(w, desired(cm))
            else d.table.insert(w, desired(cm))
          })
          if (rnd(10) === 0)
            await quiet(() => writer.request({ method: 'DELETE', path: `/api/v1/namespaces/default/configmaps/cm-${i % 50}` }))
        }
        await new Promise((r) => setTimeout(r, 2))
      }
    })()
    const end = Date.now() + SECONDS * 1000
    while (Date.now() < end) {
      const f = rnd(7)
      faults.push(['reset', 'close', 'compact', '5xx', 'refuse', '429', 'delay'][f])
      if (f === 0) server.control.resetWatches()
      else if (f === 1) server.control.closeWatches()
      else if (f === 2) {
        server.control.compact()
        server.control.resetWatches()
      } else if (f === 3) {
        const off = server.control.fail({ ratio: 0.3, status: 500 })
        setTimeout(off, 150)
      } else if (f === 4) await server.control.refuseConnections(100)
      else if (f === 5) {
        const off = server.control.fail({ ratio: 0.3, status: 429, retryAfterSeconds: 0.05 })
        setTimeout(off, 150)
      } else {
        const off = server.control.delay({ ratio: 0.5, ms: 50 })
        setTimeout(off, 150)
      }
      await new Promise((r) => setTimeout(r, 100 + rnd(200)))
    }
    stop = true
    await writers
    server.control.clearFaults()
    // Faults over: everything converges.
    const want = await serverState(writer)
    await waitFor(
      () => sameState(want, tableState(db, widgets)),
      `widgets to converge (${diffState(want, tableState(db, widgets))})`,
      20_000,
    ).catch((e) => {
      throw new Error(`${e.message}: ${diffState(want, tableState(db, widgets))}; health ${JSON.stringify(reflector.health())}`)
    })
    await waitFor(
      () => d.table.list(db.readTxn(), d.statusIndex.kind('done')).count() === d.table.count(db.readTxn()),
      'desired all done',
      20_000,
    )
    await rec.triggerFullReconciliation() // prune what deletes under faults left behind (retried deletes too)
    await waitFor(
      async () => {
        const cms = await serverState(writer, '/api/v1/namespaces/default/configmaps', 'statewright.io/owner=soak')
        const txn = db.readTxn()
        const desiredNames = d.table
          .all(txn)
          .toArray()
          .map((x) => `default/${x.object.metadata.name}`)
          .sort()
        if (desiredNames.join() !== [...cms.keys()].sort().join()) return false
        for (const x of d.table.all(txn)) {
          const live = server.control.get(CM, String(x.object.metadata.name), 'default')
          if (live?.data?.v !== (x.object as any).data.v) return false
        }
        return true
      },
      'ConfigMaps to equal the desired ones',
      20_000,
    )
    const h = reflector.health()
    assert.ok(h.errors > 0, 'faults were seen')
    assert.ok(h.events > 0)
  } finally {
    stop = true
    await drift.stop()
    await rec.stop()
    await reflector.stop()
    await cmReflector.stop()
    await cluster.close()
    await writer.close()
    await server.stop()
  }
})

test.run()
