// NATS primaries -> ConfigMaps: a PrimaryController whose primary resources live in a JetStream
// key-value bucket and whose secondaries are ConfigMaps in a cluster.
//
//   node --conditions=@statewright/source --import tsx examples/nats-primary.ts
//   NATS_URL=nats://127.0.0.1:4222 node ... examples/nats-primary.ts     # your nats-server instead
//
// It starts nats-server (apt-get install -y nats-server) unless NATS_URL is set, and the embedded test
// API server; then shows: primaries -> ConfigMaps (stamped with their owner key), ErrResourceExists
// (a ConfigMap somebody else made is never adopted; created once it is gone), orphan GC (a ConfigMap
// whose primary was deleted while the controller was down), and a nats-server restart (skipped with
// NATS_URL) with changes made while it was down.
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { Kvm, type KV } from '@nats-io/kv'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { Cluster, EventRecorder, KubeSecondaries, Reflector, namespacedName, type KubeObject } from '@statewright/k8s'
import { PrimaryController, ownerStampKeys } from '@statewright/primary'
import { KvStatusWriter, NatsKvReflector, startNatsServer, type KvRow, type RunningNatsServer } from '@statewright/nats'
import { startTestServer } from '@statewright/testserver'

type App = KvRow<{ spec?: { greeting?: string }; status?: unknown }>
const NS = 'default'
const CMS = `/api/v1/namespaces/${NS}/configmaps`

/** f(primary): a ConfigMap named after the key ("web.front" -> "app-web-front"). */
const configMapOf = (app: App): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: `app-${app.key.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`, namespace: NS },
  data: { greeting: app.value.spec?.greeting ?? '' },
})

