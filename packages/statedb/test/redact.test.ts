// Inspection never serves a secret's data: an object marked sensitive or that a rule calls secret,
// nested at any depth (a desired object wrapping a manifest, a list of them), is redacted on every
// endpoint. statedb knows no format: the test adds a rule as @statewright/k8s does for core v1 Secrets.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DB, Table, addRedactionRule, defineIndex, dump, httpHandler, markSensitive, redactSecrets } from '../src/index.ts'

addRedactionRule({ name: 'test-secrets', isSecret: (o) => o.kind === 'Secret' && (o.apiVersion === undefined || o.apiVersion === 'v1') })

interface Desired {
  key: string
  cluster: string
  object: Record<string, unknown>
  extra?: unknown[]
}
const byKey = defineIndex<Desired, string>({ name: 'key', key: (o) => o.key, unique: true })
const byCluster = defineIndex<Desired, string>({ name: 'cluster', key: (o) => o.cluster })
const SECRETS = ['hunter2', 'c3VwZXJzZWNyZXQ=', 'tok-123', 'marked-pw']

async function fixture() {
  const t = new Table<Desired>({ name: 'desired', primary: byKey, indexes: [byCluster] })
  const db = new DB({ tables: [t] })
  await db.write(t, (w) => {
    t.insert(w, {
      key: 'a',
      cluster: 'east',
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 's' },
        data: { password: 'c3VwZXJzZWNyZXQ=' },
        stringData: { pw: 'hunter2' },
      },
    })
    t.insert(w, {
      key: 'b',
      cluster: 'east',
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { visible: 'yes' } },
      extra: [[{ kind: 'Secret', data: { token: 'tok-123' } }]],
    })
    t.insert(w, { key: 'c', cluster: 'west', object: markSensitive({ name: 'creds', data: { pw: 'marked-pw' } }) })
  })
  const server = createServer(httpHandler(db))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { db, t, server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}
const close = (s: Server) => new Promise<void>((r) => s.close(() => r()))
const noSecrets = (text: string, where: string) => {
  for (const s of SECRETS) assert.not.ok(text.includes(s), `${where} leaks "${s}": ${text}`)
}

test('the redactor: nested secrets and marked objects lose data and stringData; the rest is untouched', () => {
  const cm = { kind: 'ConfigMap', data: { visible: 'yes' } }
  assert.is(redactSecrets('t', cm), cm, 'nothing secret: the same object')
  const out: any = redactSecrets('t', {
    wrap: { object: { apiVersion: 'v1', kind: 'Secret', data: { a: 'x' }, metadata: { name: 'n' } } },
    list: [cm],
  })
  assert.equal(out.wrap.object, { apiVersion: 'v1', kind: 'Secret', data: '(redacted)', metadata: { name: 'n' } })
  assert.is(out.list[0], cm)
  assert.equal(redactSecrets('t', markSensitive({ data: 1, other: 2 })) as any, { data: '(redacted)', other: 2 })
  const other = { apiVersion: 'example.com/v1', kind: 'Secret', data: 'kept' } // the rule does not call it secret
  assert.is(redactSecrets('t', other), other)
})

test('a rule that rewrites a field sees it redacted and may redact more; rules are added once per name', () => {
  let calls = 0
  const rule = {
    name: 'test-note',
    field: 'note',
    rewrite: (v: unknown) => {
      calls++
      return typeof v === 'string' && v.startsWith('pw=') ? 'pw=(redacted)' : v
    },
  }
  addRedactionRule(rule)
  addRedactionRule(rule)
  const o = { note: 'pw=hunter2', inner: [{ note: 'fine' }] }
  assert.equal(redactSecrets('t', o), { note: 'pw=(redacted)', inner: [{ note: 'fine' }] })
  assert.is(calls, 2, 'once per field, not twice: the second add was a no-op')
  const fine = { note: 'fine' }
  assert.is(redactSecrets('t', fine), fine, 'unchanged: the same object')
})

test('a malformed escape in the path is a 400, not an exception that ends the process', async () => {
  const { server, base } = await fixture()
  try {
    const r = await fetch(`${base}/tables/%E0`)
    assert.is(r.status, 400)
    assert.is((await fetch(`${base}/tables`)).status, 200, 'still serving')
  } finally {
    await close(server)
  }
})

test('every endpoint redacts: /dump, /tables/<name>, an index query, op=get, /changes', async () => {
  const { db, t, server, base } = await fixture()
  try {
    const get = async (path: string) => {
      const r = await fetch(base + path)
      assert.is(r.status, 200, path)
      return r.text()
    }
    noSecrets(JSON.stringify(dump(db)), 'dump()')
    const dumped = await get('/dump')
    noSecrets(dumped, '/dump')
    assert.match(dumped, '"visible":"yes"')
    noSecrets(await get('/tables/desired'), '/tables/desired')
    noSecrets(await get('/tables/desired?index=cluster&key=east'), 'index query')
    noSecrets(await get('/tables/desired?index=key&key=a&op=get'), 'op=get')
    noSecrets(await get('/tables/desired?index=key&key=c&op=get'), 'op=get (marked)')
    // the change stream: the initial objects, then a live update carrying a new secret
    const ctl = new AbortController()
    const res = await fetch(`${base}/tables/desired/changes`, { signal: ctl.signal })
    const reader = res.body!.getReader()
    let text = ''
    const readUntil = async (pred: () => boolean) => {
      while (!pred()) {
        const { value, done } = await reader.read()
        if (done) break
        text += Buffer.from(value!).toString()
      }
    }
    await readUntil(() => text.split('\n').length > 3)
    await db.write(t, (w) => {
      t.insert(w, { key: 'd', cluster: 'east', object: { apiVersion: 'v1', kind: 'Secret', data: { live: 'hunter2' } } })
    })
    await readUntil(() => text.includes('"key":"d"'))
    ctl.abort()
    noSecrets(text, '/changes')
    assert.match(text, '"data":"(redacted)"')
  } finally {
    await close(server)
  }
})

test.run()
