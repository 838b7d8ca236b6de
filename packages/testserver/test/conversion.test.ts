// Custom resources converted between their CRD's versions as kube-apiserver converts them: stored in
// the storage version of their write, read at any served version, strategy None or a conversion
// webhook (ConversionReview v1 over HTTPS). Scenarios follow apiextensions-apiserver's
// test/integration/conversion/conversion_test.go; the webhook is a small converting server (conversion-fixture.ts).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, watchAll, waitFor } from './helpers.ts'
import {
  G,
  CRD_PATH,
  path,
  toHub,
  convertObject,
  specAt,
  crd,
  converting,
  answer,
  webhook,
  mv,
  stored,
  setStorage,
  VERSIONS,
  startConverter,
  withCrd,
  type Behaviour,
  type Converter,
} from './conversion-fixture.ts'

let conv: Converter
test.before(async () => {
  conv = await startConverter()
})
test.after(async () => {
  await conv.close()
})

// follows TestWebhookConverter "nontrivial-converter" validateStorageVersion + validateMixedStorageVersions, with strategy None
test('None: objects keep the version they were stored in; storedVersions grows; a no-op update migrates', async () => {
  await withCrd(conv, undefined, async (e) => {
    assert.is((await http(e, 'POST', path('v1alpha1'), mv('v1alpha1', 'a', 1))).status, 201)
    assert.is(stored(e, 'a').apiVersion, `${G}/v1beta1`, 'stored in the storage version')
    const crdNow = await setStorage(e, 'v1beta2')
    assert.equal(crdNow.status.storedVersions, ['v1beta1', 'v1beta2'])
    assert.is((await http(e, 'POST', path('v1beta1'), mv('v1beta1', 'b', 2))).status, 201)
    assert.is(stored(e, 'a').apiVersion, `${G}/v1beta1`, 'an old object stays in its version')
    assert.is(stored(e, 'b').apiVersion, `${G}/v1beta2`)
    for (const v of VERSIONS)
      assert.is((await http(e, 'GET', path(v, 'a'))).body.apiVersion, `${G}/${v}`, 'None: only apiVersion is rewritten')
    // a no-op update of an object in an older version rewrites it in the storage version
    const cur = (await http(e, 'GET', path('v1beta1', 'a'))).body
    const res = await http(e, 'PUT', path('v1beta1', 'a'), cur)
    assert.is(res.status, 200)
    assert.is.not(res.body.metadata.resourceVersion, cur.metadata.resourceVersion)
    assert.is(stored(e, 'a').apiVersion, `${G}/v1beta2`)
    // a version still in storedVersions cannot leave spec.versions
    const c = (await http(e, 'GET', `${CRD_PATH}/multiversions.${G}`)).body
    c.spec.versions = c.spec.versions.filter((v: any) => v.name !== 'v1beta1')
    const refused = await http(e, 'PUT', `${CRD_PATH}/multiversions.${G}`, c)
    assert.is(refused.status, 422)
    assert.match(refused.body.message, 'status.storedVersions[0]: Invalid value: "v1beta1": must appear in spec.versions')
  })
})

