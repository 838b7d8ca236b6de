// Secrets never leave through inspection: a Secret reflected from the cluster (as is, and through a
// transform that makes it something else) and a desired Secret wrapped in a DesiredObject are
// redacted by every endpoint of statedb's inspection handler.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DB, Table, defineIndex, httpHandler } from '@statewright/statedb'
import { Reflector, desired, newDesiredTable, namespacedName, type KubeObject } from '@statewright/k8s'
import { clusterFor, objectTable, startServer, waitTable } from './helpers.ts'

const SECRET_VALUES = ['aHVudGVyMg==', 'plain-pw', 'desired-pw']

test('reflected and desired Secrets are redacted on /dump, /tables, queries and /changes', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'creds', namespace: 'default' },
    data: { password: 'aHVudGVyMg==' },
    stringData: { pw: 'plain-pw' },
  }
  await cluster.request({ method: 'POST', path: '/api/v1/namespaces/default/secrets', body: secret })
  const reflected = objectTable('secrets')
  interface Creds {
    name: string
    data: Record<string, string>
  }
  const creds = new Table<Creds>({ name: 'creds', primary: defineIndex<Creds, string>({ name: 'name', key: (c) => c.name, unique: true }) })
  const d = newDesiredTable()
  const db = new DB({ tables: [reflected, creds, d.table] })
  const SECRET = { apiVersion: 'v1', kind: 'Secret' }
  const r1 = new Reflector({ cluster, db, table: reflected, kind: SECRET })
  // a transform that drops kind: only the reflector's sensitive mark tells inspection what it is
  const r2 = new Reflector<Creds>({
    cluster,
    db,
    table: creds,
    kind: SECRET,
    name: 'creds',
    key: (c) => c.name,
    transform: (o) => ({ name: namespacedName(o), data: o.data as Record<string, string> }),
  })
  await db.write(d.table, (w) => {
    d.table.insert(
      w,
      desired({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'out', namespace: 'default' },
        stringData: { pw: 'desired-pw' },
      } as KubeObject),
    )
  })
  const http = createServer(httpHandler(db))
  await new Promise<void>((res) => http.listen(0, '127.0.0.1', res))
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  try {
    await r1.start()
    await r2.start()
    await r1.waitSynced()
    await r2.waitSynced()
    await waitTable(db, creds, (t) => creds.count(t) === 1, 'the transformed secret')
    assert.is((creds.all(db.readTxn()).toArray()[0] as Creds).data.password, 'aHVudGVyMg==', 'the table itself keeps the data')
    const paths = [
      '/dump',
      '/tables/secrets',
      '/tables/creds',
      `/tables/${d.table.name}`,
      '/tables/secrets?index=name&key=default/creds&op=get',
      '/tables/creds?index=name&key=default/creds',
    ]
    for (const p of paths) {
      const text = await (await fetch(base + p)).text()
      for (const v of SECRET_VALUES) assert.not.ok(text.includes(v), `${p} leaks ${v}: ${text.slice(0, 300)}`)
      assert.match(text, '(redacted)', p)
    }
    for (const name of ['secrets', 'creds', d.table.name]) {
      const ctl = new AbortController()
      const res = await fetch(`${base}/tables/${name}/changes`, { signal: ctl.signal })
      const reader = res.body!.getReader()
      const { value } = await reader.read()
      ctl.abort()
      const text = Buffer.from(value!).toString()
      assert.match(text, '(redacted)', `/tables/${name}/changes`)
      for (const v of SECRET_VALUES) assert.not.ok(text.includes(v), `/tables/${name}/changes leaks ${v}`)
    }
  } finally {
    await new Promise((res) => http.close(res))
    await r1.stop()
    await r2.stop()
    await cluster.close()
    await server.stop()
  }
})

test.run()
