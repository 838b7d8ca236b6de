// The inspection handler against a hostile client: foreign Host headers (DNS rebinding), paths that
// are not in normal form, a token, HEAD, keys no header can carry, objects that cannot be
// serialized, and clients that open change streams and never read. Requests go through node:http
// (fetch normalizes paths and will not send a Host of our choosing).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DB, Table, defineIndex, httpHandler, type HttpHandlerOptions } from '../src/index.ts'
import { rawRequest, stalledClient } from '../../../test/lib/http.ts'

interface Obj {
  name: string
  body?: unknown
}
const byName = defineIndex<Obj, string>({ name: 'name', key: (o) => o.name, unique: true })

async function serve(names: string[], opts: HttpHandlerOptions = {}, objects: (name: string) => Obj = (name) => ({ name })) {
  const t = new Table<Obj>({ name: 'objs', primary: byName })
  const db = new DB({ tables: [t] })
  await db.write(t, (w) => {
    for (const n of names) t.insert(w, objects(n))
  })
  const responses: ServerResponse[] = []
  const handler = httpHandler(db, opts)
  const server = createServer((req, res) => {
    responses.push(res)
    handler(req, res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return {
    db,
    t,
    port,
    responses,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

const raw = rawRequest

test('DNS rebinding: a Host naming anything but localhost, a loopback address or the address connected to is refused with 403', async () => {
  const f = await serve(['a'])
  try {
    for (const host of [
      'rebind.evil.example',
      `rebind.evil.example:${f.port}`,
      'localhost.evil.example',
      'evil@127.0.0.1',
      '127.0.0.1.nip.io',
      '10.1.2.3',
    ]) {
      const r = await raw(f.port, '/dump', { host })
      assert.is(r.status, 403, `Host: ${host}`)
      assert.not.ok(r.body.includes('"objs"'), `Host: ${host} got data`)
    }
    for (const host of ['localhost', `localhost:${f.port}`, 'LOCALHOST.', `127.0.0.1:${f.port}`, '127.0.0.2', '[::1]:80'])
      assert.is((await raw(f.port, '/tables', { host })).status, 200, `Host: ${host}`)
  } finally {
    await f.close()
  }
  const g = await serve(['a'], { allowedHosts: ['ops.example.com', '.svc.cluster.local'] })
  try {
    for (const host of ['ops.example.com', 'metrics.ns.svc.cluster.local:8080', 'svc.cluster.local'])
      assert.is((await raw(g.port, '/tables', { host })).status, 200, `allowed: ${host}`)
    for (const host of ['ops.example.com.evil.example', 'xsvc.cluster.local'])
      assert.is((await raw(g.port, '/tables', { host })).status, 403, `not allowed: ${host}`)
  } finally {
    await g.close()
  }
})

test('a path not in normal form (dot segments, encoded or not; backslashes) is refused with 400 before any token or route sees it', async () => {
  const f = await serve(['a'], { token: 'tok' })
  try {
    const variants = [
      '/x/../dump',
      '/x/%2e%2e/dump',
      '/x/%2E%2E/dump',
      '/x/.%2e/dump',
      '/x/%2e./dump',
      '/x/./../dump',
      '/tables/./objs',
      '/x\\..\\dump',
      '/x/..',
      '//dump',
    ]
    for (const path of variants) {
      const r = await raw(f.port, path, { authorization: 'Bearer tok' })
      assert.is(r.status, 400, `${path}: ${r.status} ${r.body}`)
    }
    assert.is((await raw(f.port, '/dump')).status, 401, 'no token')
    assert.is((await raw(f.port, '/dump', { authorization: 'Bearer tok' })).status, 200)
    assert.is((await raw(f.port, '/dump', { authorization: 'Bearer tok2' })).status, 401)
  } finally {
    await f.close()
  }
})

test('read-only: HEAD is served with the headers of GET and no body; other methods get 405 with Allow; every answer says nosniff', async () => {
  const f = await serve(['a', 'b', 'c'])
  try {
    const head = await raw(f.port, '/tables/objs?limit=2', {}, 'HEAD')
    assert.is(head.status, 200)
    assert.is(head.body, '')
    assert.is(head.headers['x-statedb-count'], '3')
    assert.ok(head.headers['x-statedb-continue'])
    assert.is((await raw(f.port, '/tables/objs/changes', {}, 'HEAD')).status, 200)
    assert.is((await raw(f.port, '/dump', {}, 'HEAD')).status, 200)
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const r = await raw(f.port, '/tables', {}, m)
      assert.is(r.status, 405, m)
      assert.is(r.headers.allow, 'GET, HEAD')
    }
    for (const path of ['/tables', '/tables/objs', '/dump', '/nope', '/x/../y'])
      assert.is((await raw(f.port, path)).headers['x-content-type-options'], 'nosniff', path)
  } finally {
    await f.close()
  }
})

test('pages over keys no header can carry: non-Latin-1, controls, newlines; the continue token walks the table once', async () => {
  // u-0099-日本語 is the 3rd key in order: the last of the first page
  const names = ['a\u001b[2Jclear', 'b\nnewline', 'u-0099-日本語', 'u-\u009b31m', 'v\u202eevil', 'w\u0000nul', 'z']
  const f = await serve(names)
  try {
    const seen: string[] = []
    let token: string | undefined
    for (let i = 0; i < 10; i++) {
      const r = await raw(f.port, `/tables/objs?limit=3${token ? `&continue=${token}` : ''}`)
      assert.is(r.status, 200, r.body)
      seen.push(...(JSON.parse(r.body) as Array<{ key: string }>).map((e) => e.key))
      token = r.headers['x-statedb-continue'] as string | undefined
      if (!token) break
    }
    assert.equal(seen, [...names].sort())
    assert.is((await raw(f.port, '/tables/objs?limit=3&continue=***')).status, 400)
    assert.is((await raw(f.port, '/tables/objs?limit=3&continue=YQ&after=a')).status, 400)
  } finally {
    await f.close()
  }
})

test('an object that cannot be serialized is an error string in its place; the rest is served and the process goes on', async () => {
  const cyclic: any = { name: 'cyclic' }
  cyclic.self = cyclic
  const objects = (name: string): Obj =>
    name === 'throws'
      ? {
          name,
          body: {
            toJSON() {
              throw new Error('no JSON for you')
            },
          },
        }
      : name === 'big'
        ? { name, body: { n: 10n } }
        : name === 'cyclic'
          ? cyclic
          : { name }
  // the default redactor cuts cycles; one that does not shows what a throwing stringify gives
  for (const redact of [undefined, (_t: string, o: unknown) => o]) {
    const f = await serve(['a', 'big', 'cyclic', 'throws', 'z'], redact ? { redact } : {}, objects)
    try {
      for (const path of ['/dump', '/tables/objs', '/tables/objs?limit=10', '/tables/objs?index=name&key=throws&op=get']) {
        const r = await raw(f.port, path)
        assert.is(r.status, 200, `${path}: ${r.body}`)
        const body = JSON.parse(r.body)
        const list: Array<{ key?: string; object: any }> = Array.isArray(body) ? body : body.objs ? body.objs.objects : [body]
        const thrower = list.find((e) => e.object === '(unserializable: no JSON for you)' || e.object?.name === 'throws')
        assert.ok(thrower, `${path}: the throwing object is there`)
        assert.is(thrower!.object, '(unserializable: no JSON for you)')
        if (list.length > 1)
          assert.ok(
            list.some((e) => e.object?.name === 'z'),
            `${path}: the rest is served`,
          )
      }
      const changes = await streamLines(f.port, '/tables/objs/changes', 5)
      assert.ok(changes.some((l) => l.object === '(unserializable: no JSON for you)'))
      assert.ok(changes.some((l) => l.object?.name === 'z'))
    } finally {
      await f.close()
    }
  }
})

/** The first `n` lines of a change stream. */
function streamLines(port: number, path: string, n: number): Promise<any[]> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let buf = ''
      const lines: any[] = []
      res.setEncoding('utf8')
      res.on('data', (c: string) => {
        buf += c
        let i
        while ((i = buf.indexOf('\n')) >= 0 && lines.length < n) {
          lines.push(JSON.parse(buf.slice(0, i)))
          buf = buf.slice(i + 1)
        }
        if (lines.length >= n) {
          req.destroy()
          resolve(lines)
        }
      })
    })
    req.on('error', (err) => (err.message.includes('aborted') || err.message.includes('socket hang up') ? undefined : reject(err)))
    req.end()
  })
}

