// The one lifecycle contract (statedb's Lifecycle, src/lifecycle.ts), held against every part that
// runs: the reconciler, a derivation, drift, finalizers, leader election, sharded leases, the primary
// controller, a Manager's components, and both reflectors. For each: start() resolves and a second
// start() is a no-op; settled() resolves once the part has acted on a change made before it; health()
// has the one shape and turns ready; stop() twice is fine; after it, health() is 'stopped' and not
// ready, and settled() rejects with a StoppedError.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, StoppedError, Table, defineIndex, type Lifecycle } from '@statewright/statedb'
import { Reconciler, newStatusIndex, statusPending, type Status } from '@statewright/reconciler'
import {
  Cluster,
  DriftWatcher,
  LeaderElector,
  Reflector,
  ShardedLeases,
  namespacedName,
  newDesiredTable,
  type KubeObject,
} from '@statewright/k8s'
import { ConfigMap } from '@statewright/k8s/kinds'
import { Manager, nullLogger } from '@statewright/controller'
import { Derivation, Finalizer } from '@statewright/controller/parts'
import { StateOfWorldController } from '@statewright/controller/stateofworld'
import { defineTopology } from '@statewright/topology'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'
import { NatsKvReflector, startNatsServer } from '@statewright/nats'
import { setup as primarySetup } from '../packages/primary/test/fixtures.ts'
import { natsClient, openBucket, rowTable } from '../packages/nats/test/helpers.ts'
import { waitFor } from './lib/wait.ts'

interface Row {
  key: string
  n: number
  status: Status
}
const byKey = defineIndex<Row, string>({ name: 'key', key: (r) => r.key, unique: true })
const objects = (name: string) =>
  new Table<KubeObject>({ name, primary: defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true }) })

/** Holds one part to the contract; `change` makes something for it to act on before settled(). */
async function holds(what: string, part: Lifecycle, change: () => Promise<unknown> = async () => {}): Promise<void> {
  await part.start()
  await part.start() // a no-op while running
  await change()
  await part.settled(AbortSignal.timeout(30_000))
  const h = part.health()
  assert.ok(h.level === 'ok' || h.level === 'degraded', `${what}: level ${h.level} while running`)
  assert.type(h.message, 'string', `${what}: a message`)
  await waitFor(() => part.health().ready, `${what} ready`, 30_000)
  await part.stop()
  await part.stop()
  const after = part.health()
  assert.is(after.level, 'stopped', `${what}: level after stop()`)
  assert.is(after.ready, false, `${what}: not ready after stop()`)
  const err = await part.settled().then(
    () => undefined,
    (e: unknown) => e,
  )
  assert.instance(err, StoppedError, `${what}: settled() after stop() rejects with a StoppedError`)
}

let server: RunningTestServer
let cluster: Cluster
test.before(async () => {
  server = await startTestServer()
  cluster = new Cluster({ kubeconfig: server.kubeconfig })
})
test.after(async () => {
  await cluster.close()
  await server.stop()
})

test('the reconciler', async () => {
  const statusIndex = newStatusIndex<Row>((r) => r.status)
  const table = new Table<Row>({ name: 'rows', primary: byKey, indexes: [statusIndex] })
  const db = new DB({ tables: [table] })
  const device = new Map<string, number>()
  const r = new Reconciler<Row>({
    db,
    table,
    statusIndex,
    getObjectStatus: (o) => o.status,
    setObjectStatus: (o, s) => ({ ...o, status: s }),
    operations: { update: async (o) => void device.set(o.key, o.n), delete: async (o) => void device.delete(o.key) },
  })
  await holds('reconciler', r, () => db.write(table, (w) => table.insert(w, { key: 'a', n: 1, status: statusPending() })))
  assert.equal([...device], [['a', 1]], 'settled() came after the update')
})

test('a derivation', async () => {
  const from = new Table<Row>({ name: 'in', primary: byKey })
  const to = new Table<Row>({ name: 'out', primary: byKey })
  const db = new DB({ tables: [from, to] })
  const d = new Derivation<Row, Row>({ db, from, to, fn: (r) => ({ ...r, n: r.n * 2 }) })
  await holds('derivation', d, () => db.write(from, (w) => from.insert(w, { key: 'a', n: 2, status: statusPending() })))
  assert.is(to.get(db.readTxn(), byKey.query('a'))?.n, 4, 'settled() came after the output')
})

test('drift', async () => {
  const want = newDesiredTable()
  const observed = objects('observed')
  const db = new DB({ tables: [want.table, observed] })
  const drift = new DriftWatcher({ db, observed, desired: want })
  await holds('drift', drift, () =>
    db.write(observed, (w) => observed.insert(w, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' } })),
  )
})

test('finalizers', async () => {
  const table = objects('gadgets')
  const db = new DB({ tables: [table] })
  const f = new Finalizer({ cluster, db, table, name: 'example.com/cleanup', kind: ConfigMap, cleanup: async () => {} })
  await holds('finalizer', f)
})

test('leader election and sharded leases', async () => {
  const fast = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 }
  const e = new LeaderElector({ cluster, namespace: 'default', name: 'contract', identity: 'a', ...fast })
  await holds('leader election', e)
  const s = new ShardedLeases({ cluster, namespace: 'default', name: 'contract-shards', identity: 'a', shards: 2, ...fast })
  await holds('sharded leases', s)
})

test('the primary controller', async () => {
  const p = primarySetup()
  await holds('primary controller', p.c, async () => {
    await p.initialize()
    await p.put('a', 1)
  })
  assert.equal(p.calls, ['a'], 'settled() came after the sync')
})

test("a Manager's component (a reconcile step)", async () => {
  const m = new Manager({ name: 'contract', cluster, http: false, logger: nullLogger })
  const step = m.reconcile({ for: ConfigMap, fn: () => ({}) })
  const c = m.components.find((x) => x.name.includes(step.name)) ?? m.components[0]!
  await holds('component', c)
})

test("a Manager's component (the state-of-world controller, in a started Manager)", async () => {
  const m = new Manager({ name: 'contract-sow', cluster, http: false, logger: nullLogger })
  new StateOfWorldController({
    name: 'sow',
    manager: m,
    watch: [{ kind: ConfigMap }],
    topology: defineTopology({ targetables: [{ kind: 'ConfigMap' }], links: [] }),
    reconcile: () => {},
  })
  const c = m.components.find((x) => x.name === 'state-of-world sow')!
  await m.start()
  try {
    await holds('state-of-world component', c)
  } finally {
    await m.stop()
  }
})

test('the k8s reflector', async () => {
  const table = objects('configmaps')
  const db = new DB({ tables: [table] })
  const r = new Reflector({ cluster, db, table, kind: ConfigMap, namespace: 'default' })
  await holds('k8s reflector', r, () =>
    cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { metadata: { name: 'contract' }, data: { a: '1' } },
    }),
  )
})

test('the NATS KV reflector', async () => {
  const server = await startNatsServer()
  const nc = await natsClient(server.url)
  try {
    const kv = await openBucket(nc, 'contract')
    const table = rowTable()
    const db = new DB({ tables: [table] })
    const r = new NatsKvReflector({ nc, bucket: 'contract', db, table })
    await holds('NATS KV reflector', r, () => kv.put('a', JSON.stringify({ n: 1 })))
  } finally {
    await nc.close()
    await server.stop()
  }
})

test.run()
