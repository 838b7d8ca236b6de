// PrimaryController with NATS primaries (a JetStream KV bucket through NatsKvReflector, status
// written back by CAS) and ConfigMap secondaries on the test API server, against a real nats-server
// (`apt-get install -y nats-server`; without it these tests fail and say so): stamps, ErrResourceExists
// and Events, bounded syncs, a controller restart with orphan GC, a cut connection and a server
// restart, and a randomized model test.
import { createHash } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { collectingLogger } from './lib/logger.ts'
import type { NatsConnection } from '@nats-io/transport-node'
import type { KV } from '@nats-io/kv'
import { DB, Table, defineIndex, setValidation } from '@statewright/statedb'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'
import { Cluster, EventRecorder, KubeSecondaries, Reflector, namespacedName, type KubeObject } from '@statewright/k8s'
import { PrimaryController, ownerKeyLabelValue, ownerStampKeys } from '@statewright/primary'
import { KvStatusWriter, NatsKvReflector, listEntries, type KvRow } from '@statewright/nats'
import { TcpProxy, natsClient, openBucket, startNatsServer, waitTable, type RunningNatsServer } from '../packages/nats/test/helpers.ts'

setValidation(true)

const NS = 'default'
const CMS = `/api/v1/namespaces/${NS}/configmaps`
const { key: KEY, kind: KIND } = ownerStampKeys()

let nats: RunningNatsServer
let api: RunningTestServer
let cluster: Cluster
let admin: NatsConnection

test.before(async () => {
  nats = await startNatsServer()
  api = await startTestServer()
  cluster = new Cluster({ kubeconfig: api.kubeconfig, qps: 0 })
  admin = await natsClient(nats.url)
})

test.after(async () => {
  await admin?.close()
  await cluster?.close()
  await api?.stop()
  await nats?.stop()
})

type App = KvRow<{ spec?: { n?: number }; status?: unknown }>

/** The ConfigMap name of a primary key (a DNS name: keys that are not get a hash). */
const cmName = (key: string) =>
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(key) && key.length < 60
    ? `app-${key}`
    : `app-h-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`
/** f(primary): the ConfigMap it wants. */
const configMapOf = (p: App): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: cmName(p.key), namespace: NS },
  data: { n: String(p.value.spec?.n ?? 0) },
})

