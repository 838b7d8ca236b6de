// matchPolicy for admission webhooks (admissionregistration/v1; Equivalent is the default), after
// kube-apiserver's test/integration/apiserver/admissionwebhook/admission_test.go (TestWebhookAdmission*:
// a webhook registered for one version of a resource is called for writes of its equivalent
// versions, with the object converted, `kind`/`resource` of the version it registered for and
// `requestKind`/`requestResource` of the write), here with a CRD served as v1beta1 and v1.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer, type Server } from 'node:https'
import { env, http, type Env } from './helpers.ts'
import { generateTls } from '../src/index.ts'

interface Hook {
  url: string
  caBundle: string
  reviews: any[]
  close(): Promise<void>
}
/** /validate denies a shrinking spec.size; /mutate labels the object `seen: <apiVersion it saw>`. */
async function startHook(): Promise<Hook> {
  const tls = await generateTls(['127.0.0.1'])
  const reviews: any[] = []
  const server: Server = createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      const r = review.request
      reviews.push({ path: req.url, ...r })
      let response: any = { uid: r.uid, allowed: true }
      if (req.url === '/validate' && r.oldObject && r.object.spec.size < r.oldObject.spec.size)
        response = { uid: r.uid, allowed: false, status: { code: 422, message: 'size may not shrink' } }
      if (req.url === '/mutate') {
        const patch = [{ op: 'add', path: '/metadata/labels', value: { seen: r.object.apiVersion.replace('/', '.') } }]
        response = { ...response, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') }
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `https://127.0.0.1:${(server.address() as any).port}`,
    caBundle: Buffer.from(tls.caPem).toString('base64'),
    reviews,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

const G = 'volumes.example.com'
const schema = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } }
const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `claims.${G}` },
  spec: {
    group: G,
    scope: 'Namespaced',
    names: { plural: 'claims', kind: 'Claim' },
    versions: [
      { name: 'v1beta1', served: true, storage: false, schema },
      { name: 'v1', served: true, storage: true, schema },
    ],
  },
}
const path = (v: string, name = '') => `/apis/${G}/${v}/namespaces/default/claims${name ? `/${name}` : ''}`
const claim = (v: string, name: string, size: number, resourceVersion?: string) => ({
  apiVersion: `${G}/${v}`,
  kind: 'Claim',
  metadata: { name, ...(resourceVersion ? { resourceVersion } : {}) },
  spec: { size },
})

let hook: Hook
let e: Env
test.before(async () => {
  hook = await startHook()
  e = await env()
  assert.is((await http(e, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CRD)).status, 201)
})
test.after(async () => {
  await e.server.stop()
  await hook.close()
})

async function configure(kind: 'Validating' | 'Mutating', name: string, urlPath: string, matchPolicy?: string): Promise<void> {
  const cfg = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: `${kind}WebhookConfiguration`,
    metadata: { name },
    webhooks: [
      {
        name: `${name}.example.com`,
        clientConfig: { url: `${hook.url}${urlPath}`, caBundle: hook.caBundle },
        rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [G], apiVersions: ['v1'], resources: ['claims'] }],
        ...(matchPolicy ? { matchPolicy } : {}),
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  }
  const r = await http(e, 'POST', `/apis/admissionregistration.k8s.io/v1/${kind.toLowerCase()}webhookconfigurations`, cfg)
  assert.is(r.status, 201, JSON.stringify(r.body))
}
const remove = (kind: string, name: string) =>
  http(e, 'DELETE', `/apis/admissionregistration.k8s.io/v1/${kind}webhookconfigurations/${name}`)

test('Equivalent (the default): a v1 webhook is called for a v1beta1 write, sees v1, and its denial stands', async () => {
  await configure('Validating', 'shrink', '/validate')
  const created = await http(e, 'POST', path('v1beta1'), claim('v1beta1', 'a', 10))
  assert.is(created.status, 201, JSON.stringify(created.body))
  const shrink = await http(e, 'PUT', path('v1beta1', 'a'), claim('v1beta1', 'a', 5, created.body.metadata.resourceVersion))
  assert.is(shrink.status, 422, JSON.stringify(shrink.body))
  assert.is(shrink.body.message, 'admission webhook "shrink.example.com" denied the request: size may not shrink')
  const r = hook.reviews.at(-1)
  assert.equal(
    [r.kind, r.resource],
    [
      { group: G, version: 'v1', kind: 'Claim' },
      { group: G, version: 'v1', resource: 'claims' },
    ],
  )
  assert.equal(
    [r.requestKind, r.requestResource],
    [
      { group: G, version: 'v1beta1', kind: 'Claim' },
      { group: G, version: 'v1beta1', resource: 'claims' },
    ],
  )
  assert.equal([r.object.apiVersion, r.oldObject.apiVersion], [`${G}/v1`, `${G}/v1`])
  await remove('validating', 'shrink')
})

test('Exact: a v1 webhook is not called for a v1beta1 write', async () => {
  await configure('Validating', 'exact', '/validate', 'Exact')
  const before = hook.reviews.length
  const created = await http(e, 'POST', path('v1beta1'), claim('v1beta1', 'b', 10))
  const shrink = await http(e, 'PUT', path('v1beta1', 'b'), claim('v1beta1', 'b', 5, created.body.metadata.resourceVersion))
  assert.is(shrink.status, 200, JSON.stringify(shrink.body))
  assert.is(hook.reviews.length, before, 'not called')
  // but for a v1 write it is
  const v1 = await http(e, 'PUT', path('v1', 'b'), claim('v1', 'b', 1, shrink.body.metadata.resourceVersion))
  assert.is(v1.status, 422)
  await remove('validating', 'exact')
})

test('Equivalent, mutating: the patch applies to the v1 object, the answer comes back in v1beta1', async () => {
  await configure('Mutating', 'label', '/mutate')
  const created = await http(e, 'POST', path('v1beta1'), claim('v1beta1', 'c', 1))
  assert.is(created.status, 201, JSON.stringify(created.body))
  assert.is(created.body.apiVersion, `${G}/v1beta1`)
  assert.equal(created.body.metadata.labels, { seen: `${G}.v1` })
  await remove('mutating', 'label')
})

test.run()
