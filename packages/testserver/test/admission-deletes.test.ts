// Validating admission webhooks on every DELETE the real server admits: each item of a
// deletecollection gets its own DELETE review, the garbage collector's deletes are admitted too (they
// go through the API on a real cluster), and a Service reference is reached through serviceResolver.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer, type Server } from 'node:https'
import { env, http, cm, waitFor, type Env } from './helpers.ts'
import { generateTls } from '../src/index.ts'

interface Hook {
  port: number
  caBundle: string
  reviews: any[]
  close(): Promise<void>
}
/** A validating webhook that denies the DELETE of anything labelled keep=true. */
async function startHook(): Promise<Hook> {
  const tls = await generateTls(['127.0.0.1', 'guard.default.svc'])
  const reviews: any[] = []
  const server: Server = createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      reviews.push(review.request)
      const keep = review.request.oldObject?.metadata?.labels?.keep === 'true'
      const response = { uid: review.request.uid, allowed: !keep, ...(keep ? { status: { code: 403, message: 'kept' } } : {}) }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    port: (server.address() as any).port,
    caBundle: Buffer.from(tls.caPem).toString('base64'),
    reviews,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

let hook: Hook
let e: Env
test.before(async () => {
  hook = await startHook()
  e = await env({ serviceResolver: (_ns, _name, _port) => `https://127.0.0.1:${hook.port}` })
  const cfg = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'guard' },
    webhooks: [
      {
        name: 'guard.example.com',
        // a Service reference: reached through the serviceResolver option, certificate for guard.default.svc
        clientConfig: { service: { namespace: 'default', name: 'guard', port: 443, path: '/validate' }, caBundle: hook.caBundle },
        rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        objectSelector: { matchExpressions: [{ key: 'guarded', operator: 'Exists' }] },
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  }
  const res = await http(e, 'POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', cfg)
  assert.is(res.status, 201, JSON.stringify(res.body))
})
test.after(async () => {
  await e.server.stop()
  await hook.close()
})

test('deletecollection: each item is admitted as a DELETE of its own; a denial fails it with the webhook message', async () => {
  for (const n of ['a', 'b', 'c'])
    assert.is((await http(e, 'POST', '/api/v1/namespaces/default/configmaps', cm(n, {}, { guarded: '', set: 'one' }))).status, 201)
  hook.reviews.length = 0
  const res = await http(e, 'DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=set%3Done')
  assert.is(res.status, 200, JSON.stringify(res.body))
  assert.equal(
    hook.reviews.map((r) => [r.operation, r.name, r.object, r.oldObject.metadata.name]),
    ['a', 'b', 'c'].map((n) => ['DELETE', n, null, n]),
  )
  for (const n of ['d', 'e'])
    assert.is(
      (
        await http(
          e,
          'POST',
          '/api/v1/namespaces/default/configmaps',
          cm(n, {}, { guarded: '', set: 'two', ...(n === 'e' ? { keep: 'true' } : {}) }),
        )
      ).status,
      201,
    )
  const denied = await http(e, 'DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=set%3Dtwo')
  assert.is(denied.status, 403)
  assert.is(denied.body.message, 'admission webhook "guard.example.com" denied the request: kept')
  assert.is((await http(e, 'GET', '/api/v1/namespaces/default/configmaps/d')).status, 404, 'd came first and was deleted')
  assert.is((await http(e, 'GET', '/api/v1/namespaces/default/configmaps/e')).status, 200, 'e was kept')
})

test('garbage collector: its deletes are admitted; a denied one leaves the dependent', async () => {
  const owner = (await http(e, 'POST', '/api/v1/namespaces/default/configmaps', cm('owner'))).body
  const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }
  for (const [n, keep] of [
    ['dep', false],
    ['held', true],
  ] as const) {
    const body = cm(n, {}, { guarded: '', ...(keep ? { keep: 'true' } : {}) })
    assert.is(
      (await http(e, 'POST', '/api/v1/namespaces/default/configmaps', { ...body, metadata: { ...body.metadata, ownerReferences: [ref] } }))
        .status,
      201,
    )
  }
  hook.reviews.length = 0
  assert.is((await http(e, 'DELETE', '/api/v1/namespaces/default/configmaps/owner')).status, 200)
  await waitFor(async () => (await http(e, 'GET', '/api/v1/namespaces/default/configmaps/dep')).status === 404, 'dep collected')
  await waitFor(() => hook.reviews.length === 2, 'both deletes reviewed')
  assert.equal(hook.reviews.map((r) => r.name).sort(), ['dep', 'held'])
  assert.is((await http(e, 'GET', '/api/v1/namespaces/default/configmaps/held')).status, 200, 'the denied delete left it')
  await waitFor(() => e.server.control.gcFailures().length === 1, 'the denial recorded')
  const [failure] = e.server.control.gcFailures()
  assert.is(failure!.object, 'ConfigMap default/held')
  assert.match(failure!.message, /denied the request/)
})

test.run()
