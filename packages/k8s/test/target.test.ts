import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB } from '@statewright/statedb'
import { waitForSettled } from '@statewright/reconciler'
import { DriftWatcher, Reflector, Target, desired, newDesiredTable, targetReconciler, type KubeObject } from '@statewright/k8s'
import { clusterFor, objectTable, startServer, waitFor, waitTable } from './helpers.ts'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const cmPath = (name: string, ns = 'default') => `/api/v1/namespaces/${ns}/configmaps/${name}`
function configMap(name: string, data: Record<string, string>, ns = 'default'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data }
}

async function setup(targetOpts: Partial<ConstructorParameters<typeof Target>[0]> = {}, clusterOpts = {}) {
  const server = await startServer()
  const cluster = clusterFor(server, clusterOpts)
  const d = newDesiredTable()
  const db = new DB({ tables: [d.table] })
  const target = new Target({ clusters: cluster, fieldManager: 'test-controller', kinds: [CM], ...targetOpts })
  const rec = targetReconciler(db, d, target, { retry: { minMs: 20, maxMs: 200 } })
  const put = (...objs: KubeObject[]) =>
    db.write(d.table, (t) => {
      for (const o of objs) d.table.insert(t, desired(o))
    })
  const del = (...objs: KubeObject[]) =>
    db.write(d.table, (t) => {
      for (const o of objs) d.table.delete(t, desired(o))
    })
  const settled = async () => {
    const errs = await waitForSettled(db, d.table, d.statusIndex, { signal: AbortSignal.timeout(10_000) })
    assert.equal(
      errs.map((e) => e.status.error),
      [],
    )
  }
  const allDone = (n: number) =>
    waitTable(db, d.table, (t) => d.table.list(t, d.statusIndex.kind('done')).count() === n, `${n} objects done`)
  const get = (name: string, ns = 'default') => server.control.get(CM, name, ns)
  const done = async () => {
    await rec.stop()
    await cluster.close()
    await server.stop()
  }
  return { server, cluster, d, db, target, rec, put, del, settled, allDone, get, done }
}

test('apply is server-side apply with our field manager and label; removed fields go; delete deletes', async () => {
  const t = await setup()
  try {
    t.rec.start()
    await t.put(configMap('a', { x: '1', y: '2' }), configMap('b', { z: '3' }))
    await t.settled()
    const a = t.get('a')
    assert.equal(a.data, { x: '1', y: '2' })
    assert.is(a.metadata.labels['statewright.io/owner'], 'test-controller')
    assert.ok(a.metadata.managedFields.some((m: any) => m.manager === 'test-controller' && m.operation === 'Apply'))
    const applies = t.server.control.requestLog().filter((e) => e.method === 'PATCH')
    assert.is(applies.length, 2)
    assert.is(applies[0].contentType, 'application/apply-patch+yaml')
    assert.is(applies[0].query.fieldManager, 'test-controller')
    assert.is(applies[0].query.force, 'true')
    // a field we stop applying is removed
    await t.put(configMap('a', { x: '1' }))
    await t.settled()
    assert.equal(t.get('a').data, { x: '1' })
    await t.del(configMap('b', {}))
    await waitFor(() => t.get('b') === undefined, 'b deleted')
    // deleting what is already gone is success
    await t.put(configMap('c', { c: '1' }))
    await t.settled()
    await t.cluster.request({ method: 'DELETE', path: cmPath('c') })
    await t.del(configMap('c', {}))
    await waitFor(() => t.target.stats.deletes === 2, 'second delete')
    assert.equal(t.rec.failures(), [])
    assert.is(t.target.stats.errors, 0)
  } finally {
    await t.done()
  }
})