/** A whole controller: reflectors of the bucket and of ConfigMaps, the PrimaryController, events. */
async function controller(nc: NatsConnection, bucket: string, kv: KV) {
  const primaries = new Table<App>({ name: 'apps', primary: defineIndex<App, string>({ name: 'key', key: (r) => r.key, unique: true }) })
  const observed = new Table<KubeObject>({
    name: 'configmaps',
    primary: defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true }),
  })
  const db = new DB({ tables: [primaries, observed] })
  const errors: string[] = []
  const reflector = new NatsKvReflector<App['value'], App>({
    nc,
    bucket,
    db,
    table: primaries,
    retry: { minMs: 20, maxMs: 200 },
    requestTimeoutMs: 1000,
    logger: collectingLogger((e) => errors.push((e.fields.err as Error).message)),
  })
  const cms = new Reflector({
    cluster,
    db,
    table: observed,
    kind: { apiVersion: 'v1', kind: 'ConfigMap' },
    namespace: NS,
    retry: { minMs: 20, maxMs: 200 },
  })
  const events = new EventRecorder({ cluster, component: 'nats-primary' })
  const c = new PrimaryController<App>({
    name: 'apps',
    kind: 'App',
    db,
    primaries,
    secondaries: [{ kinds: ['ConfigMap'], target: new KubeSecondaries({ cluster, fieldManager: 'nats-primary' }), observed }],
    sync: (p) => ({ secondaries: [configMapOf(p)], status: { observedN: p.value.spec?.n ?? 0 } }),
    status: new KvStatusWriter({ kv }),
    events,
    eventNamespace: NS,
    concurrency: 4,
    retry: { minMs: 20, maxMs: 300 },
  })
  await reflector.start()
  await cms.start()
  await c.start()
  return {
    c,
    db,
    primaries,
    errors,
    events,
    /**
     * Waits until the primaries table holds the bucket's last values, the ConfigMap table holds the
     * server's ConfigMaps, and the controller is idle, twice in a row with nothing new in between
     * (the controller's own writes have come back). Transient errors (a restarting server) are retried.
     */
    async settle(timeoutMs = 15_000) {
      const signal = AbortSignal.timeout(timeoutMs)
      const snapshot = async () => {
        const b = (await listEntries(kv))
          .map((e) => `${e.key}@${e.revision}`)
          .sort()
          .join(',')
        const list: any = await cluster.request({ path: CMS })
        const k = (list.items as KubeObject[])
          .map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)
          .sort()
          .join(',')
        return `${b}|${k}`
      }
      const local = () => {
        const txn = db.readTxn()
        const b = primaries
          .all(txn)
          .toArray()
          .map((r) => `${r.key}@${r.revision}`)
          .sort()
          .join(',')
        const k = observed
          .all(txn)
          .toArray()
          .map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)
          .sort()
          .join(',')
        return `${b}|${k}`
      }
      for (;;) {
        if (signal.aborted) {
          const w = await snapshot().catch((e: Error) => e.message)
          throw new Error(
            `not settled after ${timeoutMs} ms: tables ${local()}; servers ${w}; controller ${JSON.stringify(c.health())}; reflector ${JSON.stringify(reflector.health())}`,
          )
        }
        let want: string
        try {
          want = await snapshot()
        } catch {
          await new Promise((r) => setTimeout(r, 25))
          continue
        }
        if (local() !== want) {
          const txn = db.readTxn()
          const ws = [
            primaries.allWatch(txn)[1].wait(signal),
            observed.allWatch(txn)[1].wait(signal),
            new Promise((r) => setTimeout(r, 100)),
          ]
          await Promise.race(ws).catch(() => {})
          continue
        }
        await c.settled(signal)
        const errs = c.health().errors
        let again: string
        try {
          again = await snapshot()
        } catch {
          continue
        }
        if (again === want && local() === want) return errs
      }
    },
    async stop() {
      await reflector.stop()
      await cms.stop()
      await c.stop()
      await events.close()
    },
  }
}

async function configMaps(): Promise<Map<string, KubeObject>> {
  const list: any = await cluster.request({ path: CMS })
  // every namespace's kube-root-ca.crt (its controllers make it) is neither a primary's nor foreign
  const items = (list.items as KubeObject[]).filter((o) => o.metadata.name !== 'kube-root-ca.crt')
  return new Map(items.map((o) => [String(o.metadata.name), o]))
}

async function kvValue(kv: KV, key: string): Promise<any> {
  const e = await kv.get(key)
  return e && e.operation === 'PUT' ? JSON.parse(new TextDecoder().decode(e.value)) : undefined
}

/** Secondaries == f(primaries): each primary's ConfigMap (but those a foreign object holds), no orphan. */
async function checkModel(kv: KV, foreign: Set<string>, what: string): Promise<void> {
  const prims = new Map<string, any>()
  for (const e of await listEntries(kv)) prims.set(e.key, JSON.parse(new TextDecoder().decode(e.value)))
  const cms = await configMaps()
  for (const [key, v] of prims) {
    const cm = cms.get(cmName(key))
    assert.ok(cm, `${what}: ConfigMap of "${key}"`)
    if (foreign.has(cmName(key))) {
      assert.is(cm!.metadata.annotations?.[KEY], undefined, `${what}: the foreign ${cmName(key)} is never adopted`)
      assert.match(String(v.status?.error), 'already exists and is not managed by this controller', `${what}: error status of "${key}"`)
      continue
    }
    assert.equal(cm!.data, { n: String(v.spec?.n ?? 0) }, `${what}: data of ${cmName(key)}`)
    assert.is(cm!.metadata.annotations?.[KEY], key, `${what}: the annotation holds the exact key`)
    assert.is(cm!.metadata.labels?.[KEY], ownerKeyLabelValue(key))
    assert.equal(v.status, { observedN: v.spec?.n ?? 0 }, `${what}: status of "${key}"`)
  }
  for (const [name, cm] of cms) {
    const owner = cm.metadata.annotations?.[KEY]
    if (owner === undefined) {
      assert.ok(foreign.has(name), `${what}: ${name} is foreign`)
      continue
    }
    assert.ok(prims.has(owner), `${what}: orphan ${name} (owner "${owner}")`)
  }
}

