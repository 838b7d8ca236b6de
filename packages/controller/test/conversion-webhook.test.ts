// The Manager's /convert over HTTPS, driven by posting ConversionReviews as kube-apiserver does
// (apiextensions.k8s.io/v1), with fault cases (a throwing conversion, an unknown version or kind, a
// conversion that changes metadata, garbage and oversized bodies: each answered, none stopping the
// server), and the CRD as manifests() and installCrds write it. Tests marked "follows" port
// controller-runtime's pkg/webhook/conversion/conversion_test.go scenarios.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { request } from 'node:https'
import { Type } from '@sinclair/typebox'
import { generateTls, startTestServer, type RunningTestServer, type TlsMaterial } from '@statewright/testserver'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { ConfigError, Manager, createLogger } from '@statewright/controller'
import { WebhookServer } from '@statewright/controller/webhooks'
import { customKind } from '@statewright/controller/crd'
import { ExternalJob, RETRIES_ANNOTATION } from './conversion-kind.ts'

const quiet = createLogger({ level: 'silent' })
const G = 'jobs.example.com'
let tls: TlsMaterial
let server: RunningTestServer
let m: Manager
test.before(async () => {
  tls = await generateTls(['127.0.0.1'])
  server = await startTestServer()
  m = new Manager({
    name: 'jobs',
    cluster: new Cluster({ kubeconfig: server.kubeconfig, qps: 0 }),
    logger: quiet,
    handleSignals: false,
    http: false,
    webhooks: { port: 0, host: '127.0.0.1', cert: tls, maxConversionReviewBytes: 1024 * 1024 },
  })
  assert.equal(m.webhook({ for: ExternalJob }), ['/convert'], 'a convertible kind alone registers /convert')
  await m.start()
})
test.after(async () => {
  await m?.stop()
  await server?.stop()
})

/** POSTs to the Manager's webhook server trusting the test CA; the status and the parsed body. */
function post(path: string, body: string | Buffer, method = 'POST'): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(m.webhookUrl + path, { method, ca: tls.caPem, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}
const review = (desiredAPIVersion: unknown, objects: unknown, uid = 'review-1') =>
  JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid, desiredAPIVersion, objects } })
const job = (version: string, spec: object, name = 'obj-1'): KubeObject => ({
  apiVersion: `${G}/${version}`,
  kind: 'ExternalJob',
  metadata: { namespace: 'default', name, uid: `uid-${name}`, resourceVersion: '3', generation: 2, labels: { team: 'a' } },
  spec,
})
const convert = (to: string, objects: unknown[]) => post('/convert', review(`${G}/${to}`, objects))
async function failure(p: Promise<{ status: number; body: any }>): Promise<string> {
  const { status, body } = await p
  assert.is(status, 200)
  assert.is(body.response.uid, 'review-1')
  assert.is(body.response.result.status, 'Failure')
  assert.is(body.response.convertedObjects, undefined)
  return body.response.result.message
}

// follows "should convert spoke to hub successfully", "hub to spoke" and "spoke to spoke" (one
// review holding objects of several versions, as a list request's may)
test('a ConversionReview converts each object to desiredAPIVersion through the hub, keeping uid, kind and metadata', async () => {
  const objects = [
    job('v1', { runAt: 'every 2 seconds' }, 'a'),
    job('v2', { scheduleAt: 'hourly', retries: 3 }, 'b'),
    job('v3', { deferredAt: 'daily' }, 'c'),
    job('v2beta1', { scheduleAt: 'weekly' }, 'd'),
  ]
  const { status, body } = await convert('v3', objects)
  assert.is(status, 200)
  assert.is(body.apiVersion, 'apiextensions.k8s.io/v1')
  assert.is(body.kind, 'ConversionReview')
  assert.is(body.response.uid, 'review-1')
  assert.equal(body.response.result, { status: 'Success' })
  assert.equal(body.response.convertedObjects, [
    { ...objects[0], apiVersion: `${G}/v3`, spec: { deferredAt: 'every 2 seconds' } },
    { ...objects[1], apiVersion: `${G}/v3`, spec: { deferredAt: 'hourly', retries: 3 } },
    objects[2],
    { ...objects[3], apiVersion: `${G}/v3`, spec: { deferredAt: 'weekly' } },
  ])
  const down = await convert('v1', [objects[1]])
  assert.equal(down.body.response.convertedObjects[0].metadata.annotations, { [RETRIES_ANNOTATION]: '3' }, 'the lossy field is annotated')
  const empty = await convert('v1', [])
  assert.equal(empty.body.response, { uid: 'review-1', convertedObjects: [], result: { status: 'Success' } })
})

