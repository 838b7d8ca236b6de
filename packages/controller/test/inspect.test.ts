// The inspection surface over HTTP and through the `statewright` CLI, on a running Manager: per-object
// reconcile status with attempts and next retry (and cleared by a successful retry), /topology from
// a component's graph() as JSON, DOT, SVG and layout, the token (the static /ui files excepted),
// the Content-Security-Policy of /ui, redaction, inspectHandler used alone, and the CLI's commands.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { execFile, spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { waitForConvergence } from '../src/index.ts'
import { UI_CSP, inspectHandler } from '../src/inspect/index.ts'
import { runInspect } from '@statewright/cli'
import { inspectFixture, memo, SECRET_VALUE, TOPOLOGY, XSS, type InspectFixture } from './inspect-fixture.ts'

const CLI = fileURLToPath(new URL('../../cli/src/bin.ts', import.meta.url))
const TOKEN = 'tok-inspect-1'
let f: InspectFixture
const auth = { authorization: `Bearer ${TOKEN}` }
const get = (path: string, headers: Record<string, string> = auth) => fetch(f.url + path, { headers })
const getJson = async (path: string) => {
  const r = await get(path)
  assert.is(r.status, 200, `${path}: ${r.status}`)
  return r.json() as Promise<any>
}

/** Runs the CLI (asynchronously: the server it asks lives in this process). */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(
      process.execPath,
      ['--conditions=@statewright/source', '--import', 'tsx', CLI, ...args, '--url', f.url, '--token', TOKEN],
      { env: { ...process.env, NO_COLOR: '1' }, timeout: 20_000 },
    )
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (err: any) {
    return { code: err.code ?? -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }
  }
}

/** Polls nothing: re-reads /reconcilers whenever the desired table changes, until `cond` holds. */
async function untilStatus(cond: (r: any) => boolean, what: string, timeoutMs = 10_000): Promise<any> {
  const deadline = AbortSignal.timeout(timeoutMs)
  for (;;) {
    const txn = f.manager.db.readTxn()
    const [, watch] = f.manager.desired.table.allWatch(txn)
    const [r] = await getJson('/reconcilers')
    if (cond(r)) return r
    try {
      await watch.wait(deadline)
    } catch {
      throw new Error(`timed out waiting for ${what}: ${JSON.stringify(r)}`)
    }
  }
}

test.before(async () => {
  f = await inspectFixture({ token: TOKEN })
  await f.add('alpha')
  await f.add('beta', { secret: true })
  await waitForConvergence(f.manager, { timeoutMs: 10_000 })
})
test.after(async () => {
  await f.stop()
})

test('an apply that fails shows as an error with its message, attempts and next retry; a successful retry clears it', async () => {
  const lift = f.env.server.server.failRequests({ path: '/configmaps/gamma-cm', status: 500 })
  try {
    await f.add('gamma')
    const r = await untilStatus((x) => x.errors.some((e: any) => e.attempts >= 2), 'gamma-cm failing twice')
    const e = r.errors.find((x: any) => x.key.includes('gamma-cm'))
    assert.match(e.error, /injected fault/)
    assert.ok(e.retryAt > Date.now() - 1000 && e.retryAt < Date.now() + 5000, `next retry ${e.retryAt - Date.now()} ms away`)
    assert.is(r.counts.error, 1)
    assert.is(r.counts.done, 2)
    // the same status rides on the object's entry in the table
    const [entry] = await getJson(`/statedb/tables/desired?index=key&key=${encodeURIComponent(e.key)}`)
    assert.is(entry.reconcile.inspect.kind, 'error')
    assert.ok(entry.reconcile.inspect.attempts >= 1)
    const errs = await cli('status', '--errors')
    assert.is(errs.code, 0, errs.stderr)
    assert.match(errs.stdout, /gamma-cm\s+update\s+\d+\s+(in [\d.]+s|now)\s+.*injected fault/)
    assert.not.match(errs.stdout, /alpha/)
  } finally {
    lift()
  }
  const r = await untilStatus((x) => x.counts.error === 0 && x.counts.done === 3, 'gamma-cm applied after the fault is lifted')
  assert.equal(r.errors, [])
  const s = await cli('status')
  assert.match(s.stdout, /reconciler inspect \(table desired\): ok\n\s+done 3\s+pending 0\s+error 0/)
})

