// Compaction of reflected objects: shared strings, shared (frozen) identical maps, list items with
// their apiVersion and kind, and what the reflector's `compact` option turns off.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB } from '@statewright/statedb'
import { MapPool, Reflector, StringPool, compactObject, namespacedName, type KubeObject } from '@statewright/k8s'
import { withTypeMeta } from '../src/list.ts'
import { clusterFor, objectTable, startServer, waitFor } from './helpers.ts'

test('MapPool: equal maps (same entries) share one frozen copy; others do not', () => {
  const strings = new StringPool()
  const maps = new MapPool()
  const a = maps.share(JSON.parse('{"app":"web","tier":"front"}'), strings)
  const b = maps.share(JSON.parse('{"app":"web","tier":"front"}'), strings)
  assert.is(a, b)
  assert.ok(Object.isFrozen(a))
  assert.equal(a, { app: 'web', tier: 'front' })
  // another value, one more key, one less: other maps
  assert.is.not(maps.share(JSON.parse('{"app":"web"}'), strings), a)
  assert.is.not(maps.share(JSON.parse('{"app":"web","tier":"back"}'), strings), a)
  assert.is.not(maps.share(JSON.parse('{"app":"web","tier":"front","x":""}'), strings), a)
  // keys and values that concatenate alike are still told apart
  const c = maps.share(JSON.parse('{"a\\u0000":"b"}'), strings)
  const d = maps.share(JSON.parse('{"a":"\\u0000b"}'), strings)
  assert.is.not(c, d)
  assert.equal(Object.keys(d), ['a'])
  // the empty map is a map like any other
  assert.is(maps.share({}, strings), maps.share({}, strings))
})

test('MapPool: maps with non-string values or over maxChars are left unshared (their strings interned)', () => {
  const strings = new StringPool()
  const maps = new MapPool(100, 20)
  const n1 = JSON.parse('{"a":"x","n":1}')
  const n2 = JSON.parse('{"a":"x","n":1}')
  assert.is(maps.share(n1, strings), n1)
  assert.is(maps.share(n2, strings), n2)
  assert.not.ok(Object.isFrozen(n1))
  const long1 = { k: 'v'.repeat(30) }
  const long2 = { k: 'v'.repeat(30) }
  assert.is(maps.share(long1, strings), long1)
  assert.is(maps.share(long2, strings), long2)
  assert.is(maps.size, 0)
})

test('MapPool: bounded; every map it gives has the entries given; a map given for two inputs is frozen; the last map of a slot is reused (model)', () => {
  let seed = 7
  const rand = (n: number) => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) % n
  }
  const entries = (r: Record<string, unknown>) => JSON.stringify(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)))
  const strings = new StringPool(50, 16)
  const maps = new MapPool(8, 64)
  const handed = new Map<object, number>() // map given -> how many inputs it was given for
  const last: Array<Record<string, unknown> | undefined> = []
  for (let i = 0; i < 5000; i++) {
    const slot = rand(3)
    const rec: Record<string, unknown> = {}
    const n = rand(4)
    for (let j = 0; j < n; j++) rec[`k${rand(3)}`] = rand(10) === 0 ? rand(5) : rand(10) === 0 ? 'x'.repeat(70) : `v${rand(4)}`
    const want = entries(rec)
    const input = { ...rec }
    const got = maps.share(input, strings, slot)
    assert.is(entries(got), want)
    assert.ok(maps.size <= 8)
    const shareable =
      Object.entries(rec).every(([, v]) => typeof v === 'string') &&
      Object.entries(rec).reduce((c, [k, v]) => c + k.length + String(v).length, 0) <= 64
    if (!shareable) assert.is(got, input)
    handed.set(got, (handed.get(got) ?? 0) + 1)
    if (shareable && last[slot] !== undefined && entries(last[slot]!) === want) assert.is(got, last[slot])
    if (shareable) last[slot] = got
  }
  for (const [m, times] of handed) if (times > 1) assert.ok(Object.isFrozen(m))
  assert.ok([...handed.values()].some((t) => t > 1))
})

test('MapPool: a slot whose lookups mostly miss skips the pool for a while; maps stay correct', () => {
  const strings = new StringPool()
  const maps = new MapPool()
  for (let i = 0; i < 3000; i++) {
    const got = maps.share({ app: 'a', id: String(i) }, strings) as Record<string, string>
    assert.equal(got, { app: 'a', id: String(i) })
  }
  assert.ok(maps.size <= 1024, `pool size ${maps.size}: paused after 1,024 lookups with no hit`)
  // a map given twice in a row is shared and frozen even while the pool is paused
  const a = maps.share({ app: 'b' }, strings)
  const b = maps.share({ app: 'b' }, strings)
  assert.is(a, b)
  assert.ok(Object.isFrozen(a))
})

