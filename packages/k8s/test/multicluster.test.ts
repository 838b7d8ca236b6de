import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { collectingLogger } from '../../../test/lib/logger.ts'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { statusDone, statusPending, type Status } from '@statewright/reconciler'
import { kubeconfigObject, type RunningTestServer } from '@statewright/testserver'
import { ClusterRegistry, WatchOnDemand, type TargetRef } from '@statewright/k8s'
import { startServer, waitTable } from './helpers.ts'
import { waitUntil } from './leader-fixtures.ts'

function twoContextKubeconfig(a: RunningTestServer, b: RunningTestServer): string {
  const ka: any = kubeconfigObject({ server: a.url, token: a.token!, name: 'east' })
  const kb: any = kubeconfigObject({ server: b.url, token: b.token!, name: 'west' })
  return JSON.stringify({
    ...ka,
    clusters: [...ka.clusters, ...kb.clusters],
    users: [...ka.users, ...kb.users],
    contexts: [...ka.contexts, ...kb.contexts],
  })
}

function socketsOf(s: RunningTestServer): number {
  return (s.server as any).sockets.size
}

test('registry: clusters from a kubeconfig file (one per context) and from a Secret; one connection pool each', async () => {
  const east = await startServer()
  const west = await startServer()
  const dir = mkdtempSync(join(tmpdir(), 'sw-registry-'))
  const registry = new ClusterRegistry({ qps: 0 })
  try {
    const file = join(dir, 'config')
    writeFileSync(file, twoContextKubeconfig(east, west))
    const cs = registry.addKubeconfigFile(file)
    assert.equal(
      cs.map((c) => c.name),
      ['east', 'west'],
    )
    assert.equal(registry.names(), ['east', 'west'])
    assert.is(registry.require('west').server.port, String(west.port))
    assert.throws(() => registry.require('north'), /no cluster named "north"/)
    assert.throws(() => registry.addKubeconfigFile(file, { contexts: ['east'] }), /already registered/)

    // 50 requests each: one keep-alive pool per cluster, not a socket per request
    for (let i = 0; i < 50; i++) {
      await registry.require('east').request({ path: '/api/v1/namespaces' })
      await registry.require('west').request({ path: '/api/v1/namespaces' })
    }
    assert.ok(socketsOf(east) <= 2, `east sockets ${socketsOf(east)}`)
    assert.ok(socketsOf(west) <= 2, `west sockets ${socketsOf(west)}`)
    const perConn = east.control.requestLog().filter((e) => e.path === '/api/v1/namespaces')
    assert.is(perConn.length, 50)
    assert.ok(perConn.every((e) => e.token === east.token))

    // a kubeconfig for "west" kept in a Secret on "east" (Cluster API convention: key "value")
    const westOnly = JSON.stringify(kubeconfigObject({ server: west.url, token: west.token!, name: 'west' }))
    await registry.require('east').request({
      method: 'POST',
      path: '/api/v1/namespaces/default/secrets',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'west-kubeconfig' },
        data: { value: Buffer.from(westOnly).toString('base64') },
      },
    })
    const fromSecret = await registry.addFromSecret('west-from-secret', {
      cluster: registry.require('east'),
      namespace: 'default',
      name: 'west-kubeconfig',
    })
    await fromSecret.request({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: { metadata: { name: 'via-secret' } } })
    assert.ok(west.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'via-secret'))
    assert.not.ok(east.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'via-secret'))
    await registry.require('east').request({
      method: 'POST',
      path: '/api/v1/namespaces/default/secrets',
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'empty' }, data: {} },
    })
    const err = await registry.addFromSecret('x', { cluster: registry.require('east'), namespace: 'default', name: 'empty' }).then(
      () => undefined,
      (e: Error) => e,
    )
    assert.match(String(err?.message), /has no kubeconfig/)
    await registry.remove('west-from-secret')
    assert.equal(registry.names(), ['east', 'west'])
  } finally {
    await registry.close()
    rmSync(dir, { recursive: true, force: true })
    await east.stop()
    await west.stop()
  }
})

test('registry: a Secret holding a broken kubeconfig is refused without its contents in the error', async () => {
  const server = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  try {
    const local = registry.addKubeconfig('local', server.kubeconfig)
    // YAML that does not parse, with a credential next to the error (YAML errors quote the lines around it)
    const broken = 'apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: TOKEN-s3cr3t-value\n  bad: : x\n'
    await local.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/secrets',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'broken-kubeconfig' },
        data: { value: Buffer.from(broken).toString('base64') },
      },
    })
    const err = await registry.addFromSecret('broken', { cluster: local, namespace: 'default', name: 'broken-kubeconfig' }).then(
      () => undefined,
      (e: Error) => e,
    )
    assert.ok(err, 'refused')
    assert.match(err!.message, /Secret default\/broken-kubeconfig/)
    assert.not.match(err!.message, /s3cr3t/)
    assert.not.match(String(err!.stack), /s3cr3t/)
    assert.not.match(String((err as any).cause?.message ?? ''), /s3cr3t/)
    assert.equal(registry.names(), ['local'])
  } finally {
    await registry.close()
    await server.stop()
  }
})

