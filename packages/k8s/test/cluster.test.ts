import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB } from '@statewright/statedb'
import { Cluster, K8sMetrics, Reflector, Target, desired, newDesiredTable, targetReconciler, type KubeObject } from '@statewright/k8s'
import { WIDGET, clusterFor, objectTable, startServer, waitFor } from './helpers.ts'

test('HTTPS with insecure-skip-tls-verify: one keep-alive agent, bearer token, reflector metrics', async () => {
  const server = await startServer({ tls: true })
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const metrics = new K8sMetrics()
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const r = new Reflector({ cluster, db, table, kind: { apiVersion: 'example.com/v1', kind: 'Widget' }, metrics, name: 'widgets' })
  try {
    assert.ok(server.url.startsWith('https://'))
    server.control.seed(WIDGET, 42)
    // The watch opens after the list (waitSynced resolves before its answer): delay it so that the
    // test cannot pass by luck, and wait for the gauge rather than assume it.
    server.control.delay({ watch: true, ms: 300, count: 1 })
    await r.start()
    await r.waitSynced(AbortSignal.timeout(5000))
    assert.is(table.count(db.readTxn()), 42)
    const watching = /statewright_k8s_reflector_watching\{reflector="widgets",cluster="[^"]+"\} 1/
    await waitFor(async () => watching.test(await metrics.registry.metrics()), 'the reflector_watching gauge at 1')
    const log = server.control.requestLog()
    assert.ok(
      log.every((e) => e.token === server.token),
      'every request carries the token',
    )
    const text = await metrics.registry.metrics()
    assert.match(text, /statewright_k8s_reflector_objects\{reflector="widgets",cluster="[^"]+"\} 42/)
    assert.match(text, /statewright_k8s_reflector_lists_total\{reflector="widgets",cluster="[^"]+"\} 1/)
    assert.match(text, watching)
  } finally {
    await r.stop()
    await cluster.close()
    await server.stop()
  }
})

test('a plain-HTTP server without insecure-skip-tls-verify is refused with a clear message', () => {
  const kc = `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n`
  assert.throws(() => new Cluster({ kubeconfig: kc }), /plain HTTP.*insecure-skip-tls-verify/)
})

test('one target, two clusters: objects go to their cluster, prune is per cluster', async () => {
  const [sa, sb] = await Promise.all([startServer(), startServer()])
  const a = clusterFor(sa, { name: 'a' })
  const b = clusterFor(sb, { name: 'b' })
  const d = newDesiredTable()
  const db = new DB({ tables: [d.table] })
  const target = new Target({ clusters: [a, b], fieldManager: 'multi', kinds: [{ apiVersion: 'v1', kind: 'ConfigMap' }] })
  const rec = targetReconciler(db, d, target)
  const cm = (name: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default' },
    data: { n: name },
  })
  try {
    // stale objects of ours in both clusters
    for (const c of [a, b])
      await c.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/configmaps',
        body: { ...cm('stale'), metadata: { name: 'stale', namespace: 'default', labels: { 'statewright.io/owner': 'multi' } } },
      })
    rec.start()
    await db.write(d.table, (w) => {
      d.table.insert(w, desired(cm('only-a'), 'a'))
      d.table.insert(w, desired(cm('only-b'), 'b'))
      d.table.insert(w, desired(cm('default-is-a')))
      d.table.insert(w, desired(cm('same-name'), 'a'))
      d.table.insert(w, desired(cm('same-name'), 'b'))
    })
    await waitFor(() => d.table.list(db.readTxn(), d.statusIndex.kind('done')).count() === 5, 'all applied')
    const get = (s: typeof sa, n: string) => s.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, n, 'default')
    assert.ok(get(sa, 'only-a') && !get(sb, 'only-a'))
    assert.ok(get(sb, 'only-b') && !get(sa, 'only-b'))
    assert.ok(get(sa, 'default-is-a') && !get(sb, 'default-is-a'))
    assert.ok(get(sa, 'same-name') && get(sb, 'same-name'))
    await rec.triggerFullReconciliation()
    assert.ok(!get(sa, 'stale') && !get(sb, 'stale'))
    await db.write(d.table, (w) => {
      d.table.delete(w, desired(cm('same-name'), 'b'))
    })
    await waitFor(() => !get(sb, 'same-name'), 'same-name gone from b')
    assert.ok(get(sa, 'same-name'), 'still in a')
  } finally {
    await rec.stop()
    await a.close()
    await b.close()
    await sa.stop()
    await sb.stop()
  }
})

test('a failing Secret is named in errors, its data never', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const target = new Target({ clusters: cluster })
  try {
    server.control.fail({ method: 'PATCH', status: 500 })
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds', namespace: 'default' },
      stringData: { password: 'hunter2' },
      data: { token: 'c2VjcmV0' },
    }
    const err = await target.apply(desired(secret)).then(
      () => undefined,
      (e: Error) => e,
    )
    assert.ok(err)
    assert.match(err!.message, /^Secret default\/creds: PATCH /)
    assert.not.match(err!.message, /hunter2|c2VjcmV0/)
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test('the limiter: burst at once, then qps; Retry-After pauses everyone', async () => {
  const server = await startServer()
  const cluster = clusterFor(server, { qps: 50, burst: 5 })
  try {
    const t0 = Date.now()
    await Promise.all(Array.from({ length: 20 }, () => cluster.request({ path: '/version' })))
    const took = Date.now() - t0
    assert.ok(took >= 250 && took < 2000, `20 requests at 50/s after a burst of 5 took ${took} ms`)
    const fail = server.control.fail({ path: '/version', status: 429, retryAfterSeconds: 0.3, count: 1 })
    const t1 = Date.now()
    let otherDoneAt = 0
    await Promise.all([
      cluster.request({ path: '/version' }),
      new Promise((r) => setTimeout(r, 50))
        .then(() => cluster.request({ path: '/api' }))
        .then(() => {
          otherDoneAt = Date.now()
        }),
    ])
    assert.ok(otherDoneAt - t1 >= 290, `an unrelated request waited for Retry-After too (${otherDoneAt - t1} ms)`)
    assert.is(cluster.stats.throttled, 1)
    fail()
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test.run()