test('compactObject: ConfigMap data and label maps shared with a MapPool; a Secret keeps its own data', () => {
  const strings = new StringPool()
  const maps = new MapPool()
  const cm = (name: string) =>
    JSON.parse(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'ns', labels: { app: 'x' }, annotations: { a: 'b' }, managedFields: [{ manager: 'm' }] },
        data: { 'ca.crt': 'c'.repeat(1200) },
      }),
    )
  const a = compactObject(cm('a'), strings, false, maps)
  const b = compactObject(cm('b'), strings, false, maps)
  assert.is(a.data, b.data)
  assert.is(a.metadata.labels, b.metadata.labels)
  assert.is(a.metadata.annotations, b.metadata.annotations)
  assert.is(a.metadata.managedFields, undefined)
  assert.is(a.metadata.name, 'a')
  const secret = (name: string) => JSON.parse(JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { k: 'dg==' } }))
  const s1 = compactObject(secret('s1'), strings, false, maps)
  const s2 = compactObject(secret('s2'), strings, false, maps)
  assert.is.not(s1.data, s2.data)
  // without a MapPool: strings interned, maps not shared (as before MapPool)
  const c = compactObject(cm('c'), strings, true)
  const d = compactObject(cm('d'), strings, true)
  assert.is.not(c.metadata.labels, d.metadata.labels)
  assert.is(c.metadata.labels.app, d.metadata.labels.app)
  assert.equal(c.metadata.managedFields, [{ manager: 'm' }])
})

test('withTypeMeta: a plain object with apiVersion and kind first, its own fields kept as a spread would', () => {
  const it = JSON.parse('{"metadata":{"name":"a"},"spec":{"x":1},"__proto__":{"polluted":true}}')
  const o = withTypeMeta(it, 'v1', 'ConfigMap') as any
  assert.is(Object.getPrototypeOf(o), Object.prototype)
  assert.is(o.constructor, Object)
  assert.equal(Object.keys(o), ['apiVersion', 'kind', 'metadata', 'spec', '__proto__'])
  assert.equal(o.__proto__, { polluted: true })
  assert.is(({} as any).polluted, undefined)
  assert.equal(JSON.parse(JSON.stringify(o)), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'a' },
    spec: { x: 1 },
    ['__proto__']: { polluted: true },
  })
  assert.equal(structuredClone(o).metadata, { name: 'a' })
  // as { apiVersion, kind, ...it }: the item's own apiVersion (or kind) wins
  const spread = (x: any) => ({ apiVersion: 'v1', kind: 'ConfigMap', ...x })
  for (const text of ['{"apiVersion":"v2","metadata":{}}', '{"kind":"Other","metadata":{}}', '{"metadata":{},"kind":null}']) {
    assert.equal(withTypeMeta(JSON.parse(text), 'v1', 'ConfigMap'), spread(JSON.parse(text)))
  }
})

test('namespacedName: namespace/name, or the name of a cluster-scoped object', () => {
  assert.is(
    namespacedName({ metadata: { name: 'a-long-enough-name', namespace: 'some-namespace' } } as KubeObject),
    'some-namespace/a-long-enough-name',
  )
  assert.is(namespacedName({ metadata: { name: 'node-1' } } as KubeObject), 'node-1')
})

test('reflector: identical labels shared by default, not with compact: false nor for Secrets', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    server.control.seed({ apiVersion: 'v1', kind: 'ConfigMap' }, 20, {
      prefix: 'cm-',
      template: { metadata: { labels: { app: 'x' } }, data: { k: 'some shared value' } },
    })
    server.control.seed({ apiVersion: 'v1', kind: 'Secret' }, 5, {
      prefix: 's-',
      template: { metadata: { labels: { app: 'x' } }, data: { k: 'dg==' } },
    })
    const rows = async (kind: string, compact?: boolean) => {
      const table = objectTable(`t-${kind.toLowerCase()}-${compact}`)
      const db = new DB({ tables: [table] })
      const r = new Reflector({ cluster, db, table, kind: { apiVersion: 'v1', kind }, namespace: 'default', compact })
      await r.start()
      await r.waitSynced(AbortSignal.timeout(10_000))
      await waitFor(() => r.health().watches > 0, 'the watch')
      const objs = table
        .all(db.readTxn())
        .toArray()
        .filter((o) => o.metadata.labels?.app === 'x')
      await r.stop()
      return objs
    }
    const shared = await rows('ConfigMap')
    assert.is(shared.length, 20)
    assert.ok(shared.every((o) => o.metadata.labels === shared[0]!.metadata.labels && (o as any).data === (shared[0] as any).data))
    assert.equal((shared[3] as any).data, { k: 'some shared value' })
    const own = await rows('ConfigMap', false)
    assert.is(own.length, 20)
    assert.is.not(own[0]!.metadata.labels, own[1]!.metadata.labels)
    assert.is.not((own[0] as any).data, (own[1] as any).data)
    assert.is(own[0]!.metadata.managedFields, undefined)
    const secrets = await rows('Secret')
    assert.is(secrets.length, 5)
    assert.is.not(secrets[0]!.metadata.labels, secrets[1]!.metadata.labels)
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test.run()