async function events(): Promise<any[]> {
  const list: any = await cluster.request({ path: `/api/v1/namespaces/${NS}/events` })
  return list.items
}

async function clearConfigMaps(): Promise<void> {
  for (const name of (await configMaps()).keys()) await cluster.request({ method: 'DELETE', path: `${CMS}/${name}` }).catch(() => {})
}

const only = process.env.NATS_ONLY
const t = (name: string, fn: () => Promise<void>) => (only && !name.includes(only) ? undefined : test(name, fn))
t(
  'NATS primaries to ConfigMaps: stamps, ErrResourceExists with its Warning event and error status, Synced events, bounded syncs',
  async () => {
    const kv = await openBucket(admin, 'apps1')
    const long = 'x'.repeat(100)
    await cluster.request({
      method: 'POST',
      path: CMS,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: cmName('taken'), namespace: NS }, data: { theirs: 'yes' } },
    })
    for (const [k, n] of [
      ['web', 1],
      ['a.b/c', 2],
      [long, 3],
      ['taken', 4],
    ] as const)
      await kv.put(k, JSON.stringify({ spec: { n } }))
    const ctl = await controller(admin, 'apps1', kv)
    try {
      const errs = await ctl.settle()
      assert.equal(
        errs.map((e) => e.key),
        ['taken'],
      )
      await checkModel(kv, new Set([cmName('taken')]), 'first sync')
      assert.equal((await configMaps()).get(cmName('taken'))!.data, { theirs: 'yes' }, 'the foreign object is untouched')
      await ctl.events.flush()
      const evs = await events()
      const warn = evs.find((e) => e.reason === 'ErrResourceExists')
      assert.ok(warn, 'a Warning event')
      assert.is(warn.type, 'Warning')
      assert.is(warn.message, `Resource "${NS}/${cmName('taken')}" already exists and is not managed by this controller`)
      assert.is(warn.involvedObject.kind, 'App')
      assert.is(warn.involvedObject.namespace, NS)
      const synced = evs
        .filter((e) => e.reason === 'Synced')
        .map((e) => e.message)
        .sort()
      assert.equal(synced, ['web', 'a.b/c', long].map((k) => `"${NS}/${cmName(k)}" synced successfully (created)`).sort())

      // the foreign object goes: ours is created
      await cluster.request({ method: 'DELETE', path: `${CMS}/${cmName('taken')}` })
      assert.equal(await ctl.settle(), [])
      await checkModel(kv, new Set(), 'after the foreign object went')

      // a spec change: exactly one sync, though the status write-back changes the primary again
      const before = ctl.c.stats.syncs
      await kv.put('web', JSON.stringify({ ...(await kvValue(kv, 'web')), spec: { n: 10 } }))
      await ctl.settle()
      assert.is(ctl.c.stats.syncs - before, 1, 'one sync per primary change')
      await checkModel(kv, new Set(), 'after an update')
      await ctl.events.flush()
      assert.ok((await events()).some((e) => e.message === `"${NS}/${cmName('web')}" synced successfully (updated)`))

      // delete and purge of primaries delete their secondaries
      await kv.delete('web')
      await kv.purge('a.b/c')
      await ctl.settle()
      await checkModel(kv, new Set(), 'after delete and purge')
      assert.ok(!(await configMaps()).has(cmName('web')))
    } finally {
      await ctl.stop()
      await clearConfigMaps()
    }
  },
)