test("a component's own reconcilers are shown too, with their objects' status on their table's entries", async () => {
  await f.manager.db.write(f.memos, (w) => {
    f.memos.insert(w, memo('ok'))
    f.memos.insert(w, memo('bad', true))
  })
  const deadline = AbortSignal.timeout(10_000)
  let r: any
  for (;;) {
    const [, watch] = f.memos.allWatch(f.manager.db.readTxn())
    r = await getJson('/reconcilers/memo-writer')
    if (r.counts.done === 1 && r.errors.length === 1 && r.errors[0].attempts >= 1) break
    try {
      await watch.wait(deadline)
    } catch {
      throw new Error(`timed out: ${JSON.stringify(r)}`)
    }
  }
  assert.is(r.table, 'memos')
  assert.equal([r.errors[0].key, r.errors[0].error], ['bad', 'memo bad: disk full'])
  const [entry] = await getJson('/statedb/tables/memos?index=id&key=bad')
  assert.is(entry.reconcile['memo-writer'].kind, 'error')
  assert.equal(
    (await getJson('/reconcilers')).map((x: any) => x.name),
    ['inspect', 'memo-writer'],
  )
  await f.manager.db.write(f.memos, (w) => {
    f.memos.deleteAll(w)
  })
})

test('/topology: every component graph as JSON, DOT, SVG (escaped) and a layout with one node per node', async () => {
  const j = await getJson('/topology')
  assert.equal(j, { graphs: [{ component: 'topology', graph: TOPOLOGY }] })
  const dot = await (await get('/topology?format=dot')).text()
  for (const n of TOPOLOGY.nodes) assert.ok(dot.includes(`"${n.id}"`), `DOT has ${n.id}`)
  assert.is(dot.match(/->/g)!.length, TOPOLOGY.edges.length)
  const svg = await get('/topology?format=svg')
  assert.match(svg.headers.get('content-type')!, /image\/svg\+xml/)
  const text = await svg.text()
  assert.is(text.match(/<g data-id=/g)!.length, TOPOLOGY.nodes.length)
  assert.not.ok(text.includes('<img'), 'the hostile name is escaped')
  assert.ok(text.includes('&lt;img src=x'))
  const l = await getJson('/topology?format=layout')
  const layout = l.graphs[0].layout
  assert.is(layout.nodes.length, TOPOLOGY.nodes.length)
  assert.is(layout.edges.length, TOPOLOGY.edges.length)
  const xs = new Map(layout.nodes.map((n: any) => [n.id, n.x]))
  for (const e of TOPOLOGY.edges.filter((x) => !x.policy)) assert.ok(xs.get(e.from)! < xs.get(e.to)!, `left to right: ${e.from} -> ${e.to}`)
  assert.is((await get('/topology?format=png')).status, 400)
  const t = await cli('topology')
  assert.match(t.stdout, /GatewayClass eg\n\s+Gateway ns\/gw-1\n\s+← policy RateLimitPolicy ns\/gw-rlp \[Enforced\]/)
})

test('the token guards every data path; the static /ui files are served without it, under a strict CSP', async () => {
  for (const p of ['/statedb/tables', '/reconcilers', '/topology', '/statedb/tables/desired/changes', '/statusz']) {
    assert.is((await get(p, {})).status, 401, `${p} without a token`)
    assert.is((await get(p, { authorization: 'Bearer wrong' })).status, 401, `${p} with a wrong token`)
  }
  for (const p of ['/ui/', '/ui/app.js', '/ui/style.css']) {
    const r = await get(p, {})
    assert.is(r.status, 200, p)
    assert.is(r.headers.get('content-security-policy'), UI_CSP)
    assert.is(r.headers.get('x-content-type-options'), 'nosniff')
    const body = await r.text()
    assert.not.match(body, /SECRET|c2VjcmV0/, 'no data in the static files')
  }
  assert.not.ok(UI_CSP.includes('unsafe-inline'))
  assert.match(UI_CSP, /script-src 'self'/)
  assert.match(UI_CSP, /style-src 'self'/)
  const html = await (await get('/ui/', {})).text()
  assert.not.match(html, /<script>|<style>|\sstyle=|\son[a-z]+=/i, 'no inline script or style in the page')
  const redirect = await fetch(f.url + '/ui', { redirect: 'manual' })
  assert.is(redirect.status, 308)
  assert.is((await get('/ui/../statedb/tables', {})).status, 401, 'a dotted path is no way around the token')
  assert.is((await get('/ui/nothing.js', {})).status, 404)
  assert.is((await fetch(f.url + '/reconcilers', { method: 'POST', headers: auth })).status, 405)
})

