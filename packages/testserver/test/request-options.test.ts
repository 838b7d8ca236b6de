// Request options a real kube-apiserver validates or honours, and the answers it gives
// (issue 30's bugs list): dry-run deletes, dryRun values, resourceVersionMatch combinations, a uid in
// a PUT body as a precondition, deletecollection's answer, continue tokens and Exact reads at past versions.
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

const CMS = '/api/v1/namespaces/default/configmaps'

test('dryRun=All on DELETE answers as if deleted and deletes nothing (object, finalizers, namespace, collection)', async () => {
  await http(e, 'POST', CMS, cm('dry-a'))
  await http(e, 'POST', CMS, { ...cm('dry-b'), metadata: { name: 'dry-b', finalizers: ['x.io/hold'] } })
  const rv = e.server.control.resourceVersion()
  const del = await http(e, 'DELETE', `${CMS}/dry-a?dryRun=All`)
  assert.is(del.status, 200)
  const fin = await http(e, 'DELETE', `${CMS}/dry-b?dryRun=All`)
  assert.ok(fin.body.metadata.deletionTimestamp, 'answers with the deletionTimestamp it would set')
  const body = await http(e, 'DELETE', `${CMS}/dry-a`, { kind: 'DeleteOptions', apiVersion: 'v1', dryRun: ['All'] })
  assert.is(body.status, 200)
  await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'dry-ns' } })
  const rv2 = e.server.control.resourceVersion()
  const ns = await http(e, 'DELETE', '/api/v1/namespaces/dry-ns?dryRun=All')
  assert.is(ns.body.status.phase, 'Terminating')
  const coll = await http(e, 'DELETE', `${CMS}?dryRun=All`)
  assert.is(coll.body.kind, 'ConfigMapList')
  assert.equal(coll.body.items.map((i: any) => i.metadata.name).sort(), ['dry-a', 'dry-b', 'kube-root-ca.crt'])
  assert.is(e.server.control.resourceVersion(), rv2, 'nothing written')
  assert.ok(rv2 > rv)
  assert.ok(e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'dry-a'))
  assert.not.ok(e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'dry-b').metadata.deletionTimestamp)
  assert.is(e.server.control.get({ apiVersion: 'v1', kind: 'Namespace' }, 'dry-ns').status.phase, 'Active')
})

test('dryRun other than All is 422 Invalid naming the options kind, and nothing is written', async () => {
  const res = await http(e, 'POST', `${CMS}?dryRun=true`, cm('dry-true'))
  assert.is(res.status, 422)
  assert.is(res.body.reason, 'Invalid')
  assert.is(res.body.details.kind, 'CreateOptions')
  assert.is(res.body.details.causes[0].field, 'dryRun')
  assert.match(res.body.message, 'supported values: "All"')
  assert.is(e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'dry-true'), undefined)
  assert.is((await http(e, 'DELETE', `${CMS}/dry-a?dryRun=1`)).body.details.kind, 'DeleteOptions')
})

test('resourceVersionMatch combinations a real server forbids are 422 on list and watch', async () => {
  const cases: Array<[string, string]> = [
    ['resourceVersionMatch=Exact', 'resourceVersionMatch is forbidden unless resourceVersion is provided'],
    ['resourceVersionMatch=Exact&resourceVersion=0', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'],
    ['resourceVersionMatch=Sometimes&resourceVersion=1', 'Unsupported value: "Sometimes"'],
    ['resourceVersionMatch=NotOlderThan&resourceVersion=1&continue=abc', 'resourceVersionMatch is forbidden when continue is provided'],
    ['sendInitialEvents=true', 'sendInitialEvents is forbidden for list'],
    ['watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1', 'forbidden for watch unless sendInitialEvents is provided'],
    ['watch=1&sendInitialEvents=true', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'],
  ]
  for (const [q, msg] of cases) {
    const res = await http(e, 'GET', `${CMS}?${q}`)
    assert.is(res.status, 422, q)
    assert.is(res.body.details.kind, 'ListOptions', q)
    assert.match(res.body.message, msg, q)
  }
  assert.is((await http(e, 'GET', `${CMS}?resourceVersionMatch=NotOlderThan&resourceVersion=1`)).status, 200)
})

test('a PUT or patch carrying another object uid is 409 Precondition failed: UID', async () => {
  const a = (await http(e, 'POST', CMS, cm('uid-a', { v: '1' }))).body
  const b = (await http(e, 'POST', CMS, cm('uid-b', { v: '1' }))).body
  const res = await http(e, 'PUT', `${CMS}/uid-b`, {
    ...a,
    metadata: { ...a.metadata, name: 'uid-b', resourceVersion: undefined },
    data: { v: 'a' },
  })
  assert.is(res.status, 409)
  assert.match(res.body.message, `Precondition failed: UID in precondition: ${a.metadata.uid}, UID in object meta: ${b.metadata.uid}`)
  const patched = await http(e, 'PATCH', `${CMS}/uid-b`, { metadata: { uid: a.metadata.uid } }, 'application/merge-patch+json')
  assert.is(patched.status, 409)
  assert.is(e.server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'uid-b').data.v, '1')
})

test('deletecollection answers the list of deleted objects', async () => {
  await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'coll' } })
  for (const n of ['c1', 'c2', 'c3'])
    await http(e, 'POST', '/api/v1/namespaces/coll/configmaps', cm(n, {}, { del: n === 'c3' ? 'no' : 'yes' }, 'coll'))
  const res = await http(e, 'DELETE', '/api/v1/namespaces/coll/configmaps?labelSelector=del%3Dyes')
  assert.is(res.status, 200)
  assert.is(res.body.kind, 'ConfigMapList')
  assert.equal(
    res.body.items.map((i: any) => i.metadata.name),
    ['c1', 'c2'],
  )
  const left = await http(e, 'GET', '/api/v1/namespaces/coll/configmaps')
  assert.equal(
    left.body.items.map((i: any) => i.metadata.name),
    ['c3', 'kube-root-ca.crt'],
  )
})