// follows TestWebhookConverter "nontrivial-converter" validateNonTrivialConverted and validateDefaulting (write side)
test('Webhook: a write is defaulted at its version, stored converted, read converted at every version', async () => {
  await withCrd(conv, webhook(conv), async (e) => {
    for (const [i, v] of VERSIONS.entries()) {
      const body = { ...mv(v, `c-${v}`, 10 + i), garbage: 'x' }
      const res = await http(e, 'POST', path(v), body)
      assert.is(res.status, 201, JSON.stringify(res.body))
      assert.is(res.body.apiVersion, `${G}/${v}`)
      assert.is(res.body.garbage, undefined, 'pruned')
      const s = stored(e, `c-${v}`)
      assert.is(s.apiVersion, `${G}/v1beta1`)
      assert.equal(
        s.spec,
        { size: 10 + i, ...(v === 'v1beta1' ? {} : { color: v === 'v1alpha1' ? 'green' : 'blue' }) },
        'defaulted at its version',
      )
      for (const r of VERSIONS) {
        const got = (await http(e, 'GET', path(r, `c-${v}`))).body
        assert.is(got.apiVersion, `${G}/${r}`)
        assert.is(toHub(got), 10 + i)
      }
      // a patch at a version applies to the object converted there, and is stored converted back
      const p = await http(e, 'PATCH', path(v, `c-${v}`), { metadata: { annotations: { main: 'true' } } }, 'application/merge-patch+json')
      assert.is(p.status, 200, JSON.stringify(p.body))
      const st = await http(
        e,
        'PATCH',
        path(v, `c-${v}`, 'default') + '/status',
        { status: { ready: true } },
        'application/merge-patch+json',
      )
      assert.is(st.status, 200, JSON.stringify(st.body))
      assert.is(stored(e, `c-${v}`).apiVersion, `${G}/v1beta1`)
      assert.is(stored(e, `c-${v}`).spec.size, 10 + i)
      assert.is(stored(e, `c-${v}`).status.ready, true)
    }
    // /scale at a version reads and writes that version's replicas path
    const sc = await http(e, 'PUT', path('v1beta2', 'c-v1beta1') + '/scale', {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: { name: 'c-v1beta1' },
      spec: { replicas: 7 },
    })
    assert.is(sc.status, 200, JSON.stringify(sc.body))
    assert.is(stored(e, 'c-v1beta1').spec.size, 7)
  })
})

// follows TestWebhookConverter "nontrivial-converter" validateNonTrivialConvertedList; "noop-converter": objects already in the version are not sent
test('Webhook: a list is one review of the objects not in the listed version; none when all are', async () => {
  await withCrd(conv, webhook(conv), async (e) => {
    for (const [i, v] of VERSIONS.entries()) assert.is((await http(e, 'POST', path(v), mv(v, `l-${v}`, i))).status, 201)
    conv.requests.length = 0
    const same = await http(e, 'GET', path('v1beta1'))
    assert.is(same.body.items.length, 3)
    assert.is(conv.requests.length, 0, 'all stored in v1beta1: nothing sent')
    for (const v of ['v1alpha1', 'v1beta2']) {
      conv.requests.length = 0
      const list = await http(e, 'GET', path(v))
      assert.is(list.status, 200)
      assert.equal(
        list.body.items.map((o: any) => [o.apiVersion, o.metadata.name, toHub(o)]),
        VERSIONS.map((x, i) => [`${G}/${v}`, `l-${x}`, i]),
      )
      assert.is(conv.requests.length, 1, 'one review for the page')
      assert.is(conv.requests[0].objects.length, 3)
      assert.is(conv.requests[0].desiredAPIVersion, `${G}/${v}`)
    }
  })
})

// follows TestWebhookConverter "metadata-mutating": labels and annotations from the webhook are kept, other metadata restored
test('Webhook: the webhook may change labels and annotations only', async () => {
  await withCrd(conv, webhook(conv), async (e) => {
    conv.behave((review) => ({
      body: JSON.stringify(
        answer(
          review,
          review.request.objects.map((o: any) => {
            const c = convertObject(o, review.request.desiredAPIVersion)
            const m = o.metadata
            const meta = {
              ...m,
              labels: { ...m.labels, from: 'x' },
              annotations: { ...m.annotations, to: 'y' },
              finalizers: ['foo'],
              generation: 42,
              garbage: 'g',
            }
            return { ...c, metadata: meta }
          }),
        ),
      ),
    }))
    const res = await http(e, 'POST', path('v1beta2'), mv('v1beta2', 'm', 1))
    assert.is(res.status, 201, JSON.stringify(res.body))
    const got = (await http(e, 'GET', path('v1beta2', 'm'))).body
    assert.is(got.metadata.labels.from, 'x')
    assert.is(got.metadata.annotations.to, 'y')
    assert.is(got.metadata.finalizers, undefined)
    assert.is(got.metadata.generation, 1)
    assert.is(got.metadata.garbage, undefined)
  })
})