export async function main(
  print: (line: string) => void = console.log,
): Promise<{ configMaps: string[]; garbage: number; foreignWarnings: number }> {
  const started = Date.now()
  const log = (what: string) => print(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${what}`)
  let nats: RunningNatsServer | undefined
  const url = process.env.NATS_URL ?? (nats = await startNatsServer()).url
  const api = await startTestServer()
  const cluster = new Cluster({ kubeconfig: api.kubeconfig, qps: 0 })
  const nc: NatsConnection = await connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 2000 })
  const kv: KV = await new Kvm(nc).create('demo-apps', { history: 5 })
  // every namespace has a kube-root-ca.crt ConfigMap (its controllers make it): not one of ours, nor foreign
  const cmList = async () =>
    ((await cluster.request({ path: CMS })) as { items: KubeObject[] }).items.filter((c) => c.metadata.name !== 'kube-root-ca.crt')
  const show = async () =>
    (await cmList())
      .map((c) => `${c.metadata.name}${c.metadata.annotations?.[ownerStampKeys().key] ? '' : ' (foreign)'}`)
      .sort()
      .join(', ')

  const controller = async () => {
    const apps = new Table<App>({ name: 'apps', primary: defineIndex<App, string>({ name: 'key', key: (r) => r.key, unique: true }) })
    const configMaps = new Table<KubeObject>({
      name: 'configmaps',
      primary: defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true }),
    })
    const db = new DB({ tables: [apps, configMaps] })
    const reflector = await new NatsKvReflector({ nc, bucket: 'demo-apps', db, table: apps, requestTimeoutMs: 2000 }).start()
    const cms = new Reflector({ cluster, db, table: configMaps, kind: { apiVersion: 'v1', kind: 'ConfigMap' }, namespace: NS })
    await cms.start()
    const events = new EventRecorder({ cluster, component: 'nats-primary-demo' })
    const c = new PrimaryController<App>({
      name: 'demo',
      kind: 'App',
      db,
      primaries: apps,
      events,
      eventNamespace: NS,
      secondaries: [
        { kinds: ['ConfigMap'], target: new KubeSecondaries({ cluster, fieldManager: 'nats-primary-demo' }), observed: configMaps },
      ],
      sync: (app) => ({ secondaries: [configMapOf(app)], status: { phase: 'Synced' } }),
      status: new KvStatusWriter({ kv }),
      retry: { minMs: 50, maxMs: 1000 },
    })
    await c.start()
    return {
      c,
      idle: async () => {
        await c.settled(AbortSignal.timeout(15_000))
        return c.health().errors
      },
      stop: async () => {
        await reflector.stop()
        await cms.stop()
        await c.stop()
        await events.close()
      },
    }
  }
  const waitFor = async (what: string, cond: () => Promise<boolean>) => {
    const end = Date.now() + 15_000
    while (!(await cond())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  let ctl = await controller()
  let garbage = 0
  try {
    // 1. primaries -> ConfigMaps
    for (const [k, g] of [
      ['web.front', 'hello'],
      ['api', 'hi'],
      ['batch/nightly', 'zzz'],
    ])
      await kv.put(k, JSON.stringify({ spec: { greeting: g } }))
    await waitFor('three ConfigMaps', async () => (await cmList()).length === 3)
    await ctl.idle()
    log(`primaries -> ConfigMaps: ${await show()}`)
    const status = JSON.parse(new TextDecoder().decode((await kv.get('api'))!.value)).status
    log(`status written back into the bucket (CAS): api ${JSON.stringify(status)}`)

    // 2. ErrResourceExists
    await cluster.request({
      method: 'POST',
      path: CMS,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-shop', namespace: NS }, data: { owner: 'someone else' } },
    })
    await kv.put('shop', JSON.stringify({ spec: { greeting: 'buy' } }))
    await waitFor('the ErrResourceExists error', async () => ctl.c.stats.foreign > 0)
    log(
      `ErrResourceExists: ${ctl.c
        .health()
        .errors.map((e) => `${e.key}: ${e.error}`)
        .join('; ')}`,
    )
    await cluster.request({ method: 'DELETE', path: `${CMS}/app-shop` })
    await waitFor('our app-shop', async () =>
      (await cmList()).some((c) => c.metadata.name === 'app-shop' && c.metadata.annotations?.[ownerStampKeys().key] === 'shop'),
    )
    log(`the foreign app-shop is gone; ours is created: ${await show()}`)

    // 3. orphan GC: a primary deleted while the controller is down
    await ctl.stop()
    await kv.delete('batch/nightly')
    log('controller stopped; primary "batch/nightly" deleted meanwhile')
    ctl = await controller()
    await waitFor('the orphan collected', async () => !(await cmList()).some((c) => c.metadata.name === 'app-batch-nightly'))
    await ctl.idle()
    garbage = ctl.c.stats.garbage
    log(`restarted: GC deleted ${garbage} orphan(s): ${await show()}`)

    // 4. a nats-server restart with a change made while it was down
    if (nats) {
      await nats.stop({ remove: false })
      log('nats-server stopped')
      await nats.restart()
      await waitFor('the bucket after the restart', async () =>
        kv.put('api', JSON.stringify({ spec: { greeting: 'hello again' } })).then(
          () => true,
          () => false,
        ),
      )
      await waitFor('the change after the restart', async () =>
        (await cmList()).some(
          (c) => c.metadata.name === 'app-api' && (c.data as { greeting?: string } | undefined)?.greeting === 'hello again',
        ),
      )
      log(`nats-server restarted; the change made right after is applied: app-api greeting "hello again"`)
    }
    await ctl.idle()
    const configMaps = (await cmList()).map((c) => String(c.metadata.name)).sort()
    const events = ((await cluster.request({ path: `/api/v1/namespaces/${NS}/events` })) as { items: Array<{ reason: string }> }).items
    const foreignWarnings = events.filter((e) => e.reason === 'ErrResourceExists').length
    log(
      `summary: ConfigMaps ${configMaps.join(', ')}; ${events.length} events (${foreignWarnings} ErrResourceExists); syncs ${ctl.c.stats.syncs}`,
    )
    return { configMaps, garbage, foreignWarnings }
  } finally {
    await ctl.stop()
    await kv.destroy().catch(() => {})
    await nc.close()
    await cluster.close()
    await api.stop()
    await nats?.stop()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