test('adopt: false: an object of our name without our label is never applied; created once it is gone', async () => {
  const t = await setup({ adopt: false })
  try {
    await t.cluster.request({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: configMap('taken', { theirs: '1' }) })
    const rv = t.get('taken').metadata.resourceVersion
    t.rec.start()
    await t.put(configMap('taken', { ours: '1' }), configMap('free', { ours: '1' }))
    await waitFor(() => t.rec.failures().length === 1 && t.get('free') !== undefined, 'one failure, the free one applied')
    const [f] = t.rec.failures()
    assert.match(
      f!.error,
      /ConfigMap default\/taken already exists and is not managed by test-controller \(no label statewright.io\/owner=test-controller\); it is not adopted/,
    )
    assert.is(t.get('taken').metadata.resourceVersion, rv, 'the foreign object is untouched')
    assert.equal(t.get('taken').data, { theirs: '1' })
    assert.is(t.server.control.requestLog().filter((e) => e.method === 'PATCH' && e.path.endsWith('/taken')).length, 0, 'never applied')
    // once it is gone, the retry creates ours
    await t.cluster.request({ method: 'DELETE', path: cmPath('taken') })
    await waitFor(() => t.get('taken')?.data?.ours === '1', 'ours created by a retry')
    // the retry's result is written back after the apply: until then the row still holds the old error
    await t.allDone(2)
    await t.settled()
    assert.equal(t.get('taken').data, { ours: '1' })
    assert.is(t.get('taken').metadata.labels['statewright.io/owner'], 'test-controller')
    // ours now: later applies need no read first
    const gets = () => t.server.control.requestLog().filter((e) => e.method === 'GET' && e.path.endsWith('/taken')).length
    const before = gets()
    await t.put(configMap('taken', { ours: '2' }))
    await t.settled()
    assert.is(gets(), before)
    assert.equal(t.get('taken').data, { ours: '2' })
  } finally {
    await t.done()
  }
})

test('prune deletes only stale objects carrying our label; full reconciliation reports out-of-sync', async () => {
  const t = await setup()
  try {
    const mk = (name: string, labels?: Record<string, string>) =>
      t.cluster.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/configmaps',
        body: { ...configMap(name, { v: '0' }), metadata: { name, namespace: 'default', labels } },
      })
    await mk('stale-ours', { 'statewright.io/owner': 'test-controller' })
    await mk('foreign')
    await mk('other-owner', { 'statewright.io/owner': 'someone-else' })
    t.rec.start()
    await t.put(configMap('kept', { v: '1' }))
    await t.settled()
    let report = await t.rec.triggerFullReconciliation()
    assert.is(report.pruneError, undefined)
    assert.is(t.get('stale-ours'), undefined)
    assert.ok(t.get('foreign'))
    assert.ok(t.get('other-owner'))
    assert.ok(t.get('kept'))
    assert.is(t.target.stats.pruned, 1)
    assert.is(report.outOfSync, 0)
    // someone edits our object: the next full reconciliation repairs it and counts it out of sync
    await t.cluster.request({
      method: 'PATCH',
      path: cmPath('kept'),
      body: { data: { v: 'edited' } },
      contentType: 'application/merge-patch+json',
    })
    report = await t.rec.triggerFullReconciliation()
    assert.is(report.outOfSync, 1)
    assert.is(t.get('kept').data.v, '1')
  } finally {
    await t.done()
  }
})

test('conflicts without force fail with the object and field named; 5xx is retried', async () => {
  const t = await setup({ force: false })
  try {
    await t.cluster.request({
      method: 'PATCH',
      path: cmPath('shared') + '?fieldManager=other&force=true',
      body: configMap('shared', { owned: 'by-other' }),
      contentType: 'application/apply-patch+yaml',
    })
    t.rec.start()
    await t.put(configMap('shared', { owned: 'by-us' }))
    const errs = await waitForSettled(t.db, t.d.table, t.d.statusIndex, { signal: AbortSignal.timeout(5000) })
    assert.is(errs.length, 1)
    assert.match(errs[0].status.error!, /ConfigMap default\/shared: apply conflict/)
    assert.match(errs[0].status.error!, /data\.owned/)
    await t.rec.stop()

    const t2 = await setup()
    try {
      t2.server.control.fail({ method: 'PATCH', status: 500, count: 5 })
      t2.rec.start()
      await t2.put(...Array.from({ length: 10 }, (_, i) => configMap(`cm-${i}`, { i: String(i) })))
      await t2.allDone(10)
      assert.ok(t2.target.stats.errors >= 5)
      for (let i = 0; i < 10; i++) assert.ok(t2.get(`cm-${i}`))
    } finally {
      await t2.done()
    }
  } finally {
    await t.done()
  }
})