/** Each fault: a webhook behaviour and what the error must say. */
const FAULTS: Array<[string, Behaviour, string]> = [
  // follows TestWebhookConverter "metadata-uid-mutating"
  [
    'another uid in an object',
    (r) => ({
      body: JSON.stringify(
        answer(
          r,
          r.request.objects.map((o: any) => ({ ...convertObject(o, r.request.desiredAPIVersion), metadata: { ...o.metadata, uid: 'x' } })),
        ),
      ),
    }),
    'must have the same UID',
  ],
  [
    'a changed name',
    (r) => ({
      body: JSON.stringify(
        answer(
          r,
          r.request.objects.map((o: any) => ({
            ...convertObject(o, r.request.desiredAPIVersion),
            metadata: { ...o.metadata, name: 'other' },
          })),
        ),
      ),
    }),
    'must have the same name: ',
  ],
  // follows TestWebhookConverter "empty-response"
  ['a wrong count', (r) => ({ body: JSON.stringify(answer(r, [])) }), 'returned 0 objects, expected 1'],
  // follows TestWebhookConverter "failure-message"
  [
    'a failure',
    (r) => ({ body: JSON.stringify(answer(r, [], { result: { status: 'Failure', message: 'custom webhook conversion error' } })) }),
    'failed: custom webhook conversion error',
  ],
  [
    'another review uid',
    (r) => ({ body: JSON.stringify({ ...answer(r, []), response: { uid: 'nope', result: { status: 'Success' } } }) }),
    'failed: expected response.uid=',
  ],
  [
    'a wrong apiVersion',
    (r) => ({ body: JSON.stringify(answer(r, r.request.objects)) }),
    'invalid groupVersion (expected stable.example.com/v1beta',
  ],
  // follows TestWebhookConverter "unhandled": the webhook server errors
  ['a 500', () => ({ status: 500, body: 'boom' }), 'failed: the webhook answered HTTP 500'],
  ['not JSON', () => ({ body: '<html>' }), 'failed: the answer is not JSON'],
  ['no answer', () => 'hang', 'failed: no answer within 0.5 s'],
]
for (const [what, behaviour, message] of FAULTS) {
  test(`Webhook fault, ${what}: every verb at a converting version fails with a clear 500; the server keeps serving`, async () => {
    await withCrd(conv, webhook(conv), async (e) => {
      assert.is((await http(e, 'POST', path('v1beta1'), mv('v1beta1', 'f', 3))).status, 201)
      conv.behave(behaviour)
      const prefix = `conversion webhook for ${G}/v1beta`
      const verbs: Array<[string, string, string, unknown?, string?]> = [
        ['get', 'GET', path('v1beta2', 'f')],
        ['list', 'GET', path('v1beta2')],
        ['create', 'POST', path('v1beta2'), mv('v1beta2', 'g', 1)],
        ['patch', 'PATCH', path('v1beta2', 'f'), { metadata: { annotations: { a: 'b' } } }, 'application/merge-patch+json'],
        ['status-get', 'GET', path('v1beta2', 'f') + '/status'],
        ['scale-get', 'GET', path('v1beta2', 'f') + '/scale'],
        ['delete', 'DELETE', path('v1beta2', 'f')],
      ]
      for (const [verb, method, p, body, ct] of verbs) {
        const res = await http(e, method, p, body, ct)
        assert.is(res.status, 500, `${verb}: ${JSON.stringify(res.body)}`)
        assert.is(res.body.reason, 'InternalError')
        assert.match(res.body.message, prefix, verb)
        assert.match(res.body.message, message, verb)
      }
      conv.behave(converting)
      const ok = await http(e, 'GET', path('v1beta2'))
      assert.is(ok.status, 200, 'the server still serves')
    })
  })
}

