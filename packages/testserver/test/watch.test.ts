// WATCH through client-node's Watch and its informer: replay, 410 Expired (event and HTTP), bookmarks,
// timeoutSeconds, sendInitialEvents, selector transitions, DELETED with the deletion's version.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, waitFor, watchAll, rejects, k8s, type Env } from './helpers.ts'

let e: Env
let n = 0
const PATH = '/api/v1/namespaces/default/configmaps'
test.before(async () => {
  e = await env()
  // the namespace's kube-root-ca.crt would be one more ADDED in every watch of the namespace's ConfigMaps
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'kube-root-ca.crt' })
})
test.after(async () => {
  await e.server.stop()
})
const mk = (name: string, labels?: Record<string, string>) =>
  e.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name, ...(labels ? { labels } : {}) } } })

test('no resourceVersion: synthetic ADDED for current objects, then live events in order', async () => {
  await mk('w-a')
  await mk('w-b')
  const w = await watchAll(e.kc, PATH)
  await waitFor(() => w.events.length >= 2, 'initial ADDED')
  assert.equal(w.events.map((x) => [x.type, x.object.metadata.name]).slice(0, 2), [
    ['ADDED', 'w-a'],
    ['ADDED', 'w-b'],
  ])
  const c = await mk('w-c')
  await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'w-c', body: { data: { x: '1' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'w-c' })
  await waitFor(() => w.events.length >= 5, 'live events')
  const live = w.events.slice(2)
  assert.equal(
    live.map((x) => x.type),
    ['ADDED', 'MODIFIED', 'DELETED'],
  )
  const rvs = live.map((x) => Number(x.object.metadata.resourceVersion))
  assert.ok(rvs[0]! < rvs[1]! && rvs[1]! < rvs[2]!, 'DELETED carries the deletion version')
  assert.is(live[2]!.object.data.x, '1', 'DELETED carries the last state')
  assert.is(live[0]!.object.metadata.uid, c.metadata!.uid)
  w.abort()
})

test('resourceVersion=N replays what happened after N', async () => {
  const a = await mk('r-a')
  await mk('r-b')
  await e.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'r-a' })
  const w = await watchAll(e.kc, PATH, { resourceVersion: a.metadata!.resourceVersion })
  await waitFor(() => w.events.length >= 2, 'replay')
  assert.equal(
    w.events.map((x) => [x.type, x.object.metadata.name]),
    [
      ['ADDED', 'r-b'],
      ['DELETED', 'r-a'],
    ],
  )
  w.abort()
})

test('a resume older than the history: ERROR event with 410 Expired, or HTTP 410 as an option', async () => {
  const a = await mk('x-a')
  await mk('x-b')
  e.server.control.compact()
  const w = await watchAll(e.kc, PATH, { resourceVersion: a.metadata!.resourceVersion })
  const err = await w.done
  assert.is(err, null, 'the stream ends normally')
  assert.is(w.events.length, 1)
  assert.is(w.events[0]!.type, 'ERROR')
  assert.equal([w.events[0]!.object.code, w.events[0]!.object.reason], [410, 'Expired'])
  e.server.control.setExpiredAsHttp410(true)
  try {
    const w2 = await watchAll(e.kc, PATH, { resourceVersion: a.metadata!.resourceVersion })
    const err2 = await w2.done
    assert.is(err2?.statusCode, 410)
  } finally {
    e.server.control.setExpiredAsHttp410(false)
  }
})

// follows kube-apiserver's storage/etcd3 watcher tests of a watch-list from a future revision
// (an ERROR event carrying NewTooLargeResourceVersionError) and the cacher's LIST at a future version
test('a watch from a version the server does not have yet: one ERROR event, 504 Too large resource version (as the LIST)', async () => {
  const c = await mk('future')
  const future = String(Number(c.metadata!.resourceVersion) + 1000)
  for (const opts of [
    { resourceVersion: future },
    { resourceVersion: future, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true },
  ]) {
    const w = await watchAll(e.kc, PATH, opts)
    assert.is(await w.done, null, 'the stream ends')
    assert.equal(
      w.events.map((x) => [x.type, x.object.code, x.object.reason, x.object.details?.causes?.[0]?.reason]),
      [['ERROR', 504, 'Timeout', 'ResourceVersionTooLarge']],
    )
    assert.match(w.events[0]!.object.message, /^Too large resource version: \d+, current: \d+$/)
  }
  const list = await rejects(e.core.listNamespacedConfigMap({ namespace: 'default', resourceVersion: future }), 504, 'Timeout')
  assert.is(list.details.causes[0].reason, 'ResourceVersionTooLarge')
  // the version the server is at is not "too large"
  const w = await watchAll(e.kc, PATH, { resourceVersion: c.metadata!.resourceVersion })
  await mk('future-2')
  await waitFor(() => w.events.length >= 1, 'the event after the version')
  assert.is(w.events[0]!.type, 'ADDED')
  w.abort()
})