test('watch on demand: stop() ends an ensureWatch still waiting for its cache to sync', async () => {
  const server = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  registry.addKubeconfig('c', server.kubeconfig)
  const wod = new WatchOnDemand({ registry, onChange: () => {}, reflector: { retry: { minMs: 20, maxMs: 100 } } })
  try {
    // a kind the cluster does not have: the cache retries and never syncs
    const pending = wod.ensureWatch(
      'o',
      { cluster: 'c', apiVersion: 'nope.example.com/v1', kind: 'Nope', namespace: 'default', name: 'x' },
      { waitSynced: true },
    )
    let outcome = 'waiting'
    pending.then(
      () => {
        outcome = 'resolved'
      },
      () => {
        outcome = 'rejected'
      },
    )
    await new Promise((r) => setTimeout(r, 100))
    assert.is(outcome, 'waiting')
    await wod.stop()
    await waitUntil(() => outcome !== 'waiting', 'ensureWatch to end after stop()', 2000)
    assert.is(outcome, 'rejected')
  } finally {
    await wod.stop()
    await registry.close()
    await server.stop()
  }
})

interface Owner {
  name: string
  status: Status
}

test('two clusters, three kinds: owners go back to pending when a watched target changes; shared caches; teardown', async () => {
  const east = await startServer()
  const west = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  registry.addKubeconfig('east', east.kubeconfig)
  registry.addKubeconfig('west', west.kubeconfig)
  // the owners (say pipelines) with a reconciler status, in statedb
  const byName = defineIndex<Owner, string>({ name: 'name', key: (o) => o.name, unique: true })
  const owners = new Table<Owner>({ name: 'owners', primary: byName })
  const db = new DB({ tables: [owners] })
  await db.write(owners, (txn) => {
    for (const name of ['a', 'b']) owners.insert(txn, { name, status: statusDone() })
  })
  const statusOf = (name: string) => owners.get(db.readTxn(), byName.query(name))!.status.kind
  const allDone = async () =>
    db.write(owners, (txn) => {
      for (const o of owners.all(txn)) owners.insert(txn, { ...o, status: statusDone() })
    })
  const notified: string[][] = []
  const errors: string[] = []
  const wod = new WatchOnDemand({
    registry,
    graceMs: 150,
    reflector: { retry: { minMs: 20, maxMs: 200 } },
    logger: collectingLogger((e) => errors.push((e.fields.err as Error).message)),
    // put the owners back to pending: one write transaction per batch of changes
    onChange: async (names) => {
      notified.push(names)
      await db.write(owners, (txn) => {
        for (const n of names) {
          const o = owners.get(txn, byName.query(n))
          if (o) owners.insert(txn, { ...o, status: statusPending() })
        }
      })
    },
  })
  const cm = (cluster: string, name: string): TargetRef => ({ cluster, apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name })
  const widgetT = (cluster: string, name: string): TargetRef => ({
    cluster,
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    namespace: 'default',
    name,
  })
  const secret = (cluster: string, name: string): TargetRef => ({ cluster, apiVersion: 'v1', kind: 'Secret', namespace: 'default', name })
  const east_ = registry.require('east')
  const west_ = registry.require('west')
  try {
    await east_.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { metadata: { name: 'cm1' }, data: { v: '1' } },
    })
    await west_.request({
      method: 'POST',
      path: '/apis/example.com/v1/namespaces/default/widgets',
      body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } },
    })
    await west_.request({ method: 'POST', path: '/api/v1/namespaces/default/secrets', body: { metadata: { name: 's1' }, data: {} } })

    // owner a: targets of three kinds in two clusters; owner b shares cm1 and names a cm2 that does not exist yet
    const signal = AbortSignal.timeout(10_000)
    east.control.delay({ watch: true, ms: 200, count: 1 }) // the east watch opens well after its list
    await wod.setTargets('a', [cm('east', 'cm1'), widgetT('west', 'w1'), secret('west', 's1')], { signal, waitSynced: true })
    await wod.ensureWatch('b', cm('east', 'cm1'), { signal, waitSynced: true })
    await wod.ensureWatch('b', cm('east', 'cm2'), { signal, waitSynced: true })
    const caches = wod
      .cacheInfo()
      .map((c) => `${c.cluster}/${c.kind}:${c.refs}`)
      .sort()
    assert.equal(caches, ['east/ConfigMap:3', 'west/Secret:1', 'west/Widget:1'])
    // synced means listed: the watches open right after, so wait for them
    assert.ok(east.control.watchCount() <= 1) // one reflector per {cluster, kind}, shared
    assert.ok(west.control.watchCount() <= 2)
    await waitUntil(() => east.control.watchCount() === 1, 'one watch on east', 5000)
    await waitUntil(() => west.control.watchCount() === 2, 'two watches on west', 5000)
    assert.equal((wod.get(widgetT('west', 'w1')) as any).spec, { size: 1 })
    assert.is(wod.get(cm('east', 'cm2')), undefined)
    assert.equal(wod.ownersOf(cm('east', 'cm1')), ['a', 'b'])

    // the initial lists told the owners of existing targets once; start from "all done"
    await waitUntil(() => notified.length >= 3, 'initial notifications', 5000)
    await allDone()
    notified.length = 0

    // a change to a target nobody watches wakes nobody
    await east_.request({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: { metadata: { name: 'other' } } })
    // west Widget w1 changes: a is pending, b is not
    await west_.request({
      method: 'PATCH',
      path: '/apis/example.com/v1/namespaces/default/widgets/w1',
      body: { spec: { size: 2 } },
      contentType: 'application/merge-patch+json',
    })
    await waitTable(db, owners, () => statusOf('a') === 'pending', 'a pending after the Widget change', 5000)
    assert.is(statusOf('b'), 'done')
    assert.equal(wod.get(widgetT('west', 'w1'))!.spec, { size: 2 })
    // west Secret s1 deleted: a pending again
    await allDone()
    await west_.request({ method: 'DELETE', path: '/api/v1/namespaces/default/secrets/s1' })
    await waitTable(db, owners, () => statusOf('a') === 'pending', 'a pending after the Secret delete', 5000)
    assert.is(statusOf('b'), 'done')
    // east cm2 created: b pending; cm1 changed: both
    await allDone()
    await east_.request({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: { metadata: { name: 'cm2' } } })
    await waitTable(db, owners, () => statusOf('b') === 'pending', 'b pending after cm2 appeared', 5000)
    assert.is(statusOf('a'), 'done')
    await allDone()
    await east_.request({
      method: 'PATCH',
      path: '/api/v1/namespaces/default/configmaps/cm1',
      body: { data: { v: '2' } },
      contentType: 'application/merge-patch+json',
    })
    await waitTable(db, owners, () => statusOf('a') === 'pending' && statusOf('b') === 'pending', 'both pending after cm1 changed', 5000)
    assert.ok(notified.every((n) => n.length >= 1))
    assert.not.ok(notified.some((n) => n.includes('other')))

    // a drops its west targets: after the grace period, the west caches stop (no watch left on west)
    await wod.setTargets('a', [cm('east', 'cm1')])
    const west1 = wod.cacheInfo().filter((c) => c.cluster === 'west')
    assert.is(west1.length, 2)
    assert.ok(west1.every((c) => c.refs === 0 && c.stopsAt !== undefined))
    await waitUntil(() => wod.cacheInfo().every((c) => c.cluster !== 'west'), 'west caches torn down', 5000)
    await waitUntil(() => west.control.watchCount() === 0, 'no watch on west', 5000)
    assert.is(east.control.watchCount(), 1)
    // asked again within the grace period: the cache is kept
    wod.forget('b')
    wod.forget('a')
    const eastCache = wod.cacheInfo().find((c) => c.cluster === 'east')!
    assert.is(eastCache.refs, 0)
    await wod.ensureWatch('c', cm('east', 'cm1'))
    await new Promise((r) => setTimeout(r, 250))
    assert.is(wod.cacheInfo().find((c) => c.cluster === 'east')!.refs, 1)
    assert.is(east.control.watchCount(), 1)
    assert.equal(errors, [])
  } finally {
    // shutdown stops every reflector and timer
    await wod.stop()
    await registry.close()
  }
  try {
    assert.equal(wod.cacheInfo(), [])
    await waitUntil(() => east.control.watchCount() === 0 && west.control.watchCount() === 0, 'no watch left', 5000)
    const err = await wod.ensureWatch('d', cm('east', 'cm1')).then(
      () => undefined,
      (e: Error) => e,
    )
    assert.match(String(err?.message), /stopped/)
  } finally {
    await east.stop()
    await west.stop()
  }
})

test.run()