test('Webhook: a watch converts its events in order, and ends with an ERROR event when a conversion fails', async () => {
  await withCrd(conv, webhook(conv), async (e) => {
    assert.is((await http(e, 'POST', path('v1beta1'), mv('v1beta1', 'w0', 0))).status, 201)
    const w = await watchAll(e.kc, path('v1beta2'))
    for (let i = 1; i <= 5; i++) assert.is((await http(e, 'POST', path('v1beta1'), mv('v1beta1', `w${i}`, i))).status, 201)
    await waitFor(() => w.events.length === 6, 'six converted events')
    assert.equal(
      w.events.map((ev) => [ev.type, ev.object.apiVersion, ev.object.metadata.name, toHub(ev.object)]),
      [0, 1, 2, 3, 4, 5].map((i) => ['ADDED', `${G}/v1beta2`, `w${i}`, i]),
    )
    conv.behave(() => ({ status: 500, body: 'down' }))
    assert.is((await http(e, 'POST', path('v1beta1'), mv('v1beta1', 'w6', 6))).status, 201, 'stored at the storage version: no conversion')
    await waitFor(() => w.events.length === 7, 'an ERROR event')
    const last = w.events[6]!
    assert.is(last.type, 'ERROR')
    assert.is(last.object.code, 500)
    assert.match(last.object.message, `conversion webhook for ${G}/v1beta1, Kind=MultiVersion failed: the webhook answered HTTP 500`)
    await w.done
    assert.is(e.server.control.watchCount(), 0, 'the watch ended')
  })
})

test('Service references: resolved by the serviceResolver option (certificate checked for <name>.<namespace>.svc), else a failure that says so', async () => {
  const port = Number(new URL(conv.url).port)
  const svc = {
    strategy: 'Webhook',
    webhook: {
      clientConfig: { service: { namespace: 'default', name: 'conv', port: 8443, path: '/convert' }, caBundle: conv.caBundle },
      conversionReviewVersions: ['v1'],
    },
  }
  const seen: unknown[] = []
  await withCrd(
    conv,
    svc,
    async (e) => {
      assert.is((await http(e, 'POST', path('v1alpha1'), mv('v1alpha1', 's', 4))).status, 201)
      assert.is(stored(e, 's').spec.size, 4)
    },
    { serviceResolver: (ns, name, p) => (seen.push([ns, name, p]), `https://127.0.0.1:${port}`) },
  )
  assert.equal(seen[0], ['default', 'conv', 8443])
  await withCrd(conv, svc, async (e) => {
    const res = await http(e, 'POST', path('v1alpha1'), mv('v1alpha1', 's', 4))
    assert.is(res.status, 500)
    assert.match(
      res.body.message,
      'clientConfig.service default/conv:8443 cannot be reached: give the test server a serviceResolver option',
    )
  })
})

test('CRD validation: a Webhook conversion needs a client config and v1 or v1beta1 among conversionReviewVersions', async () => {
  const e = await env()
  try {
    const bad = await http(e, 'POST', CRD_PATH, crd(webhook(conv, ['v2', 'v3'])))
    assert.is(bad.status, 422)
    assert.match(
      bad.body.message,
      'spec.conversion.webhook.conversionReviewVersions: Invalid value: []string{"v2", "v3"}: must include at least one of v1, v1beta1',
    )
    const none = await http(e, 'POST', CRD_PATH, crd({ strategy: 'Webhook' }))
    assert.is(none.status, 422)
    assert.match(none.body.message, 'spec.conversion.webhook: Required value')
  } finally {
    await e.server.stop()
  }
})