// 2000 objects of 20 kB: 40 MB of JSON, more than loopback's socket buffers hold
const BIG = Array.from({ length: 2000 }, (_, i) => `obj-${String(i).padStart(6, '0')}`)
const PAD = 'x'.repeat(20_000)
const padded = (name: string): Obj => ({ name, body: PAD })

test('change streams are capped: one more than maxStreams is answered 429; a closed stream frees its place', async () => {
  const f = await serve(['a'], { maxStreams: 2 })
  try {
    const first = await openStream(f.port)
    const second = await openStream(f.port)
    const third = await raw(f.port, '/tables/objs/changes')
    assert.is(third.status, 429, third.body)
    assert.ok(third.headers['retry-after'])
    first.destroy()
    await until(async () => (await raw(f.port, '/tables/objs/changes', {}, 'HEAD')).status === 200, 'a place freed')
    second.destroy()
  } finally {
    await f.close()
  }
})

function openStream(port: number): Promise<IncomingMessage & { destroy(): void }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/tables/objs/changes' }, (res) => {
      assert.is(res.statusCode, 200)
      resolve(Object.assign(res, { destroy: () => req.destroy() }))
    })
    req.on('error', () => undefined)
    req.once('error', reject)
    req.end()
  })
}

async function until(cond: () => Promise<boolean>, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${typeof what === 'string' ? what : what()}`)
    await new Promise((r) => setImmediate(r))
  }
}

test('a client that never reads gets no more than the socket holds (write backpressure), and is dropped after stallTimeoutMs', async () => {
  const f = await serve(BIG, { stallTimeoutMs: 500 }, padded)
  try {
    const clients = Array.from({ length: 5 }, () => stalledClient(f.port, '/tables/objs/changes'))
    // every server-side response ends up waiting for its client: what it buffers stays bounded
    await until(
      async () => f.responses.length === 5 && f.responses.every((r) => r.writableNeedDrain || r.destroyed),
      () => `all 5 streams blocked: ${f.responses.map((r) => `${r.writableLength}/${r.writableNeedDrain}`)}`,
    )
    for (const r of f.responses) assert.ok(r.writableLength < 1_000_000, `a stalled stream buffers ${r.writableLength} bytes`)
    // dropped by the server (a paused client sees no close: it is the server side that is awaited)
    const dropped = Promise.all(f.responses.map((r) => (r.destroyed ? undefined : new Promise((ok) => r.once('close', ok)))))
    let timer: NodeJS.Timeout | undefined
    const late = new Promise((_, fail) => (timer = setTimeout(() => fail(new Error('stalled clients were not dropped in 10 s')), 10_000)))
    await Promise.race([dropped, late]).finally(() => clearTimeout(timer))
    assert.is(f.db.stats()[0]!.changeIterators, 0, 'their change iterators are closed')
    assert.is((await raw(f.port, '/tables')).status, 200, 'still serving')
    for (const c of clients) c.destroy()
  } finally {
    await f.close()
  }
})

test.run()