test('history is bounded: old versions expire by themselves', async () => {
  const small = await env({ historySize: 3 })
  try {
    const first = await small.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'h0' } } })
    for (let i = 1; i < 6; i++) await small.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `h${i}` } } })
    const w = await watchAll(small.kc, PATH, { resourceVersion: first.metadata!.resourceVersion })
    await w.done
    assert.is(w.events[0]!.object.reason, 'Expired')
    const recent = String(small.server.control.resourceVersion() - 2)
    const w2 = await watchAll(small.kc, PATH, { resourceVersion: recent })
    await waitFor(() => w2.events.length >= 2, 'replay within history')
    assert.equal(
      w2.events.map((x) => x.object.metadata.name),
      ['h4', 'h5'],
    )
    w2.abort()
  } finally {
    await small.server.stop()
  }
})

test('bookmarks at the configured interval carry only kind, apiVersion and resourceVersion', async () => {
  const w = await watchAll(e.kc, PATH, { resourceVersion: String(e.server.control.resourceVersion()), allowWatchBookmarks: true })
  e.server.control.setBookmarkInterval(20)
  try {
    await waitFor(() => w.events.some((x) => x.type === 'BOOKMARK'), 'a bookmark')
    const b = w.events.find((x) => x.type === 'BOOKMARK')!.object
    assert.equal(b, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(e.server.control.resourceVersion()) } })
  } finally {
    e.server.control.setBookmarkInterval(60_000)
    w.abort()
  }
  const plain = await watchAll(e.kc, PATH, { resourceVersion: String(e.server.control.resourceVersion()) })
  e.server.control.sendBookmarks()
  await mk(`bm-${n++}`)
  await waitFor(() => plain.events.length >= 1, 'event')
  assert.ok(
    plain.events.every((x) => x.type !== 'BOOKMARK'),
    'no bookmarks unless allowed',
  )
  plain.abort()
})

test('timeoutSeconds ends the stream cleanly', async () => {
  const t0 = Date.now()
  const w = await watchAll(e.kc, PATH, { resourceVersion: String(e.server.control.resourceVersion()), timeoutSeconds: 1 })
  assert.is(await w.done, null)
  assert.ok(Date.now() - t0 >= 900)
})

test('sendInitialEvents: ADDED for current objects, then the initial-events-end bookmark', async () => {
  await rejects(
    fetch(`${e.server.url}${PATH}?watch=1&sendInitialEvents=true`, { headers: { authorization: `Bearer ${e.server.token}` } }).then((r) => {
      if (r.status !== 200) throw { code: r.status, body: null }
      return r
    }),
    422, // ListOptions Invalid, as ValidateListOptions answers
  )
  const count = (await e.core.listNamespacedConfigMap({ namespace: 'default' })).items.length
  const w = await watchAll(e.kc, PATH, { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true })
  await waitFor(() => w.events.some((x) => x.type === 'BOOKMARK'), 'end bookmark')
  const end = w.events.findIndex((x) => x.type === 'BOOKMARK')
  assert.is(end, count)
  assert.ok(w.events.slice(0, end).every((x) => x.type === 'ADDED'))
  assert.equal(w.events[end]!.object.metadata.annotations, { 'k8s.io/initial-events-end': 'true' })
  w.abort()
})