test("a Secret's data is redacted in the table, a page, the changes stream and the CLI", async () => {
  const all = JSON.stringify(await getJson('/statedb/tables/desired'))
  assert.ok(all.includes('beta-cm'))
  assert.not.ok(all.includes(SECRET_VALUE))
  assert.ok(all.includes('(redacted)'))
  const ctl = new AbortController()
  const res = await fetch(f.url + '/statedb/tables/desired/changes?since=0', { headers: auth, signal: ctl.signal })
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let text = ''
  const deadline = Date.now() + 5000
  while (!text.includes('"sync"') && Date.now() < deadline) text += (await reader.read()).value ?? ''
  ctl.abort()
  assert.ok(text.includes('beta-cm') && text.includes('"sync"'), text)
  assert.not.ok(text.includes(SECRET_VALUE))
  for (const o of ['json', 'yaml', 'table']) {
    const r = await cli('show', 'desired', '-o', o)
    assert.is(r.code, 0, r.stderr)
    assert.ok(r.stdout.includes('beta-cm'))
    assert.not.ok(r.stdout.includes(SECRET_VALUE), `-o ${o}`)
  }
})

test('CLI: tables, show with an index or a prefix, health, usage errors', async () => {
  const t = await cli('tables')
  assert.is(t.code, 0, t.stderr)
  assert.match(t.stdout, /^NAME\s+OBJECTS\s+REVISION\s+INITIALIZED\s+GRAVEYARD\s+INDEXES\n/)
  assert.match(t.stdout, /\nprobes\s+2\s+\d+\s+yes\s+0\s+name,label\n/)
  const s = await cli('show', 'desired')
  assert.match(s.stdout, /^NAMESPACE\s+NAME\s+KIND\s+STATUS\s+REVISION\s+AGE\n/)
  assert.match(s.stdout, /\ndefault\s+alpha-cm\s+ConfigMap\s+done\s+\d+\s+\d+s\n/)
  const byLabel = await cli('show', 'probes', '--index', 'label', '--key', 'plain', '-o', 'json')
  assert.equal(
    JSON.parse(byLabel.stdout).map((e: any) => e.object.labels.a),
    ['plain'],
  )
  const prefix = await cli('show', 'probes', '--prefix', '<img', '-o', 'json')
  assert.equal(
    JSON.parse(prefix.stdout).map((e: any) => e.key),
    [XSS],
  )
  const h = await cli('health')
  assert.is(h.code, 0)
  assert.match(h.stdout, /^ready \(inspect, running, leading\)\n/)
  assert.match(h.stdout, /reconciler inspect\s+ok/)
  const bad = await cli('show')
  assert.is(bad.code, 2)
  assert.match(bad.stderr, /needs a table/)
  const missing = await cli('show', 'nope')
  assert.is(missing.code, 1)
  assert.match(missing.stderr, /no table "nope"/)
  const noToken = await promisify(execFile)(process.execPath, [
    '--conditions=@statewright/source',
    '--import',
    'tsx',
    CLI,
    'tables',
    '--url',
    f.url,
  ]).catch((e) => e)
  assert.is(noToken.code, 1)
  assert.match(noToken.stderr, /wants a token/)
  const down = await promisify(execFile)(process.execPath, [
    '--conditions=@statewright/source',
    '--import',
    'tsx',
    CLI,
    'tables',
    '--url',
    'http://127.0.0.1:1',
  ]).catch((e) => e)
  assert.match(down.stderr, /cannot reach http:\/\/127\.0\.0\.1:1/)
})