test('continue tokens stay valid while the history covers them, however many other lists run', async () => {
  await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'pages' } })
  const P = '/api/v1/namespaces/pages/configmaps'
  for (let i = 0; i < 5; i++) await http(e, 'POST', P, cm(`p${i}`, {}, undefined, 'pages'))
  await http(e, 'DELETE', `${P}/kube-root-ca.crt`) // every namespace has it: out of the way of the pages
  const first = (await http(e, 'GET', `${P}?limit=2`)).body
  // 100 other paginated lists, each at a new version (a write in between), used to push the token out
  for (let i = 0; i < 100; i++) {
    await http(e, 'POST', P, cm(`q${i}`, {}, undefined, 'pages'))
    await http(e, 'GET', `${P}?limit=1`)
  }
  await http(e, 'DELETE', `${P}/p3`)
  const next = await http(e, 'GET', `${P}?limit=2&continue=${encodeURIComponent(first.metadata.continue)}`)
  assert.is(next.status, 200, JSON.stringify(next.body))
  assert.equal(
    next.body.items.map((i: any) => i.metadata.name),
    ['p2', 'p3'],
    'the first page version: p3 still there, q* not yet',
  )
  assert.is(next.body.metadata.resourceVersion, first.metadata.resourceVersion)
})

test('resourceVersionMatch=Exact reads a recent past version; one older than the history is 410', async () => {
  await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'exact' } })
  const P = '/api/v1/namespaces/exact/configmaps'
  await http(e, 'DELETE', `${P}/kube-root-ca.crt`)
  await http(e, 'POST', P, cm('x1', { v: '1' }, undefined, 'exact'))
  const at = e.server.control.resourceVersion()
  await http(e, 'PATCH', `${P}/x1`, { data: { v: '2' } }, 'application/merge-patch+json')
  await http(e, 'POST', P, cm('x2', {}, undefined, 'exact'))
  const past = await http(e, 'GET', `${P}?resourceVersion=${at}&resourceVersionMatch=Exact`)
  assert.is(past.status, 200, JSON.stringify(past.body))
  assert.equal(
    past.body.items.map((i: any) => [i.metadata.name, i.data.v]),
    [['x1', '1']],
  )
  assert.is(past.body.metadata.resourceVersion, String(at))
  e.server.control.compact()
  assert.is((await http(e, 'GET', `${P}?resourceVersion=${at}&resourceVersionMatch=Exact`)).status, 410)
})

test('YAML request bodies (create and apply); a body over 3 MiB is 413', async () => {
  const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v # a comment\n'
  const res = await http(e, 'POST', CMS, yaml, 'application/yaml')
  assert.is(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.data, { k: 'v' })
  const applied = await http(
    e,
    'PATCH',
    `${CMS}/from-yaml?fieldManager=y&force=true`,
    yaml.replace('k: v', 'k: w'),
    'application/apply-patch+yaml',
  )
  assert.is(applied.status, 200, JSON.stringify(applied.body))
  assert.equal(applied.body.data, { k: 'w' })
  const huge = await http(e, 'POST', CMS, JSON.stringify(cm('huge', { a: 'x'.repeat(3.2 * 1024 * 1024) })))
  assert.is(huge.status, 413)
})

test('Accept: as=Table answers a server-side Table (columns, rows with metadata)', async () => {
  const accept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json'
  const res = await fetch(`${e.server.url}${CMS}?limit=2`, { headers: { authorization: `Bearer ${e.server.token}`, accept } })
  const table: any = await res.json()
  assert.is(table.kind, 'Table')
  assert.equal(
    table.columnDefinitions.map((c: any) => c.name),
    ['Name', 'Data', 'Age'],
  )
  assert.is(table.rows.length, 2)
  assert.is(table.rows[0].object.kind, 'PartialObjectMetadata')
  assert.ok(table.metadata.continue, 'pagination carried over')
  // kubectl get -w: each watch event carries a one-row Table
  const ctrl = new AbortController()
  const res2 = await fetch(`${e.server.url}${CMS}?watch=1`, {
    headers: { authorization: `Bearer ${e.server.token}`, accept },
    signal: ctrl.signal,
  })
  const reader = res2.body!.getReader()
  const { value } = await reader.read()
  ctrl.abort()
  const first = JSON.parse(new TextDecoder().decode(value).split('\n')[0]!)
  assert.is(first.type, 'ADDED')
  assert.is(first.object.kind, 'Table')
  assert.is(first.object.rows.length, 1)
})

test.run()