test('selectors on watch: entering the selection is ADDED, leaving it is DELETED with the previous content and the new version', async () => {
  const w = await watchAll(e.kc, PATH, { resourceVersion: String(e.server.control.resourceVersion()), labelSelector: 'team=a' })
  await mk('sel-1', { team: 'b' })
  await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'sel-1', body: { metadata: { labels: { team: 'a' } } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'sel-1', body: { data: { v: '1' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  const left = await e.core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'sel-1', body: { metadata: { labels: { team: 'c' } }, data: { v: '2' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  )
  await waitFor(() => w.events.length >= 3, 'transitions')
  assert.equal(
    w.events.map((x) => x.type),
    ['ADDED', 'MODIFIED', 'DELETED'],
  )
  const deleted = w.events[2]!.object
  assert.is(deleted.metadata.labels.team, 'a', 'the last state the selector matched')
  assert.equal(deleted.data, { v: '1' })
  assert.is(deleted.metadata.resourceVersion, left.metadata!.resourceVersion, 'the version of the change that made it leave')
  w.abort()
})

test('informer: initial list, add/update/delete, relists after compaction + reset (410)', async () => {
  await e.core.createNamespace({ body: { metadata: { name: 'inf' } } })
  await e.core.deleteNamespacedConfigMap({ namespace: 'inf', name: 'kube-root-ca.crt' })
  await e.core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'i0' } } })
  const inf = k8s.makeInformer(e.kc, '/api/v1/namespaces/inf/configmaps', () => e.core.listNamespacedConfigMap({ namespace: 'inf' }))
  const seen: string[] = []
  const errors: unknown[] = []
  inf.on('add', (o) => seen.push(`add ${o.metadata!.name}`))
  inf.on('update', (o) => seen.push(`update ${o.metadata!.name}`))
  inf.on('delete', (o) => seen.push(`delete ${o.metadata!.name}`))
  inf.on('error', (err) => errors.push(err))
  await inf.start()
  try {
    await waitFor(() => inf.list().length === 1 && e.server.control.watchCount() > 0, 'synced + watching')
    await e.core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'i1' } } })
    await e.core.patchNamespacedConfigMap(
      { namespace: 'inf', name: 'i1', body: { data: { a: 'b' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    )
    await e.core.deleteNamespacedConfigMap({ namespace: 'inf', name: 'i0' })
    await waitFor(() => seen.length >= 4, 'informer events')
    assert.equal(seen, ['add i0', 'add i1', 'update i1', 'delete i0'])
    // the watch closes gracefully, the resume is held back while a change is made and the history
    // compacted: the resume gets 410 and the informer relists
    e.server.control.clearRequestLog()
    e.server.control.delay({ watch: true, ms: 300, count: 1 })
    e.server.control.closeWatches()
    await e.core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'i2' } } })
    e.server.control.compact()
    await waitFor(
      () =>
        inf
          .list()
          .map((o) => o.metadata!.name)
          .sort()
          .join() === 'i1,i2',
      'relisted cache',
    )
    await waitFor(
      () => e.server.control.requestLog().filter((r) => !r.watch && r.method === 'GET' && r.path.endsWith('/configmaps')).length >= 1,
      'a relist',
    )
    assert.is(errors.length, 0, `no errors: ${errors}`)
  } finally {
    await inf.stop()
  }
})

test('a watch with bookmarks gets one 2 s before its timeoutSeconds end (cacheWatcher.nextBookmarkTime), at the newest version', async () => {
  const read = async (bookmarks: boolean) => {
    const q = `watch=true&timeoutSeconds=3&resourceVersion=${e.server.control.resourceVersion()}${bookmarks ? '&allowWatchBookmarks=true' : ''}`
    const res = await fetch(`${e.server.url}/api/v1/namespaces/default/configmaps?${q}`, {
      headers: { authorization: `Bearer ${e.server.token}` },
    })
    const lines = (await res.text()).trim().split('\n').filter(Boolean)
    return lines.map((l) => JSON.parse(l))
  }
  const rv = e.server.control.resourceVersion()
  const [withBookmarks, without] = await Promise.all([read(true), read(false)]) // the stream ends at its timeout
  assert.equal(
    withBookmarks.map((x) => [x.type, x.object.metadata.resourceVersion]),
    [['BOOKMARK', String(rv)]],
  )
  assert.equal(without, [])
})

test.run()
