// CRD conversion end to end, without a cluster: the Manager serves /convert (ExternalJob: v2 the
// hub and storage version, v1 lossy, v3), installs the CRD pointing at it, and the test server calls
// it as kube-apiserver does on every write and read at a version other than the stored one. The
// controller watches and writes status through the v1 spoke while objects are stored in v2, so its
// list, its watch events and its status writes all go through the webhook.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { generateTls, startTestServer, type RunningTestServer } from '@statewright/testserver'
import { ApiError, Cluster, type KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { ExternalJob, RETRIES_ANNOTATION } from './conversion-kind.ts'

const G = 'jobs.example.com'
const at = (version: string, name = '') => `/apis/${G}/${version}/namespaces/default/externaljobs${name ? `/${name}` : ''}`
let server: RunningTestServer
let client: Cluster
let m: Manager
let reconciled: string[] = []

test.before(async () => {
  const tls = await generateTls(['127.0.0.1'])
  server = await startTestServer()
  client = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  m = new Manager({
    name: 'jobs',
    cluster: new Cluster({ kubeconfig: server.kubeconfig, qps: 0 }),
    logger: createLogger({ level: 'silent' }),
    handleSignals: false,
    http: false,
    webhooks: { port: 0, host: '127.0.0.1', cert: tls },
    installCrds: [ExternalJob],
  })
  m.webhook({ for: ExternalJob })
  // the controller is written against v1: its cache, its events and its status are v1's
  m.reconcile({
    for: ExternalJob.version('v1'),
    fn: (j) => {
      reconciled.push(`${j.apiVersion} ${j.metadata.name} ${j.spec.runAt}`)
      return { status: { lastRun: j.spec.runAt } }
    },
  })
  await m.start()
})
test.after(async () => {
  await m?.stop()
  await client?.close()
  await server?.stop()
})

test('an object written at v1 is stored at v2 and read at every served version', async () => {
  await client.request({
    method: 'POST',
    path: at('v1'),
    body: { apiVersion: `${G}/v1`, kind: 'ExternalJob', metadata: { name: 'nightly' }, spec: { runAt: '02:00' } },
  })
  const v2 = await client.request<KubeObject & { spec: any }>({ method: 'GET', path: at('v2', 'nightly') })
  assert.is(v2.apiVersion, `${G}/v2`)
  assert.equal(v2.spec, { scheduleAt: '02:00' }, 'converted by the Manager: runAt is scheduleAt in v2')
  const v3 = await client.request<KubeObject & { spec: any }>({ method: 'GET', path: at('v3', 'nightly') })
  assert.equal(v3.spec, { deferredAt: '02:00' }, 'v1 to v3 through the hub')
  const beta = await client.request<KubeObject & { spec: any }>({ method: 'GET', path: at('v2beta1', 'nightly') })
  assert.equal([beta.apiVersion, beta.spec], [`${G}/v2beta1`, { scheduleAt: '02:00' }], 'the same schema: renamed only')
})

test('the v1 controller reconciles through conversion: its status written at v1 is v2 status', async () => {
  await waitForConvergence(m, { timeoutMs: 20_000 })
  assert.ok(reconciled.includes(`${G}/v1 nightly 02:00`), reconciled.join('; '))
  const v2 = await client.request<KubeObject & { status?: any }>({ method: 'GET', path: at('v2', 'nightly') })
  assert.is(v2.status?.lastRunAt, '02:00', 'status.lastRun (v1) stored as status.lastRunAt (v2)')
})

test('a lossy field survives a round trip through v1 (kept in an annotation), and v1 watch events are converted', async () => {
  await client.request({
    method: 'POST',
    path: at('v2'),
    body: { apiVersion: `${G}/v2`, kind: 'ExternalJob', metadata: { name: 'weekly' }, spec: { scheduleAt: 'sun', retries: 3 } },
  })
  const v1 = await client.request<KubeObject & { spec: any }>({ method: 'GET', path: at('v1', 'weekly') })
  assert.equal(v1.spec, { runAt: 'sun' })
  assert.is(v1.metadata.annotations?.[RETRIES_ANNOTATION], '3', 'v1 has no retries: kept in an annotation')
  // an update at v1 (a v1 client knows nothing of retries) keeps them; read-modify-write, as a client
  // does, since the controller may write the status in between (409: read again)
  for (let attempt = 0; ; attempt++) {
    const cur = await client.request<KubeObject & { spec: any }>({ method: 'GET', path: at('v1', 'weekly') })
    const put = await client.request({ method: 'PUT', path: at('v1', 'weekly'), body: { ...cur, spec: { runAt: 'mon' } } }).then(
      () => undefined,
      (e: unknown) => e,
    )
    if (put === undefined) break
    if (!(put instanceof ApiError && put.code === 409) || attempt > 20) throw put
  }
  const v2 = await client.request<KubeObject & { spec: any }>({ method: 'GET', path: at('v2', 'weekly') })
  assert.equal(v2.spec, { scheduleAt: 'mon', retries: 3 })
  assert.not.ok(v2.metadata.annotations?.[RETRIES_ANNOTATION], 'the annotation is v1-only')
  await waitForConvergence(m, { timeoutMs: 20_000 })
  assert.ok(reconciled.includes(`${G}/v1 weekly mon`), `the update reached the v1 controller: ${reconciled.join('; ')}`)
})

test('a conversion the Manager refuses fails the write with kube-apiserver wording; the server and the Manager go on', async () => {
  const err = await client
    .request({
      method: 'POST',
      path: at('v1'),
      body: { apiVersion: `${G}/v1`, kind: 'ExternalJob', metadata: { name: 'bad' }, spec: { runAt: 'explode' } },
    })
    .then(
      () => undefined,
      (e: Error) => e,
    )
  assert.ok(err, 'refused')
  assert.match(String(err), /conversion webhook for jobs\.example\.com\/v1, Kind=ExternalJob failed/)
  assert.match(String(err), /runAt "explode" cannot be converted/)
  const list = await client.request<{ items: KubeObject[] }>({ method: 'GET', path: at('v1') })
  assert.equal(list.items.map((o) => o.metadata.name).sort(), ['nightly', 'weekly'], 'nothing half-stored')
  await waitForConvergence(m, { timeoutMs: 20_000 })
})

test.run()