test('CLI watch: the objects, then changes live with ADDED, MODIFIED and DELETED, as kubectl get -w', async () => {
  const child = spawn(
    process.execPath,
    ['--conditions=@statewright/source', '--import', 'tsx', CLI, 'watch', 'gadgets', '--url', f.url, '--token', TOKEN],
    { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  const waiters: Array<() => void> = []
  child.stdout.on('data', (d) => {
    out += d
    for (const w of waiters.splice(0)) w()
  })
  const until = async (re: RegExp) => {
    const deadline = Date.now() + 10_000
    while (!re.test(out)) {
      assert.ok(Date.now() < deadline, `timed out waiting for ${re} in:\n${out}`)
      await new Promise<void>((r) => {
        waiters.push(r)
        setTimeout(r, 500)
      })
    }
  }
  try {
    await until(/default\s+alpha\s+Gadget\s+\d+\s+\d+s\s+ADDED/)
    assert.match(out, /^NAMESPACE\s+NAME\s+KIND\s+STATUS\s+REVISION\s+AGE\s+EVENT\n/)
    await f.add('delta')
    await until(/default\s+delta\s+Gadget\s+\d+\s+\d+s\s+ADDED/)
    await f.remove('delta')
    await until(/default\s+delta\s+Gadget\s+\d+\s+\d*s?\s*DELETED/)
  } finally {
    child.kill('SIGINT')
  }
})

test('inspectHandler alone: the web view, tables and reconcilers of a plain DB', async () => {
  const t = new Table<{ id: string }>({
    name: 'things',
    primary: defineIndex<{ id: string }, string>({ name: 'id', key: (x) => x.id, unique: true }),
  })
  const db = new DB({ tables: [t] })
  await db.write(t, (w) => {
    t.insert(w, { id: 'one' })
  })
  const server = createServer(inspectHandler({ db, token: 'x' }))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    assert.is((await fetch(`${base}/ui/`)).status, 200)
    assert.is((await fetch(`${base}/statedb/tables`)).status, 401)
    const tables = (await (await fetch(`${base}/statedb/tables`, { headers: { authorization: 'Bearer x' } })).json()) as any[]
    assert.equal(
      tables.map((x) => [x.name, x.objects]),
      [['things', 1]],
    )
    assert.equal(await (await fetch(`${base}/reconcilers`, { headers: { authorization: 'Bearer x' } })).json(), [])
    assert.equal(await (await fetch(`${base}/topology`, { headers: { authorization: 'Bearer x' } })).json(), { graphs: [] })
  } finally {
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
  }
})

test('CLI colour: on a terminal only, never with NO_COLOR or --no-color; an escape sequence in a name never reaches the terminal', async () => {
  const run = async (isTTY: boolean, env: Record<string, string> = {}, extra: string[] = []) => {
    let out = ''
    const code = await runInspect('show', ['desired', '--url', f.url, '--token', TOKEN, ...extra], {
      stdout: {
        write: (x: string) => {
          out += x
        },
        isTTY,
      },
      stderr: {
        write: (x: string) => {
          out += x
        },
      },
      env,
    })
    assert.is(code, 0, out)
    return out
  }
  assert.match(await run(true), /\x1b\[32mdone\x1b\[0m/, 'done is green on a terminal')
  assert.not.match(await run(false), /\x1b/, 'plain into a pipe')
  assert.not.match(await run(true, { NO_COLOR: '1' }), /\x1b/)
  assert.not.match(await run(true, {}, ['--no-color']), /\x1b/)
  const evil = { name: 'evil\x1b]0;pwned\x07\x1b[2J', labels: {}, note: '' }
  await f.manager.db.write(f.probes, (w) => {
    f.probes.insert(w, evil)
  })
  try {
    let out = ''
    await runInspect('show', ['probes', '--url', f.url, '--token', TOKEN], {
      stdout: {
        write: (x: string) => {
          out += x
        },
        isTTY: false,
      },
      stderr: {
        write: (x: string) => {
          out += x
        },
      },
      env: {},
    })
    assert.ok(out.includes('evil\\x1b]0;pwned\\x07\\x1b[2J'), out) // spelled out (inspect-terminal.test.ts has the rest)
    assert.not.match(out, /[\x00-\x08\x0b-\x1f]/)
  } finally {
    await f.manager.db.write(f.probes, (w) => {
      f.probes.delete(w, evil)
    })
  }
})

test.run()