t('bad input: malformed JSON is an error naming bucket, key and revision, and the rest goes on', async () => {
  const kv = await openBucket(admin, 'apps2')
  await kv.put('ok', JSON.stringify({ spec: { n: 1 } }))
  const rev = await kv.put('broken', '{"spec": ')
  const ctl = await controller(admin, 'apps2', kv)
  try {
    await waitTable(ctl.db, ctl.primaries, (t) => ctl.primaries.count(t) === 1, 'the good primary')
    await ctl.c.settled(AbortSignal.timeout(5000))
    assert.ok((await configMaps()).has(cmName('ok')))
    assert.is(ctl.errors.length, 1)
    assert.match(ctl.errors[0]!, `bucket "apps2", key "broken", revision ${rev}: cannot decode the value`)
  } finally {
    await ctl.stop()
    await clearConfigMaps()
  }
})

t(
  'controller restart: a primary deleted while it was down has its ConfigMap collected; vandalism is repaired; objects without stamps stay',
  async () => {
    const kv = await openBucket(admin, 'apps3')
    for (const k of ['p1', 'p2', 'p3']) await kv.put(k, JSON.stringify({ spec: { n: 1 } }))
    let ctl = await controller(admin, 'apps3', kv)
    try {
      await ctl.settle()
      await ctl.stop()
      await kv.delete('p2')
      await kv.put('p4', JSON.stringify({ spec: { n: 4 } }))
      await cluster.request({
        method: 'PATCH',
        path: `${CMS}/${cmName('p1')}`,
        contentType: 'application/merge-patch+json',
        body: { data: { n: 'vandal' } },
      })
      await cluster.request({ method: 'DELETE', path: `${CMS}/${cmName('p3')}` })
      await cluster.request({
        method: 'POST',
        path: CMS,
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bystander', namespace: NS }, data: {} },
      })
      ctl = await controller(admin, 'apps3', kv)
      await ctl.settle()
      await checkModel(kv, new Set(['bystander']), 'after a restart')
      assert.ok(!(await configMaps()).has(cmName('p2')), 'the orphan is collected')
      assert.is(ctl.c.stats.garbage, 1)
    } finally {
      await ctl.stop()
      await clearConfigMaps()
    }
  },
)

t('a cut connection and a nats-server restart while primaries change: nothing is lost', async () => {
  const srv = await startNatsServer()
  const proxy = await new TcpProxy(() => srv.port).start()
  const direct = await natsClient(srv.url)
  const nc = await natsClient(proxy.url)
  let kv = await openBucket(direct, 'apps4')
  const kvc = await openBucket(nc, 'apps4')
  const ctl = await controller(nc, 'apps4', kvc)
  try {
    for (let i = 0; i < 8; i++) await kv.put(`k${i}`, JSON.stringify({ spec: { n: i } }))
    await ctl.settle()
    proxy.block()
    for (let i = 0; i < 8; i += 2) await kv.put(`k${i}`, JSON.stringify({ spec: { n: 100 + i } }))
    await kv.delete('k1')
    proxy.unblock()
    await ctl.settle()
    await checkModel(kv, new Set(), 'after a cut')
    await srv.restart()
    for (let attempt = 0; ; attempt++) {
      try {
        kv = await openBucket(direct, 'apps4')
        await kv.put('k3', JSON.stringify({ spec: { n: 333 } }))
        break
      } catch (err) {
        if (attempt > 200) throw err
        await new Promise((r) => setTimeout(r, 25))
      }
    }
    await kv.delete('k5')
    await ctl.settle()
    await checkModel(kv, new Set(), 'after a server restart')
  } finally {
    await ctl.stop()
    await nc.close()
    await direct.close()
    await proxy.stop()
    await srv.stop()
    await clearConfigMaps()
  }
})

