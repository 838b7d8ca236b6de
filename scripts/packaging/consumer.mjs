// Run by scripts/check-packages.mjs with plain `node` in a consumer project outside the workspace,
// where the packages come from their packed tarballs: what a user gets from npm.
import assert from 'node:assert/strict'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { InMemoryMetrics, PrometheusMetrics, Reconciler, newStatusIndex, statusPending, waitForSettled } from '@statewright/reconciler'
import { Cluster, K8sMetrics, Reflector, Target, desired, namespacedName, newDesiredTable, targetReconciler } from '@statewright/k8s'
import { startTestServer } from '@statewright/testserver'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { Registry } from 'prom-client'

const step = (what) => console.log(`  consumer: ${what}`)

// statedb objects reconciled into an in-memory target
{
  const statusIndex = newStatusIndex((m) => m.status)
  const memos = new Table({
    name: 'memos',
    primary: defineIndex({ name: 'name', key: (m) => m.name, unique: true }),
    indexes: [statusIndex],
  })
  const db = new DB({ tables: [memos] })
  const target = new Map()
  const metrics = new InMemoryMetrics()
  const reconciler = new Reconciler({
    db,
    table: memos,
    statusIndex,
    metrics,
    getObjectStatus: (m) => m.status,
    setObjectStatus: (m, status) => ({ ...m, status }),
    operations: {
      update: (m) => {
        target.set(m.name, m.body)
      },
      delete: (m) => {
        target.delete(m.name)
      },
    },
  })
  await reconciler.start()
  await db.write(memos, (txn) => {
    for (const name of ['a', 'b', 'c']) memos.insert(txn, { name, body: name.toUpperCase(), status: statusPending() })
  })
  assert.deepEqual(await waitForSettled(db, memos, statusIndex), [])
  assert.deepEqual([...target.entries()].sort(), [
    ['a', 'A'],
    ['b', 'B'],
    ['c', 'C'],
  ])
  assert.equal(metrics.get(memos.name).operations['update/success'], 3)
  await reconciler.stop()
  step('statedb objects reconciled into an in-memory target; waitForSettled returned no errors')
}

// prom-client, installed here, works through the optional peer
{
  const registry = new Registry()
  const prom = new PrometheusMetrics({ registry })
  prom.operation('r', 'update', 'success', 0.001, 2)
  assert.match(await registry.metrics(), /statewright_reconcile_total\{reconciler="r",operation="update",result="success"\} 2/)
  step('PrometheusMetrics writes to a prom-client Registry')
}

// the test server, a reflected ConfigMap, and one applied through @statewright/k8s
{
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const observed = new Table({ name: 'configmaps', primary: defineIndex({ name: 'name', key: namespacedName, unique: true }) })
  const want = newDesiredTable()
  const db = new DB({ tables: [observed, want.table] })
  const metrics = new K8sMetrics()
  const reflector = new Reflector({
    cluster,
    db,
    table: observed,
    kind: { apiVersion: 'v1', kind: 'ConfigMap' },
    namespace: 'default',
    metrics,
  })
  const target = new Target({ clusters: cluster, fieldManager: 'consumer', kinds: [{ apiVersion: 'v1', kind: 'ConfigMap' }], metrics })
  const reconciler = targetReconciler(db, want, target)
  await reconciler.start()
  try {
    server.control.seed({ apiVersion: 'v1', kind: 'ConfigMap' }, 1, { namespace: 'default', prefix: 'seeded-' })
    await reflector.start()
    await reflector.waitSynced(AbortSignal.timeout(10_000))
    // the seeded one and the namespace's kube-root-ca.crt (every namespace has it)
    assert.equal(observed.count(db.readTxn()), 2, 'the seeded ConfigMap is reflected')
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied', namespace: 'default' }, data: { k: 'v' } }
    await db.write(want.table, (txn) => want.table.insert(txn, desired(cm)))
    assert.deepEqual(await waitForSettled(db, want.table, want.statusIndex, { signal: AbortSignal.timeout(10_000) }), [])
    const stored = server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'applied', 'default')
    assert.deepEqual(stored?.data, { k: 'v' }, 'the server holds the applied ConfigMap')
    for (;;) {
      // the reflector sees our own apply come back through the watch
      const [obj, watch] = observed.getWatch(db.readTxn(), observed.primary.query('default/applied'))
      if (obj) break
      await watch.wait(AbortSignal.timeout(10_000))
    }
    assert.match(await metrics.registry.metrics(), /statewright_k8s_target_operations_total\{[^}]*op="apply"[^}]*\} 1/)
    step('test server started; a ConfigMap reflected; one applied through a Target and reflected back')
  } finally {
    await reflector.stop()
    await reconciler.stop()
    await cluster.close()
    await server.stop()
  }
}
// a Manager: ConfigMaps labelled copy=yes are copied to "<name>-copy", waited for with waitForConvergence
{
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const m = new Manager({ name: 'copier', cluster, handleSignals: false, http: { port: 0 }, logger: createLogger({ level: 'silent' }) })
  const originals = m.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { labelSelector: 'copy=yes' })
  m.derive({
    from: originals,
    owns: [{ apiVersion: 'v1', kind: 'ConfigMap' }],
    fn: (cm) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${cm.metadata.name}-copy`, namespace: cm.metadata.namespace },
      data: cm.data ?? {},
    }),
  })
  try {
    await cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'orig', labels: { copy: 'yes' } }, data: { a: '1' } },
    })
    await m.start()
    assert.deepEqual((await waitForConvergence(m, { timeoutMs: 10_000 })).errors, [])
    assert.deepEqual(server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'orig-copy', 'default')?.data, { a: '1' })
    assert.equal((await fetch(`${m.url}/readyz`)).status, 200)
    step('a Manager derived and applied a ConfigMap; waitForConvergence returned; /readyz is 200')
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
}
console.log('  consumer: ok')
