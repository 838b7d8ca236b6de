// Admission webhooks end to end without a cluster: the Manager serves them over TLS, the test server
// calls them from its admission pipeline as kube-apiserver does (CREATE, UPDATE and DELETE; rules, object and namespace
// selectors, dry-run and sideEffects, failurePolicy, timeoutSeconds, garbage answers), and the write
// is admitted, mutated or refused with kube-apiserver's words naming the webhook.
// Follows controller-runtime's webhook server (pkg/webhook/admission: Denied is 403, an error 500,
// a mutation a JSON Patch) and kube-apiserver's dispatcher (webhookerrors.ToStatusErr: "admission
// webhook %q denied the request: ..."; failurePolicy Ignore skips a failed call).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer as createHttps } from 'node:https'
import { createServer as createTcp } from 'node:net'
import type { AddressInfo } from 'node:net'
import { generateTls, type TlsMaterial } from '@statewright/testserver'
import { ApiError, type KubeObject } from '@statewright/k8s'
import { ConfigError, Manager, createLogger } from '@statewright/controller'
import { webhookPath } from '@statewright/controller/webhooks'
import { GADGET, createGadget, env, gadget, type Env } from './helpers.ts'

const quiet = createLogger({ level: 'silent' })
let tls: TlsMaterial
test.before(async () => {
  tls = await generateTls(['127.0.0.1'])
})

const RULES = [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['example.com'], apiVersions: ['v1'], resources: ['gadgets'] }]
async function configure(e: Env, kind: 'Validating' | 'Mutating', name: string, hooks: Array<Record<string, unknown>>) {
  await e.cluster.request({
    method: 'POST',
    path: `/apis/admissionregistration.k8s.io/v1/${kind.toLowerCase()}webhookconfigurations`,
    body: { apiVersion: 'admissionregistration.k8s.io/v1', kind: `${kind}WebhookConfiguration`, metadata: { name }, webhooks: hooks },
  })
}
const hook = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
  name,
  admissionReviewVersions: ['v1'],
  sideEffects: 'None',
  clientConfig: { url, caBundle: Buffer.from(tls.caPem).toString('base64') },
  rules: RULES,
  ...extra,
})
const refused = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e) => e,
  )
  assert.instance(err, ApiError, 'refused')
  return err as ApiError
}

async function withManager(fn: (e: Env, m: Manager) => Promise<void>) {
  const e = await env()
  const m = new Manager({
    name: 'gadget-webhooks',
    cluster: e.cluster,
    logger: quiet,
    handleSignals: false,
    http: false,
    webhooks: { port: 0, host: '127.0.0.1', cert: tls },
  })
  m.webhook<KubeObject>({
    for: GADGET,
    validate: (g, ctx) => {
      if (ctx.operation === 'DELETE') return g.metadata.labels?.protected === 'true' ? `${g.metadata.name} is protected` : undefined
      const size = Number((g.spec as any)?.size ?? 0)
      if ((g.spec as any)?.explode) throw new Error('the validator broke')
      if (size > 10) return `spec.size must be at most 10, not ${size}`
      if (size > 5) ctx.warn('spec.size above 5 is slow')
      return undefined
    },
    mutate: (g) => ({
      ...g,
      metadata: { ...g.metadata, labels: { ...(g.metadata.labels ?? {}), sized: String((g.spec as any)?.size ?? 0) } },
    }),
  })
  try {
    await m.start()
    await fn(e, m)
  } finally {
    await m.stop()
    await e.stop()
  }
}