// follows "should return error on panic in conversion"
test('a throwing conversion answers Failure naming the object, both versions and the error', async () => {
  const msg = await failure(convert('v3', [job('v2', { scheduleAt: 'x' }, 'fine'), job('v1', { runAt: 'explode' }, 'bad')]))
  assert.is(
    msg,
    'objects[1]: ExternalJob default/bad from jobs.example.com/v1 to jobs.example.com/v3: v1 toHub failed: runAt "explode" cannot be converted',
  )
})

// follows "should return error when dest/src objects belong to different API groups" and "when the API
// group does not have a hub defined" (an apps/v1beta1 Deployment: a kind this webhook does not convert)
test('another group, an unknown version or an unknown kind answers Failure naming them', async () => {
  assert.match(
    await failure(post('/convert', review('jobss.example.org/v2', [job('v1', { runAt: 'x' })]))),
    'the desired apiVersion is not in group jobs.example.com',
  )
  assert.match(
    await failure(convert('v7', [job('v1', { runAt: 'x' })])),
    'objects[0]: ExternalJob default/obj-1 from jobs.example.com/v1 to jobs.example.com/v7: the desired apiVersion is of version "v7"',
  )
  assert.match(
    await failure(convert('v2', [job('v0', { runAt: 'x' })])),
    'the object is of version "v0", which ExternalJob does not have (v2, v1, v3, v2beta1)',
  )
  const deployment = { apiVersion: 'apps/v1beta1', kind: 'Deployment', metadata: { namespace: 'default', name: 'web' } }
  assert.is(
    await failure(post('/convert', review('apps/v1', [deployment]))),
    'objects[0]: Deployment default/web from apps/v1beta1 to apps/v1: this webhook converts no Deployment.apps (it converts ExternalJob.jobs.example.com)',
  )
})

test('malformed reviews: 400 without a request.uid, Failure with one; garbage and oversized bodies; the server goes on', async () => {
  assert.is((await post('/convert', 'not json{')).status, 400)
  assert.is((await post('/convert', JSON.stringify({ kind: 'AdmissionReview', request: { uid: 'x' } }))).status, 400)
  assert.is((await post('/convert', JSON.stringify({ kind: 'ConversionReview', request: {} }))).status, 400)
  assert.is((await post('/convert', 'null')).status, 400)
  assert.match(
    (await post('/convert', review(`${G}/v1`, []).replace('apiextensions.k8s.io/v1', 'apiextensions.k8s.io/v1beta1'))).body.error,
    'only apiextensions.k8s.io/v1',
  )
  assert.match(await failure(post('/convert', review(42, []))), 'request.desiredAPIVersion must be an apiVersion')
  assert.match(await failure(post('/convert', review(`${G}/v1`, { not: 'a list' }))), 'request.objects must be a list')
  assert.is(await failure(convert('v1', ['text'])), 'objects[0] is not an object')
  assert.match(await failure(convert('v1', [{ metadata: { name: 'x' } }])), 'objects[0] (x) has no apiVersion and kind')
  assert.match(
    await failure(convert('v1', [{ ...job('v2', {}), metadata: null }])),
    'objects[0]: ExternalJob from jobs.example.com/v2 has no metadata',
  )
  const huge = await post('/convert', Buffer.alloc(2 * 1024 * 1024, 'a')).catch((err: NodeJS.ErrnoException) => ({
    status: -1,
    body: err.code,
  }))
  assert.ok(
    huge.status === 413 || huge.body === 'ECONNRESET' || huge.body === 'EPIPE',
    `413 or the connection closed, not ${JSON.stringify(huge)}`,
  )
  assert.is((await post('/convert', '', 'GET')).status, 404)
  const after = await convert('v2', [job('v1', { runAt: 'still' })])
  assert.is(after.body.response.convertedObjects[0].spec.scheduleAt, 'still', 'the server keeps converting')
})