test('TestWebhookConverter (v1beta1 halves): a CRD listing v1beta1 first gets apiextensions.k8s.io/v1beta1 ConversionReviews', async () => {
  conv.behave(converting)
  conv.requests.length = 0
  await withCrd(conv, webhook(conv, ['v1alpha1', 'v1beta1', 'v1']), async (e) => {
    assert.is((await http(e, 'POST', path('v1beta1'), mv('v1beta1', 'b1', 1))).status, 201)
    const got = await http(e, 'GET', path('v1beta2', 'b1'))
    assert.is(got.status, 200, JSON.stringify(got.body))
    assert.is(got.body.apiVersion, `${G}/v1beta2`)
    assert.ok(conv.requests.length > 0, 'the webhook was called')
  })
  // an answer in another review version than the one sent is refused, as webhook_converter.go refuses it
  conv.behave((review) => ({
    body: JSON.stringify({
      ...answer(
        review,
        review.request.objects.map((o: any) => convertObject(o, review.request.desiredAPIVersion)),
      ),
      apiVersion: 'apiextensions.k8s.io/v1',
    }),
  }))
  await withCrd(conv, webhook(conv, ['v1beta1']), async (e) => {
    assert.is((await http(e, 'POST', path('v1beta1'), mv('v1beta1', 'b2', 1))).status, 201)
    const got = await http(e, 'GET', path('v1beta2', 'b2'))
    assert.is(got.status, 500)
    assert.match(
      got.body.message,
      'expected webhook response of apiextensions.k8s.io/v1beta1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=ConversionReview',
    )
  })
  conv.behave(converting)
})

// A plain Map model: the hub value (size) of each object. Random creates, updates, patches, deletes
// applies and reads at random versions, with the storage version moving, through the reversible webhook.
test('randomized: reads at any version equal the model, whatever version each object is stored in', async () => {
  await withCrd(conv, webhook(conv), async (e) => {
    let seed = 7
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n)
    const model = new Map<string, number>()
    conv.requests.length = 0
    for (let step = 0; step < 150; step++) {
      const v = VERSIONS[rand(3)]!
      const name = `r${rand(6)}`
      const op = rand(7)
      if (op === 0) await setStorage(e, VERSIONS[rand(3)]!)
      else if (op === 1) {
        const size = rand(1000)
        const res = await http(e, 'POST', path(v), mv(v, name, size))
        assert.is(res.status, model.has(name) ? 409 : 201, JSON.stringify(res.body))
        if (res.status === 201) model.set(name, size)
      } else if (op === 2 && model.has(name)) {
        const cur = (await http(e, 'GET', path(v, name))).body
        const size = rand(1000)
        const res = await http(e, 'PUT', path(v, name), { ...cur, spec: specAt(v, size, cur.spec.color) })
        assert.is(res.status, 200, JSON.stringify(res.body))
        model.set(name, size)
      } else if (op === 3 && model.has(name)) {
        const size = rand(1000)
        const res = await http(e, 'PATCH', path(v, name), { spec: specAt(v, size) }, 'application/merge-patch+json')
        assert.is(res.status, 200, JSON.stringify(res.body))
        assert.is(toHub(res.body), size)
        model.set(name, size)
      } else if (op === 5) {
        // follows TestWebhookNotCalledForUnusedVersions: server-side apply at any served version
        const size = rand(1000)
        const res = await http(
          e,
          'PATCH',
          path(v, name) + '?fieldManager=rnd&force=true',
          mv(v, name, size),
          'application/apply-patch+yaml',
        )
        assert.ok(res.status === 200 || res.status === 201, JSON.stringify(res.body))
        assert.is(toHub(res.body), size)
        model.set(name, size)
      } else if (op === 4 && model.has(name)) {
        assert.is((await http(e, 'DELETE', path(v, name))).status, 200)
        model.delete(name)
      } else {
        const list = (await http(e, 'GET', path(v))).body
        const got = new Map<string, number>(list.items.map((o: any) => [o.metadata.name, toHub(o)]))
        assert.equal(got, model, `list at ${v}, step ${step}`)
        assert.ok(list.items.every((o: any) => o.apiVersion === `${G}/${v}`))
      }
    }
    assert.ok(conv.requests.length > 20, `the webhook converted (${conv.requests.length} reviews)`)
  })
})

test.run()