t(
  'randomized model: KV puts and deletes, vandalized and foreign secondaries, cuts and controller restarts; secondaries == f(primaries), no orphan, no adoption',
  async () => {
    const seed = Number(process.env.NATS_MODEL_SEED ?? Date.now() % 100_000)
    let s = seed
    const rnd = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!
    const keys = ['a', 'b', 'c.d', 'e/f', 'g_h', 'x'.repeat(80), 'y.z/w', 'k9']
    const proxy = await new TcpProxy(() => nats.port).start()
    const nc = await natsClient(proxy.url)
    const kv = await openBucket(admin, 'apps5')
    const model = new Map<string, number>() // the plain model: primary key -> n
    const foreign = new Set<string>() // ConfigMap names somebody else made
    const kvc = await openBucket(nc, 'apps5') // the controller's handle: it survives reconnects
    let ctl = await controller(nc, 'apps5', kvc)
    try {
      for (let step = 0; step < 40; step++) {
        const r = rnd()
        const k = pick(keys)
        if (r < 0.45) {
          const n = Math.floor(rnd() * 5)
          const cur = await kvValue(kv, k)
          await kv.put(k, JSON.stringify({ ...(cur ?? {}), spec: { n } }))
          model.set(k, n)
        } else if (r < 0.6) {
          if (model.has(k)) {
            await kv.delete(k)
            model.delete(k)
          }
        } else if (r < 0.75) {
          const cms = [...(await configMaps()).keys()].filter((n) => !foreign.has(n))
          if (cms.length) {
            const name = pick(cms)
            if (rnd() < 0.5) await cluster.request({ method: 'DELETE', path: `${CMS}/${name}` }).catch(() => {})
            else
              await cluster
                .request({
                  method: 'PATCH',
                  path: `${CMS}/${name}`,
                  contentType: 'application/merge-patch+json',
                  body: { data: { n: 'vandal' } },
                })
                .catch(() => {})
          }
        } else if (r < 0.82) {
          const name = cmName(k)
          if (!model.has(k) && !(await configMaps()).has(name)) {
            await cluster
              .request({
                method: 'POST',
                path: CMS,
                body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: { theirs: 'yes' } },
              })
              .catch(() => {})
            const made = (await configMaps()).get(name)
            if (made && made.metadata.annotations?.[KEY] === undefined) foreign.add(name)
          }
        } else if (r < 0.92) {
          proxy.cut()
        } else {
          await ctl.stop()
          ctl = await controller(nc, 'apps5', kvc)
        }
      }
      await ctl.settle(15_000)
      // the model: the bucket holds exactly the model's primaries
      const inBucket = new Map((await listEntries(kv)).map((e) => [e.key, JSON.parse(new TextDecoder().decode(e.value)).spec.n]))
      assert.equal(Object.fromEntries([...inBucket].sort()), Object.fromEntries([...model].sort()), `seed ${seed}: bucket == model`)
      await checkModel(kv, foreign, `seed ${seed}`)
      for (const name of foreign)
        assert.equal((await configMaps()).get(name)?.data, { theirs: 'yes' }, `seed ${seed}: foreign ${name} untouched`)
      await ctl.events.flush()
      for (const e of await events()) {
        if (e.reason === 'ErrResourceExists')
          assert.match(e.message, /^Resource "default\/[^"]+" already exists and is not managed by this controller$/)
        else if (e.reason === 'Synced') assert.match(e.message, /^"default\/[^"]+" synced successfully \((created|updated|deleted)\)$/)
      }
    } finally {
      await ctl.stop()
      await nc.close()
      await proxy.stop()
      await clearConfigMaps()
    }
  },
)

test.run()
