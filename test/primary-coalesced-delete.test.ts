// A PrimaryController's secondary deleted on the server right after the controller created it, so
// that the reflector of secondaries receives its ADDED and DELETED in one batch (coalesced: a delete
// of a row the table never held). The owner must be synced again and the secondary made again, as
// controller-runtime enqueues the owner on the DELETED (the randomized model of nats-primary.test.ts
// once ended with a ConfigMap missing this way). The batch is held by size, not by time: it is
// written when a second object (a sentinel) arrives, so both events of the secondary are in it
// whatever the machine's load.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { startTestServer } from '@statewright/testserver'
import { Cluster, KubeSecondaries, Reflector, namespacedName, type KubeObject } from '@statewright/k8s'
import { PrimaryController } from '@statewright/primary'
import { waitTable } from './lib/wait.ts'

const NS = 'default'
const CMS = `/api/v1/namespaces/${NS}/configmaps`
const LABELS = { 'test.statewright.io/coalesce': 'yes' }

type App = { key: string; n: number }

test('a secondary deleted before the reflector wrote its creation (ADDED and DELETED in one batch) is made again', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const primaries = new Table<App>({ name: 'apps', primary: defineIndex<App, string>({ name: 'key', key: (a) => a.key, unique: true }) })
  const observed = new Table<KubeObject>({
    name: 'configmaps',
    primary: defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true }),
  })
  const db = new DB({ tables: [primaries, observed] })
  // only our labelled ConfigMaps (not the namespace's kube-root-ca.crt); a batch is written when it
  // holds two objects (or at stop), never by its delay
  const cms = new Reflector({
    cluster,
    db,
    table: observed,
    kind: { apiVersion: 'v1', kind: 'ConfigMap' },
    namespace: NS,
    labelSelector: 'test.statewright.io/coalesce=yes',
    batchSize: 2,
    batchDelayMs: 600_000,
    retry: { minMs: 20, maxMs: 200 },
  })
  const sentinel = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sentinel', namespace: NS, labels: LABELS }, data: {} }
  let deleted = 0
  /** Deletes what it created the first time, then makes the sentinel: the reflector's batch is then written. */
  class DeletingAfterCreate extends KubeSecondaries {
    override async apply(s: KubeObject, owned: (existing: KubeObject) => boolean, signal?: AbortSignal) {
      const r = await super.apply(s, owned, signal)
      if (r.result === 'created' && deleted++ === 0) {
        await cluster.request({ method: 'DELETE', path: `${CMS}/${s.metadata.name}` })
        await cluster.request({ method: 'POST', path: CMS, body: sentinel })
      }
      return r
    }
  }
  const c = new PrimaryController<App>({
    name: 'apps',
    kind: 'App',
    db,
    primaries,
    secondaries: [{ kinds: ['ConfigMap'], target: new DeletingAfterCreate({ cluster, fieldManager: 'coalesce' }), observed }],
    sync: (p) => ({
      secondaries: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `app-${p.key}`, namespace: NS, labels: LABELS },
          data: { n: String(p.n) },
        },
      ],
    }),
    retry: { minMs: 20, maxMs: 300 },
  })
  try {
    await cms.start()
    await cms.waitSynced(AbortSignal.timeout(10_000))
    await c.start()
    await db.write(primaries, (txn) => void primaries.insert(txn, { key: 'web', n: 1 }))
    // the batch with the secondary's ADDED and DELETED is written with the sentinel
    await waitTable(db, observed, (txn) => observed.get(txn, observed.primary.query(`${NS}/sentinel`)) !== undefined, 'the sentinel')
    assert.is(deleted, 1, 'the secondary was deleted once, right after its creation')
    assert.is(
      observed.get(db.readTxn(), observed.primary.query(`${NS}/app-web`)),
      undefined,
      'the table never held the secondary (its events were coalesced)',
    )
    await c.settled(AbortSignal.timeout(10_000))
    const cm = server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'app-web', NS) as KubeObject | undefined
    assert.ok(cm, 'the ConfigMap of "web" is made again')
    assert.equal(cm!.data, { n: '1' })
    assert.is(deleted, 2, 'created twice')
    assert.ok(c.stats.repairs >= 1, 'its owner was marked for repair')
  } finally {
    await c.stop()
    await cms.stop()
    await cluster.close()
    await server.stop()
  }
})

test.run()
