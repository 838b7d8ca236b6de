// A continue token whose version was compacted: 410 Expired carrying a token that continues from the
// same key at the newest version, after the apiserver storage tests' RunTestListInconsistentContinuation
// (etcd3 store.go handleCompactedErrorForPaging): the rest of the list comes from the newest state,
// so an object created after the first page, beyond the key, shows up.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, cm, type Env } from './helpers.ts'

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

const LIST = '/api/v1/namespaces/default/configmaps'
const names = (body: any) => body.items.map((i: any) => i.metadata.name)

test('RunTestListInconsistentContinuation: 410 with an inconsistent-list token; it continues at the newest version', async () => {
  for (const n of ['a', 'b', 'c']) assert.is((await http(e, 'POST', LIST, cm(n, { v: '1' }))).status, 201)
  const first = await http(e, 'GET', `${LIST}?limit=1`)
  assert.equal(names(first.body), ['a'])
  // writes after the first page, then the history that page's version needs is compacted away
  await http(e, 'PUT', `${LIST}/b`, cm('b', { v: '2' }))
  await http(e, 'POST', LIST, cm('d', {}))
  e.server.control.compact()
  const expired = await http(e, 'GET', `${LIST}?limit=1&continue=${encodeURIComponent(first.body.metadata.continue)}`)
  assert.is(expired.status, 410)
  assert.is(expired.body.reason, 'Expired')
  assert.is(
    expired.body.message,
    'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
  )
  const token = expired.body.metadata?.continue
  assert.type(token, 'string')
  // the new token lists the rest from after "a", at the newest version: b's update and d are seen
  const rest = await http(e, 'GET', `${LIST}?limit=2&continue=${encodeURIComponent(token)}`)
  assert.is(rest.status, 200, JSON.stringify(rest.body))
  assert.equal(names(rest.body), ['b', 'c'])
  assert.is(rest.body.items[0].data.v, '2')
  assert.is(rest.body.metadata.resourceVersion, String(e.server.control.resourceVersion()))
  const last = await http(e, 'GET', `${LIST}?limit=2&continue=${encodeURIComponent(rest.body.metadata.continue)}`)
  assert.equal(
    names(last.body).filter((n: string) => n !== 'kube-root-ca.crt'),
    ['d'],
  )
})

test.run()