test('validating and mutating webhooks over TLS: admitted and mutated, refused naming the webhook, warnings, a throwing validator', async () => {
  await withManager(async (e, m) => {
    await configure(e, 'Mutating', 'gadgets-m', [hook('mgadget.example.com', m.webhookUrl + webhookPath(GADGET, 'mutate'))])
    await configure(e, 'Validating', 'gadgets-v', [hook('vgadget.example.com', m.webhookUrl + webhookPath(GADGET, 'validate'))])
    const ok = await createGadget(e.cluster, gadget('small', { size: 3 }))
    assert.is(ok.metadata.labels?.sized, '3', 'the mutating webhook labelled it')
    const big = await refused(createGadget(e.cluster, gadget('big', { size: 20 })))
    assert.is(big.code, 403)
    assert.match(big.message, 'admission webhook "vgadget.example.com" denied the request: spec.size must be at most 10, not 20')
    assert.is(e.server.control.get(GADGET, 'big', 'default'), undefined)
    const upd = await refused(
      e.cluster.request({
        method: 'PATCH',
        path: '/apis/example.com/v1/namespaces/default/gadgets/small',
        body: { spec: { size: 11 } },
        contentType: 'application/merge-patch+json',
      }),
    )
    assert.match(upd.message, 'not 11', 'updates are validated too')
    const res = await fetch(`${e.server.url}/apis/example.com/v1/namespaces/default/gadgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${e.server.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(gadget('slow', { size: 7 })),
    })
    assert.is(res.status, 201)
    assert.match(res.headers.get('warning') ?? '', 'spec.size above 5 is slow')
    const broke = await refused(createGadget(e.cluster, gadget('broken', { explode: true })))
    assert.is(broke.code, 500)
    assert.match(broke.message, 'the validator broke')
    assert.ok(await createGadget(e.cluster, gadget('after', { size: 1 })), 'the webhook server keeps serving')
  })
})

test('selectors and dry-run: objectSelector and namespaceSelector pick the objects; dry-run needs sideEffects None', async () => {
  await withManager(async (e, m) => {
    const url = m.webhookUrl + webhookPath(GADGET, 'validate')
    await configure(e, 'Validating', 'gadgets-v', [
      hook('vgadget.example.com', url, { objectSelector: { matchLabels: { checked: 'true' } } }),
      hook('ns.gadget.example.com', url, { namespaceSelector: { matchLabels: { strict: 'yes' } } }),
    ])
    assert.ok(await createGadget(e.cluster, gadget('unchecked', { size: 50 })), 'neither selector matches')
    await refused(createGadget(e.cluster, gadget('checked', { size: 50 }, { labels: { checked: 'true' } })))
    await e.cluster.request({
      method: 'PATCH',
      path: '/api/v1/namespaces/default',
      body: { metadata: { labels: { strict: 'yes' } } },
      contentType: 'application/merge-patch+json',
    })
    const ns = await refused(createGadget(e.cluster, gadget('in-strict-ns', { size: 50 })))
    assert.match(ns.message, 'admission webhook "ns.gadget.example.com" denied')
    const dry = await refused(
      e.cluster.request({
        method: 'POST',
        path: '/apis/example.com/v1/namespaces/default/gadgets',
        query: { dryRun: 'All' },
        body: gadget('d', { size: 50 }),
      }),
    )
    assert.match(dry.message, 'denied', 'a dry run reaches a webhook without side effects')
    await configure(e, 'Validating', 'side-effects', [hook('fx.gadget.example.com', url, { sideEffects: 'Unknown' })])
    const fx = await refused(
      e.cluster.request({
        method: 'POST',
        path: '/apis/example.com/v1/namespaces/default/gadgets',
        query: { dryRun: 'All' },
        body: gadget('d2', {}),
      }),
    )
    assert.is(fx.code, 400)
    assert.match(fx.message, 'admission webhook "fx.gadget.example.com" does not support dry run')
  })
})

test('DELETE: a validating webhook gets the stored object and may refuse its deletion (dry runs too)', async () => {
  await withManager(async (e, m) => {
    await createGadget(e.cluster, gadget('keep', {}, { labels: { protected: 'true' } }))
    await createGadget(e.cluster, gadget('free', {}))
    const url = m.webhookUrl + webhookPath(GADGET, 'validate')
    await configure(e, 'Validating', 'deletes', [hook('del.gadget.example.com', url, { rules: [{ ...RULES[0], operations: ['DELETE'] }] })])
    const path = '/apis/example.com/v1/namespaces/default/gadgets'
    const kept = await refused(e.cluster.request({ method: 'DELETE', path: `${path}/keep` }))
    assert.is(kept.code, 403)
    assert.match(kept.message, 'admission webhook "del.gadget.example.com" denied the request: keep is protected')
    assert.ok(e.server.control.get(GADGET, 'keep', 'default'), 'still there')
    await refused(e.cluster.request({ method: 'DELETE', path: `${path}/keep`, query: { dryRun: 'All' } }))
    await e.cluster.request({ method: 'DELETE', path: `${path}/free` })
    assert.is(e.server.control.get(GADGET, 'free', 'default'), undefined)
  })
})

test('bad webhooks: a timeout and a garbage answer fail the write under failurePolicy Fail, are skipped under Ignore', async () => {
  const e = await env()
  const silent = createTcp(() => {}) // accepts and never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
  const garbage = createHttps({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'not-yours', allowed: true } }))
    })
  })
  await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', r))
  const port = (s: { address(): unknown }) => (s.address() as AddressInfo).port
  try {
    await configure(e, 'Validating', 'timeout', [hook('slow.example.com', `https://127.0.0.1:${port(silent)}/`, { timeoutSeconds: 1 })])
    const slow = await refused(createGadget(e.cluster, gadget('a')))
    assert.is(slow.code, 500)
    assert.match(slow.message, 'failed calling webhook "slow.example.com": no answer within 1 s (timeoutSeconds)')
    await e.cluster.request({ method: 'DELETE', path: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/timeout' })
    await configure(e, 'Validating', 'garbage', [hook('junk.example.com', `https://127.0.0.1:${port(garbage)}/`)])
    const junk = await refused(createGadget(e.cluster, gadget('b')))
    assert.match(junk.message, `failed calling webhook "junk.example.com": the answer's response.uid is not the request's`)
    await e.cluster.request({ method: 'DELETE', path: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/garbage' })
    await configure(e, 'Validating', 'ignored', [
      hook('slow.example.com', `https://127.0.0.1:${port(silent)}/`, { timeoutSeconds: 1, failurePolicy: 'Ignore' }),
      hook('junk.example.com', `https://127.0.0.1:${port(garbage)}/`, { failurePolicy: 'Ignore' }),
    ])
    assert.ok(await createGadget(e.cluster, gadget('c')), 'Ignore: the write goes through')
  } finally {
    silent.close()
    garbage.close()
    await e.stop()
  }
})

test('bad input: a webhook server without a certificate fails start naming the directory; a webhook with nothing to do', async () => {
  const e = await env()
  const m = new Manager({
    name: 'nocert',
    cluster: e.cluster,
    logger: quiet,
    handleSignals: false,
    http: false,
    webhooks: { port: 0, certDir: '/nonexistent/certs' },
  })
  try {
    assert.throws(() => m.webhook({ for: GADGET }), /give validate, mutate or both/)
    m.webhook({ for: GADGET, validate: () => undefined })
    const err = await m.start().then(
      () => undefined,
      (x) => x,
    )
    assert.instance(err, ConfigError)
    assert.match(err.message, 'webhook server: no certificate in /nonexistent/certs (tls.crt and tls.key')
  } finally {
    await m.stop()
    await e.stop()
  }
})

test.run()
