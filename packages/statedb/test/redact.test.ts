// Inspection never serves a Secret's data: a Secret nested at any depth (a desired object wrapping a
// manifest, a list of them) and any object marked sensitive are redacted on every endpoint.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DB, Table, defineIndex, dump, httpHandler, markSensitive, redactSecrets } from '../src/index.ts'

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

test('the redactor: nested Secrets and marked objects lose data and stringData; the rest is untouched', () => {
  const cm = { kind: 'ConfigMap', data: { visible: 'yes' } }
  assert.is(redactSecrets('t', cm), cm, 'nothing secret: the same object')
  const out: any = redactSecrets('t', {
    wrap: { object: { apiVersion: 'v1', kind: 'Secret', data: { a: 'x' }, metadata: { name: 'n' } } },
    list: [cm],
  })
  assert.equal(out.wrap.object, { apiVersion: 'v1', kind: 'Secret', data: '(redacted)', metadata: { name: 'n' } })
  assert.is(out.list[0], cm)
  assert.equal(redactSecrets('t', markSensitive({ data: 1, other: 2 })) as any, { data: '(redacted)', other: 2 })
  const other = { apiVersion: 'example.com/v1', kind: 'Secret', data: 'kept' } // not the core Secret
  assert.is(redactSecrets('t', other), other)
})

test("a Secret's last-applied-configuration annotation (kubectl apply copies the data there) is redacted", () => {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 's',
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"pw":"aHVudGVyMg=="}}', other: 'kept' },
    },
    data: { pw: 'aHVudGVyMg==' },
  }
  const out = redactSecrets('t', { wrap: secret }) as any
  assert.equal(out.wrap.metadata.annotations, {
    'kubectl.kubernetes.io/last-applied-configuration': '{"data":"(redacted)"}',
    other: 'kept',
  })
  assert.not.ok(JSON.stringify(out).includes('aHVudGVyMg=='))
  const broken = { ...secret, metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"pw":"aHVu' } } }
  assert.equal((redactSecrets('t', broken) as any).metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'], '(redacted)')
})

test('a custom resource applied with kubectl apply: the Secret it embeds is redacted in the object and in its last-applied-configuration', () => {
  const embedded = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { password: 'hunter2' } }
  const cr = {
    apiVersion: 'example.com/v1',
    kind: 'Bundle',
    metadata: { name: 'b', annotations: {} as Record<string, string> },
    spec: { replicas: 2, template: embedded },
  }
  cr.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] = JSON.stringify({ ...cr, metadata: { name: 'b' } }) + '\n'
  const out = redactSecrets('t', cr) as any
  assert.not.ok(JSON.stringify(out).includes('hunter2'), JSON.stringify(out))
  assert.is(out.spec.template.stringData, '(redacted)')
  const applied = JSON.parse(out.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'])
  assert.equal(applied.spec, { replicas: 2, template: { ...embedded, stringData: '(redacted)' } }, 'the rest of the manifest is kept')
  assert.ok(
    cr.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'].includes('hunter2'),
    'the stored object is not touched',
  )
  // nothing secret in it: the object itself comes back, annotation and all
  const plain = { kind: 'Bundle', metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"spec":{"a":1}}' } } }
  assert.is(redactSecrets('t', plain), plain)
  const junk = { kind: 'Bundle', metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': 'not json' } } }
  assert.is(redactSecrets('t', junk), junk)
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