test('a conversion that changes metadata other than labels and annotations answers Failure naming the object and field', async () => {
  const Sneaky = customKind({ group: G, kind: 'Sneaky', spec: Type.Object({ a: Type.String() }) }).withVersion('v2', {
    spec: Type.Object({ a: Type.String() }),
    toHub: (s) => ({ ...s, metadata: { ...s.metadata, labels: { relabelled: 'yes' }, finalizers: ['x/y'] } }),
    fromHub: (s) => s,
  })
  const ws = new WebhookServer({ port: 0, host: '127.0.0.1', cert: tls }, quiet)
  ws.add({ for: Sneaky })
  const a = ws.conversions.review(
    JSON.parse(review(`${G}/v1`, [{ apiVersion: `${G}/v2`, kind: 'Sneaky', metadata: { name: 's', namespace: 'n' }, spec: { a: '' } }])),
  )
  assert.is(
    (a.body.response as any).result.message,
    'objects[0]: Sneaky n/s from jobs.example.com/v2 to jobs.example.com/v1: the conversion changed metadata.finalizers; a conversion may change labels and annotations only',
  )
})

test('a webhook for a kind without conversions and without validate or mutate is a ConfigError', () => {
  const ws = new WebhookServer({}, quiet)
  const plain = customKind({ group: G, kind: 'Plain', spec: Type.Object({ a: Type.String() }) })
  assert.throws(
    () => ws.add({ for: plain }),
    (e: Error) => e instanceof ConfigError && e.message.includes('webhook for Plain: give validate, mutate or both'),
  )
  const renamed = plain.withVersion('v2', { sameSchemaAsHub: true })
  assert.throws(() => ws.add({ for: renamed }), /give validate, mutate/, 'strategy None needs no webhook')
})

test('manifests(): the CRD converts through the webhook Service at /convert with the CA injected by cert-manager', () => {
  const mm = new Manager({
    name: 'jobs',
    cluster: new Cluster({ kubeconfig: server.kubeconfig, qps: 0 }),
    logger: quiet,
    handleSignals: false,
    http: false,
  })
  mm.watch(ExternalJob)
  assert.throws(() => mm.manifests(), /does not serve \/convert for ExternalJob: add m.webhook\(\{ for: ExternalJob \}\)/)
  mm.webhook({ for: ExternalJob })
  const objs = mm.manifests({ namespace: 'jobs-system' })
  const crd = objs.find((o) => o.kind === 'CustomResourceDefinition')!
  assert.is(crd.metadata.annotations?.['cert-manager.io/inject-ca-from'], 'jobs-system/jobs-webhook')
  assert.equal((crd.spec as any).conversion, {
    strategy: 'Webhook',
    webhook: {
      conversionReviewVersions: ['v1'],
      clientConfig: { service: { name: 'jobs-webhook', namespace: 'jobs-system', path: '/convert', port: 443 } },
    },
  })
  assert.equal((crd.spec as any).versions, (ExternalJob.crd.spec as any).versions, 'the versions as declared')
  assert.is((ExternalJob.crd.spec as any).conversion.webhook.clientConfig, undefined, 'the kind is not changed')
  const kinds = objs.map((o) => o.kind)
  assert.ok(kinds.includes('Service') && kinds.includes('Certificate'), 'the webhook Service and its certificate')
  assert.not.ok(kinds.includes('ValidatingWebhookConfiguration') || kinds.includes('MutatingWebhookConfiguration'), 'no admission webhooks')
  const deploy = objs.find((o) => o.kind === 'Deployment') as any
  assert.ok(deploy.spec.template.spec.containers[0].ports.some((p: any) => p.name === 'webhooks'))
})

test('installCrds: a CRD converted by this server points at its /convert (the url option or where it listens) with the CA', () => {
  const ws = new WebhookServer({ cert: tls }, quiet)
  assert.throws(() => ws.installable(ExternalJob.crd, 'https://127.0.0.1:9443'), /does not serve \/convert for ExternalJob/)
  ws.add({ for: ExternalJob })
  const crd = ws.installable(ExternalJob.crd, 'https://127.0.0.1:9443')
  assert.equal((crd.spec as any).conversion.webhook.clientConfig, {
    url: 'https://127.0.0.1:9443/convert',
    caBundle: Buffer.from(tls.caPem).toString('base64'),
  })
  const dev = new WebhookServer({ cert: tls, url: 'https://host.docker.internal:9443/' }, quiet)
  dev.add({ for: ExternalJob })
  assert.is(
    (dev.installable(ExternalJob.crd, 'https://0.0.0.0:9443').spec as any).conversion.webhook.clientConfig.url,
    'https://host.docker.internal:9443/convert',
  )
  const plain = customKind({ group: G, kind: 'Plain', spec: Type.Object({ a: Type.String() }) })
  assert.is(dev.installable(plain.crd, undefined), plain.crd, 'a CRD without a conversion webhook is installed as it is')
})

test.run()