test('client-side rate limit (QPS/burst) and 429 Retry-After are honoured', async () => {
  const t = await setup({}, { qps: 40, burst: 5 })
  try {
    t.rec.start()
    const started = Date.now()
    await t.put(...Array.from({ length: 25 }, (_, i) => configMap(`cm-${i}`, { i: String(i) })))
    await t.allDone(25)
    const took = Date.now() - started
    // 25 applies + 1 discovery at 40/s after a burst of 5: at least ~0.5 s
    assert.ok(took >= 450, `took ${took} ms`)
    t.server.control.fail({ method: 'PATCH', status: 429, retryAfterSeconds: 0.3, count: 2 })
    const t0 = Date.now()
    await t.put(configMap('late', { a: '1' }))
    await t.allDone(26)
    assert.ok(Date.now() - t0 >= 300, 'waited for Retry-After')
    assert.is(t.cluster.stats.throttled, 2)
    assert.is(t.target.stats.errors, 0) // retried inside the cluster, not surfaced as failures
  } finally {
    await t.done()
  }
})

test('drift: a managed object deleted or edited by someone else is repaired without a full reconciliation', async () => {
  const s = await setup()
  const observed = objectTable('observed')
  const db2 = new DB({ tables: [s.d.table, observed] })
  const rec = targetReconciler(db2, s.d, s.target, { retry: { minMs: 20, maxMs: 200 } })
  const reflector = new Reflector({
    cluster: s.cluster,
    db: db2,
    table: observed,
    kind: CM,
    labelSelector: 'statewright.io/owner=test-controller',
  })
  const drift = new DriftWatcher({ db: db2, observed, desired: s.d })
  try {
    await reflector.start()
    rec.start()
    drift.start()
    await db2.write(s.d.table, (w) => {
      for (let i = 0; i < 5; i++) s.d.table.insert(w, desired(configMap(`cm-${i}`, { i: String(i) })))
    })
    const allDone = () => waitTable(db2, s.d.table, (x) => s.d.table.list(x, s.d.statusIndex.kind('done')).count() === 5, 'all done')
    await allDone()
    await waitTable(db2, observed, (x) => observed.count(x) === 5, 'observed 5')
    const applies = () => s.server.control.requestLog().filter((e) => e.method === 'PATCH').length
    const before = applies()
    // deleted by someone else
    await s.cluster.request({ method: 'DELETE', path: cmPath('cm-1') })
    await waitFor(() => s.get('cm-1') !== undefined, 'cm-1 recreated')
    // data edited by someone else
    await s.cluster.request({
      method: 'PATCH',
      path: cmPath('cm-2'),
      body: { data: { i: 'hacked' } },
      contentType: 'application/merge-patch+json',
    })
    await waitFor(() => s.get('cm-2')?.data?.i === '2', 'cm-2 repaired')
    // our label removed: the object leaves the selection (DELETED) and is repaired
    await s.cluster.request({
      method: 'PATCH',
      path: cmPath('cm-3'),
      body: { metadata: { labels: { 'statewright.io/owner': null } } },
      contentType: 'application/merge-patch+json',
    })
    await waitFor(() => s.get('cm-3')?.metadata?.labels?.['statewright.io/owner'] === 'test-controller', 'cm-3 label back')
    // a field we do not set is not drift
    const repairs = drift.repairs
    await s.cluster.request({
      method: 'PATCH',
      path: cmPath('cm-4'),
      body: { metadata: { annotations: { note: 'hi' } } },
      contentType: 'application/merge-patch+json',
    })
    await waitTable(
      db2,
      observed,
      (x) =>
        observed
          .all(x)
          .toArray()
          .some((o) => o.metadata.annotations?.note === 'hi'),
      'annotation observed',
    )
    await allDone()
    assert.is(drift.repairs, repairs)
    assert.ok(drift.repairs >= 3, `repairs ${drift.repairs}`)
    assert.ok(applies() - before >= 3)
    assert.is(rec.stats().fullRuns, 0)
  } finally {
    await drift.stop()
    await rec.stop()
    await reflector.stop()
    await s.cluster.close()
    await s.server.stop()
  }
})

test.run()
