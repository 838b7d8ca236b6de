// The web view in a real browser: playwright-core driving Debian's chromium (no browser download;
// `apt-get install -y chromium` when missing: these tests then fail, never skip). One browser for
// every test. What it proves: /ui of a running Manager lists the tables; a new object shows within
// 1 s and a deleted one goes; an error shows with its message, then clears after a successful retry;
// search by index; a Secret's data never reaches the DOM; hostile names, labels and error messages
// run nothing; control characters and bidi overrides in keys and in topology names show escaped
// (`\u202e`), never raw; a page whose last key is not Latin-1 or holds controls pages on; a
// malformed `#token=` or address crashes nothing; the topology is the server's SVG (toSvg, its
// colours) with one node per node of the graph, and a click on a node shows that node's details, even
// when two ids look alike once escaped; a 100 000-object table opens and the page stays responsive while 1 000 changes/s stream in
// (the figures are printed).
// STATEWRIGHT_SCREENSHOTS=docs/img also writes the three main views there, for the docs.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Table, defineIndex } from '@statewright/statedb'
import { inspectHandler, type InspectOptions } from '../src/inspect/index.ts'
import type { InspectGraph } from '@statewright/topology'
import {
  BIDI,
  C1,
  CONTROLS,
  HIDDEN_CHARS,
  inspectFixture,
  OSC8,
  RTL,
  SECRET_VALUE,
  TOPOLOGY,
  XSS,
  XSS2,
  type InspectFixture,
  type Probe,
} from './inspect-fixture.ts'

// The page's globals, for the functions that run in it (this program's types are Node's, not the DOM's)
declare const document: any, location: any, window: any, sessionStorage: any, getComputedStyle: (e: unknown) => { fill: string }

const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p))
const SHOTS = process.env.STATEWRIGHT_SCREENSHOTS
/** How long a wait for the page to show something may take: generous, for a loaded 2-core machine (the event is awaited, not the time). */
const WAIT = 30_000
let f: InspectFixture
let browser: Browser
let page: Page
const pageErrors: string[] = []
const dialogs: string[] = []
/** Hits of the XSS probes (`window.__xss = …`), counted across page loads. */
let xssHits = 0

interface Bulk {
  name: string
  n: number
}
const bulk = new Table<Bulk>({ name: 'bulk', primary: defineIndex<Bulk, string>({ name: 'name', key: (b) => b.name, unique: true }) })
const BULK = 100_000

interface Keyed {
  key: string
  note: string
}
const hostile = new Table<Keyed>({ name: 'hostile', primary: defineIndex<Keyed, string>({ name: 'key', key: (k) => k.key, unique: true }) })
/** The last key of the first page (of 100): not Latin-1, so no header can carry it as it is. */
const PAGE1_LAST = 'u-0099-日本語'
/** The last key of the second page: controls, CSI and an RTL override. */
const PAGE2_LAST = 'u-0199-\x1b[2J\u009b\u202e'
/** The hostile table's keys in key order: the hostile ones, fillers, the two page ends, a third page. */
const HOSTILE_KEYS = (() => {
  const keys = [RTL, CONTROLS, C1, OSC8, BIDI, `${XSS}\u202e`].sort()
  for (let i = keys.length; i < 99; i++) keys.push(`u-${String(i).padStart(4, '0')}`)
  keys.push(PAGE1_LAST)
  for (let i = 100; i < 199; i++) keys.push(`u-${String(i).padStart(4, '0')}`)
  keys.push(PAGE2_LAST, 'u-0200', 'u-0201', 'v-\u202eend')
  return keys
})()
const hex = (c: string, digits: number) => c.charCodeAt(0).toString(16).padStart(digits, '0')
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }
/** How the page shows a text, as the CLI does: `\n`, `\r`, `\t`, `\xHH` below U+0100, else `\uHHHH`. */
const shownAs = (text: string) =>
  text.replace(new RegExp(HIDDEN_CHARS.source, 'g'), (c) => NAMED[c] ?? (c.charCodeAt(0) < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`))
/** How the page shows a value as JSON: indented, what JSON.stringify leaves raw as JSON's `\uHHHH`. */
const jsonShownAs = (v: unknown) =>
  JSON.stringify(v, null, 2).replace(new RegExp(HIDDEN_CHARS.source, 'g'), (c) => (c === '\n' ? c : `\\u${hex(c, 4)}`))

/** Why the setup failed: every test then fails with it (uvu would swallow an error of a before hook). */
let setupError: Error | undefined
const need = () => {
  if (setupError) throw setupError
}

test.before(async () => {
  try {
    await setup()
  } catch (err) {
    setupError = err as Error
  }
})

async function setup(): Promise<void> {
  if (!CHROMIUM || !existsSync(CHROMIUM))
    throw new Error(
      `chromium is missing${CHROMIUM ? ` (no ${CHROMIUM})` : ''}: the browser tests need it: apt-get install -y chromium (or set CHROMIUM_PATH)`,
    )
  f = await inspectFixture()
  f.manager.db.register(bulk)
  await f.manager.db.write(bulk, (w) => {
    for (let i = 0; i < BULK; i++) bulk.insert(w, { name: `obj-${String(i).padStart(6, '0')}`, n: 0 })
  })
  f.manager.db.register(hostile)
  await f.manager.db.write(hostile, (w) => {
    for (const key of HOSTILE_KEYS) hostile.insert(w, { key, note: key })
  })
  await f.add('alpha')
  await f.add('beta', { secret: true, label: XSS })
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 760 } })
  page.on('pageerror', (e) => pageErrors.push(e.message))
  page.on('dialog', (d) => {
    dialogs.push(d.message())
    void d.dismiss()
  })
  await page.exposeFunction('__reportXss', () => {
    xssHits++
  })
  // a string, not a function: the TypeScript loader would add helpers the page lacks
  await page.addInitScript({
    content: "Object.defineProperty(window, '__xss', { configurable: false, get() { return undefined }, set() { window.__reportXss() } })",
  })
}
test.after(async () => {
  await browser?.close()
  await f?.stop()
})

/** A fresh load of the page at `hash` (never a same-document hash change: no stale view to match). */
const go = async (hash: string) => {
  await page.goto('about:blank')
  await page.goto(`${f.url}/ui/${hash}`)
}
const cssString = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
const rowOf = (key: string) => page.locator(`#objects tr.row[data-key=${cssString(key)}]`)
const desiredKey = (name: string, kind = 'ConfigMap') => `||${kind}|default|${name}`
/** The keys of the rows on the page, in order. */
const keysShown = () => page.locator('#objects tr.row').evaluateAll((trs: any[]) => trs.map((tr) => tr.getAttribute('data-key') as string))
/** The markup of an element without its data-* attributes (raw values by design: never shown). */
const shownMarkup = (selector: string) =>
  page.locator(selector).evaluate((el: any) => {
    const copy = el.cloneNode(true)
    for (const e of [copy, ...copy.querySelectorAll('*')])
      for (const a of [...e.attributes]) if (a.name.startsWith('data-')) e.removeAttribute(a.name)
    // a JSON view's newlines are its layout
    for (const pre of copy.querySelectorAll('pre.json')) pre.textContent = pre.textContent.replace(/\n/g, ' ')
    return copy.outerHTML as string
  })
/** A server of its own (a token, other graphs), on a free port; `close` ends it. */
async function serve(o: InspectOptions): Promise<{ base: string; close: () => Promise<void> }> {
  const server = createServer(inspectHandler(o))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}

test('/ui lists the tables and the health of every part', async () => {
  need()
  await go('')
  await page.locator('#tables tr[data-table="desired"]').waitFor({ timeout: WAIT })
  assert.is(await page.locator('#tables tbody tr').count(), ((await (await fetch(`${f.url}/statedb/tables`)).json()) as unknown[]).length)
  await page.locator('#health').getByText('reconciler inspect').waitFor({ timeout: WAIT })
  await page.locator('#health .badge').first().waitFor()
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/inspect-tables.png` })
})

test('a new object shows within 1 s; a deleted one goes', async () => {
  need()
  await go('#/t/probes')
  await page.locator('#objects tr.row').first().waitFor({ timeout: WAIT })
  await page.waitForFunction(() => document.getElementById('live')?.classList.contains('on'), undefined, { timeout: WAIT })
  const obj: Probe = { name: 'aaa-fresh', labels: { a: 'fresh' }, note: 'new' }
  await f.manager.db.write(f.probes, (w) => {
    f.probes.insert(w, obj)
  })
  const t0 = Date.now()
  await page.waitForFunction(() => !!document.querySelector('#objects tr[data-key="aaa-fresh"]'), undefined, { timeout: WAIT })
  const shown = Date.now() - t0
  await f.manager.db.write(f.probes, (w) => {
    f.probes.delete(w, obj)
  })
  await page.waitForFunction(() => !document.querySelector('#objects tr[data-key="aaa-fresh"]'), undefined, { timeout: WAIT })
  console.log(`  a new object showed ${shown} ms after its commit`)
  // and through the whole controller: a Gadget in the API server becomes a desired ConfigMap on the page
  await go('#/t/desired')
  await rowOf(desiredKey('alpha-cm')).waitFor({ timeout: WAIT })
  await f.add('epsilon')
  await rowOf(desiredKey('epsilon-cm')).waitFor({ timeout: WAIT })
  await f.remove('epsilon')
  await rowOf(desiredKey('epsilon-cm')).waitFor({ state: 'detached', timeout: WAIT })
})

test('an error shows with its message and retry countdown, then clears after a successful retry', async () => {
  need()
  await go(`#/t/desired?o=${encodeURIComponent(desiredKey('gamma-cm'))}`)
  await page.locator('#objects').waitFor()
  const lift = f.env.server.server.failRequests({ path: '/configmaps/gamma-cm', status: 500 })
  try {
    await f.add('gamma')
    const row = rowOf(desiredKey('gamma-cm'))
    await row.locator('.badge.error').waitFor({ timeout: WAIT })
    assert.match(await row.locator('td.status').innerText(), /injected fault/)
    await page.locator('#reconcile .badge.error').waitFor({ timeout: WAIT })
    const detail = await page.locator('#reconcile tbody').innerText()
    assert.match(detail, /injected fault/)
    assert.match(detail, /\t\d+\t(in \d+s|now)/, `attempts and next retry: ${detail}`)
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/inspect-table.png` })
  } finally {
    lift()
  }
  await rowOf(desiredKey('gamma-cm')).locator('.badge.done').waitFor({ timeout: WAIT })
  assert.not.match(await rowOf(desiredKey('gamma-cm')).innerText(), /injected fault/)
  await page.locator('#reconcile .badge.done').waitFor({ timeout: WAIT })
})

test('search by index', async () => {
  need()
  await go('#/t/probes')
  await page.locator('#objects tr.row').first().waitFor({ timeout: WAIT })
  await page.selectOption('#search-index', 'label')
  await page.fill('#search-key', 'plain')
  await page.click('#search button[type=submit]')
  // the result itself is awaited: the rows of the view before the search can also number one
  const onlyRow = (key: string) =>
    page.waitForFunction(
      (k) => {
        const rows = document.querySelectorAll('#objects tr.row')
        return rows.length === 1 && rows[0]!.getAttribute('data-key') === k
      },
      key,
      { timeout: WAIT },
    )
  await onlyRow(XSS2)
  assert.ok(await page.evaluate(() => location.hash.includes('key=plain')))
  assert.is(await page.locator('#objects tr.row').getAttribute('data-key'), XSS2)
  await page.selectOption('#search-op', 'prefix')
  await page.fill('#search-key', '</scr')
  await page.click('#search button[type=submit]')
  await onlyRow(XSS)
  assert.ok(await page.evaluate(() => location.hash.includes('op=prefix')))
  assert.is(await page.locator('#objects tr.row').getAttribute('data-key'), XSS, 'the label index holds XSS2 only on the XSS probe')
})

test("a Secret's data never reaches the DOM", async () => {
  need()
  await go(`#/t/desired?o=${encodeURIComponent(desiredKey('beta-cm', 'Secret'))}`)
  await page.locator('#json').waitFor({ timeout: WAIT })
  const json = await page.locator('#json').innerText()
  assert.match(json, /"kind": "Secret"/)
  assert.match(json, /"data": "\(redacted\)"/)
  const dom = await page.evaluate(() => document.documentElement.outerHTML)
  assert.not.ok(dom.includes(SECRET_VALUE), "the Secret's data is in the DOM")
})

test('hostile names, labels and error messages are text: nothing executes', async () => {
  need()
  await go('#/t/probes')
  await page.locator('#objects tr.row').first().waitFor({ timeout: WAIT })
  for (const key of [XSS, XSS2]) {
    await rowOf(key).click()
    // the pane of the previous selection may still be up: wait for this object's own heading
    await page.waitForFunction((k) => document.querySelector('#object h2.mono')?.textContent?.includes(k) === true, key, { timeout: WAIT })
    assert.ok((await page.locator('#object h2.mono').innerText()).includes(key), 'shown as text')
  }
  // an error message carrying the probe: a ConfigMap whose name the API server refuses, quoting it
  await f.add('hostile', { cm: XSS })
  await go('#/')
  // (the Secret whose label holds the probe is refused too, as a real server refuses the label: .first())
  await page.locator('[data-reconciler="inspect"] .errmsg').filter({ hasText: '<img src=x' }).first().waitFor({ timeout: WAIT })
  await go(`#/t/desired`)
  await page.locator('#objects td.status .errmsg').filter({ hasText: 'onerror' }).first().waitFor({ timeout: WAIT })
  // the Secret's label holds the probe too
  await rowOf(desiredKey('beta-cm', 'Secret')).click()
  await page.locator('#json').filter({ hasText: 'onerror' }).waitFor()
  await go('#/topology')
  await page.locator('.topo g.node').first().waitFor()
  assert.is(await page.locator('img').count(), 0, 'no <img> element was made')
  assert.is(xssHits, 0, 'the probe ran')
  assert.equal(dialogs, [])
  assert.equal(pageErrors, [])
  // the detector itself works: what the probe would do is counted
  await page.evaluate('window.__xss = 1')
  await page.waitForFunction(() => true)
  assert.is(xssHits, 1, 'the XSS detector counts a run probe')
  xssHits = 0
  await f.remove('hostile')
})

test('the topology: one SVG node per node, coloured by policy status; a click shows the effective policy', async () => {
  need()
  await go('#/topology')
  await page.locator('.topo svg').waitFor({ timeout: WAIT })
  assert.is(await page.locator('.topo svg g.node').count(), TOPOLOGY.nodes.length)
  assert.is(await page.locator('.topo svg .edge').count(), TOPOLOGY.edges.length)
  const ids = await page.locator('.topo svg g.node').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-id')))
  assert.equal(ids.sort(), TOPOLOGY.nodes.map((n) => n.id).sort())
  assert.is(await page.locator('.topo g.node.st-Enforced').count(), 1)
  assert.is(await page.locator('.topo g.node.st-Overridden').count(), 1)
  const fill = await page.locator('.topo g.node.st-Enforced rect').evaluate((r) => getComputedStyle(r).fill)
  assert.is(fill, 'rgb(183, 228, 199)', 'Enforced is green')
  await page.locator('.topo g.node[data-id="httproute.gateway.networking.k8s.io:ns/r"]').click()
  await page.locator('#effective').waitFor({ timeout: WAIT })
  assert.match(await page.locator('#effective').innerText(), /"limit": 5/)
  assert.match(await page.locator('#node-detail').innerText(), /route-rlp/)
  assert.is(await page.locator('.topo g.node.selected').getAttribute('data-id'), 'httproute.gateway.networking.k8s.io:ns/r')
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/inspect-topology.png` })
})

test('with a token: #token= opens the view once and leaves the address bar; without it, the page asks', async () => {
  need()
  const server = createServer(inspectHandler({ db: f.manager.db, token: 's3cret' }))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const ctx = await browser.newContext()
  try {
    const p = await ctx.newPage()
    await p.goto(`${base}/ui/#token=s3cret`)
    await p.locator('#tables tr[data-table="probes"]').waitFor({ timeout: WAIT })
    assert.not.match(p.url(), /s3cret/, 'the token is dropped from the address bar')
    const other = await (await browser.newContext()).newPage()
    await other.goto(`${base}/ui/`)
    await other.locator('#token').waitFor({ timeout: WAIT })
    await other.fill('#token', 'wrong')
    await other.press('#token', 'Enter')
    await other.locator('#token').waitFor({ timeout: WAIT })
    await other.fill('#token', 's3cret')
    await other.press('#token', 'Enter')
    await other.locator('#tables tr[data-table="probes"]').waitFor({ timeout: WAIT })
    await other.context().close()
  } finally {
    await ctx.close()
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
  }
})

test('a malformed escape in #token= or in the address crashes nothing: the raw token is used, the page renders', async () => {
  need()
  await go('#token=%E0%A4%A')
  await page.locator('#tables tr[data-table="probes"]').waitFor({ timeout: WAIT })
  assert.not.match(page.url(), /token=/, 'the token is dropped from the address bar')
  assert.is(await page.evaluate(() => sessionStorage.getItem('statewright.token')), '%E0%A4%A', 'taken as written')
  await go('#/t/%E0%A4%A')
  await page.locator('#view .errmsg').filter({ hasText: 'malformed' }).waitFor({ timeout: WAIT })
  await page.evaluate(() => sessionStorage.clear())
  assert.equal(pageErrors, [])
  // with a token: the raw text is wrong, so the form asks, saying why; so it does for a token no
  // header can carry (a newline: fetch would throw on every request, and the form never show)
  const s = await serve({ db: f.manager.db, token: 's3cret' })
  const ctx = await browser.newContext()
  try {
    const p = await ctx.newPage()
    p.on('pageerror', (e) => pageErrors.push(e.message))
    await p.goto(`${s.base}/ui/#token=%E0%A4%A`)
    await p.locator('#token-why').filter({ hasText: 'malformed' }).waitFor({ timeout: WAIT })
    await p.goto('about:blank')
    await p.goto(`${s.base}/ui/#token=s3cret%0Abad`)
    await p.locator('#token-why').filter({ hasText: 'header' }).waitFor({ timeout: WAIT })
    await p.fill('#token', 's3cret')
    await p.press('#token', 'Enter')
    await p.locator('#tables tr[data-table="probes"]').waitFor({ timeout: WAIT })
  } finally {
    await ctx.close()
    await s.close()
  }
  assert.equal(pageErrors, [])
})

test('keys with controls, C1, bidi overrides and OSC-8 show escaped; pages ending on a non-Latin-1 key or on controls page on', async () => {
  need()
  assert.equal(HOSTILE_KEYS.slice().sort(), HOSTILE_KEYS, 'the keys are in key order')
  assert.is(HOSTILE_KEYS[99], PAGE1_LAST)
  assert.is(HOSTILE_KEYS[199], PAGE2_LAST)
  await go('#/t/hostile')
  await page.locator('#objects tr.row').first().waitFor({ timeout: WAIT })
  assert.equal(await keysShown(), HOSTILE_KEYS.slice(0, 100))
  const text = (await page.locator('#objects tbody').textContent())!
  for (const key of [RTL, CONTROLS, C1, OSC8, BIDI, `${XSS}\u202e`]) assert.ok(text.includes(shownAs(key)), `${shownAs(key)} is shown`)
  assert.ok(text.includes('rtl-\\u202egnp.exe'), 'the RTL override is shown as \\u202e')
  assert.ok(text.includes('ctl-\\x00\\x07\\x08\\t\\n\\r\\x1b[31mred\\x1b[0m\\x7f'), 'C0 and DEL are shown escaped')
  assert.ok(text.includes('csi-\\x9b2J'), 'CSI is shown escaped')
  assert.not.match(text, HIDDEN_CHARS, 'no raw control or bidi character in the rows')
  assert.not.match(await shownMarkup('#objects tbody'), HIDDEN_CHARS, 'nor in their markup')
  // the object: its key in the heading; its JSON indented, every hidden character a JSON escape
  for (const key of [RTL, CONTROLS, C1]) {
    await page.locator('#objects tr.row', { hasText: shownAs(key) }).click()
    await page
      .locator('#object h2.mono')
      .filter({ hasText: shownAs(key) })
      .waitFor({ timeout: WAIT })
    assert.is(await page.locator('#json').textContent(), jsonShownAs({ key, note: key }))
    assert.not.match(await shownMarkup('#detail'), HIDDEN_CHARS, `no raw control or bidi character in the view of ${shownAs(key)}`)
  }
  // page 2: after a key no header could carry as it is
  await page.click('#next')
  await page.waitForFunction((k) => document.querySelector('#objects tr.row')?.getAttribute('data-key') === k, HOSTILE_KEYS[100], {
    timeout: WAIT,
  })
  assert.equal(await keysShown(), HOSTILE_KEYS.slice(100, 200))
  assert.ok((await page.locator('#objects tbody').textContent())!.includes(shownAs(PAGE2_LAST)))
  // live: a key before the page's first (between page 1's last and the next, in code-unit order,
  // unlike their UTF-8 bytes read as Latin-1) is not this page's
  await page.waitForFunction(() => document.getElementById('live')?.classList.contains('on'), undefined, { timeout: WAIT })
  const applied = await page.evaluate(() => (window as any).__statewright.applied as number)
  const before = { key: 'u-0099-\u00ff', note: '' }
  await f.manager.db.write(hostile, (w) => {
    hostile.insert(w, before)
  })
  await page.waitForFunction((n) => (window as any).__statewright.applied > n, applied, { timeout: WAIT })
  assert.equal(await keysShown(), HOSTILE_KEYS.slice(100, 200), `${before.key} is not on page 2`)
  // page 3: after a key of controls
  await page.click('#next')
  await page.waitForFunction((k) => document.querySelector('#objects tr.row')?.getAttribute('data-key') === k, HOSTILE_KEYS[200], {
    timeout: WAIT,
  })
  assert.equal(await keysShown(), HOSTILE_KEYS.slice(200))
  assert.is(await page.locator('#next').count(), 0, 'the last page has no next page')
  const fresh = { key: 'u-0300-live', note: '' }
  await f.manager.db.write(hostile, (w) => {
    hostile.insert(w, fresh)
  })
  await page.waitForFunction((k) => [...document.querySelectorAll('#objects tr.row')].some((tr: any) => tr.dataset.key === k), fresh.key, {
    timeout: WAIT,
  })
  assert.not.match(await shownMarkup('#objects tbody'), HIDDEN_CHARS)
  await page.click('#first')
  await page.waitForFunction((k) => document.querySelector('#objects tr.row')?.getAttribute('data-key') === k, HOSTILE_KEYS[0], {
    timeout: WAIT,
  })
  await f.manager.db.write(hostile, (w) => {
    hostile.delete(w, before)
    hostile.delete(w, fresh)
  })
  assert.is(await page.locator('img').count(), 0, 'no <img> element was made')
  assert.is(xssHits, 0, 'the probe ran')
  assert.equal(dialogs, [])
  assert.equal(pageErrors, [])
})

test('the topology with controls and bidi overrides in names: one SVG node per node, every text escaped', async () => {
  need()
  const gw = 'gateway.gateway.networking.k8s.io:ns\u0000/gw\x1b[2J'
  const route = 'httproute.gateway.networking.k8s.io:ns/r\u202e'
  const graph: InspectGraph = {
    nodes: [
      { id: gw, kind: 'Gateway', name: `gw-\x1b]0;pwned\x07${RTL}`, namespace: 'ns\u0000' },
      { id: route, kind: 'HTTPRoute\u009b', name: `r${OSC8}${BIDI}${XSS}`, namespace: 'ns' },
      { id: 'rlp\n', kind: 'RateLimitPolicy', name: `${CONTROLS}\u2066`, namespace: 'ns', policy: true, status: 'Enforced\u202e' },
    ],
    edges: [
      { from: gw, to: route },
      { from: 'rlp\n', to: route, policy: true },
    ],
  }
  const component = `evil\u202e\x1b[0m`
  const s = await serve({ db: f.manager.db, graphs: () => [{ component, graph }] })
  try {
    await page.goto('about:blank')
    await page.goto(`${s.base}/ui/#/topology`)
    await page.locator('.topo svg').waitFor({ timeout: WAIT })
    assert.is(await page.locator('.topo svg g.node').count(), graph.nodes.length)
    assert.is(await page.locator('.topo svg .edge').count(), graph.edges.length)
    // the server's SVG names a node by its id as shown (XML cannot hold a NUL, even as a reference)
    const ids = await page.locator('.topo svg g.node').evaluateAll((gs: any[]) => gs.map((g) => g.getAttribute('data-id') as string))
    assert.equal(ids.sort(), graph.nodes.map((n) => shownAs(n.id)).sort())
    const box = await page.locator('.topo svg').boundingBox()
    assert.ok(box && box.width > 0 && box.height > 0, 'the SVG is drawn')
    const text = (await page.locator('.topo').textContent())!
    for (const n of graph.nodes) assert.ok(text.includes(shownAs(n.name)), `${shownAs(n.name)} is shown`)
    assert.ok(text.includes(shownAs(component)))
    assert.ok(text.includes('rtl-\\u202egnp.exe'))
    assert.not.match(text, HIDDEN_CHARS, 'no raw control or bidi character in the topology')
    assert.not.match(await shownMarkup('#view'), HIDDEN_CHARS, 'nor in its markup')
    await page.locator('.topo g.node', { hasText: shownAs(graph.nodes[0]!.name) }).click()
    await page.locator('#node-detail').waitFor({ timeout: WAIT })
    assert.ok((await page.locator('#node-detail').textContent())!.includes(shownAs(gw)), 'the locator is shown escaped')
    assert.not.match(await shownMarkup('#node-detail'), HIDDEN_CHARS)
    assert.is(await page.locator('img').count(), 0, 'no <img> element was made')
  } finally {
    await s.close()
  }
  assert.is(xssHits, 0, 'the probe ran')
  assert.equal(pageErrors, [])
})

test("the topology is the server's SVG as it is: a click on a node shows its details, even for ids alike once escaped", async () => {
  need()
  // 'a\x1b' (ESC) and 'a\\x1b' (a backslash) both show as `a\x1b`: the page tells them apart
  const graph: InspectGraph = {
    nodes: [
      { id: 'a\x1b', kind: 'Gateway', name: 'esc', namespace: 'ns', effective: { which: 'esc' } },
      { id: 'a\\x1b', kind: 'Gateway', name: 'backslash', namespace: 'ns', effective: { which: 'backslash' } },
      { id: 'p', kind: 'RateLimitPolicy', name: 'p', namespace: 'ns', policy: true, status: 'Accepted' },
    ],
    edges: [{ from: 'p', to: 'a\\x1b', policy: true }],
  }
  const s = await serve({ db: f.manager.db, graphs: () => [{ component: 'c', graph }] })
  try {
    const server = await (await fetch(`${s.base}/topology?format=svg`)).text()
    await page.goto('about:blank')
    await page.goto(`${s.base}/ui/#/topology`)
    await page.locator('.topo svg').waitFor({ timeout: WAIT })
    // the server's drawing, unchanged but for what the page adds (focus, role, the selection)
    const shown = await page.locator('.topo svg').evaluate((svg: any) => {
      const copy = svg.cloneNode(true)
      for (const g of copy.querySelectorAll('g.node')) {
        g.removeAttribute('tabindex')
        g.removeAttribute('role')
        g.classList.remove('selected')
      }
      return copy.outerHTML as string
    })
    const parsed = await page.evaluate((text: string) => {
      const doc = new (window as any).DOMParser().parseFromString(text, 'image/svg+xml')
      return document.importNode(doc.documentElement, true).outerHTML as string
    }, server)
    assert.is(shown, parsed, "the page shows the server's SVG")
    assert.is(await page.locator('.topo g.node').count(), 3)
    assert.is(await page.locator('.topo g.node[data-id="a\\\\x1b"]').count(), 2, 'the two ids look alike in the SVG')
    // the legend's colour is the server's
    assert.is(
      await page.locator('.legend rect').getAttribute('fill'),
      await page.locator('.topo g.node.st-Accepted rect').getAttribute('fill'),
    )
    for (const [name, which, policies] of [
      ['esc', 'esc', false],
      ['backslash', 'backslash', true],
    ] as const) {
      await page.locator('.topo g.node', { hasText: name }).click()
      await page
        .locator('#node-detail h2')
        .filter({ hasText: `Gateway ns/${name}` })
        .waitFor({ timeout: WAIT })
      assert.match(await page.locator('#effective').innerText(), new RegExp(`"which": "${which}"`))
      assert.is((await page.locator('#node-detail').innerText()).includes('policies'), policies, `the policies targeting ${name}`)
      assert.is(await page.locator('.topo g.node.selected').count(), 1)
    }
    assert.ok((await page.locator('#node-detail dd.mono').first().textContent())!.includes('a\\x1b'))
    // the keyboard: a node takes the focus, Enter opens it
    await page.locator('.topo g.node.st-Accepted').focus()
    await page.keyboard.press('Enter')
    await page.locator('#node-detail h2').filter({ hasText: 'RateLimitPolicy ns/p' }).waitFor({ timeout: WAIT })
    assert.is(await page.locator('img').count(), 0)
  } finally {
    await s.close()
  }
  assert.equal(pageErrors, [])
})

test('100 000 objects: the first page opens, pages on; the page stays responsive under 1 000 changes/s', async () => {
  need()
  const t0 = Date.now()
  await go('#/t/bulk')
  await page.locator('#objects tr.row').first().waitFor({ timeout: WAIT })
  const opened = Date.now() - t0
  assert.is(await page.locator('#objects tr.row').count(), 100)
  assert.match(await page.locator('#count').innerText(), /100000 objects/)
  await page.click('#next')
  await page.waitForFunction(() => document.querySelector('#objects tr.row')?.getAttribute('data-key') === 'obj-000100', undefined, {
    timeout: WAIT,
  })
  await page.click('#first')
  await page.waitForFunction(() => document.querySelector('#objects tr.row')?.getAttribute('data-key') === 'obj-000000', undefined, {
    timeout: WAIT,
  })
  await page.waitForFunction(() => document.getElementById('live')?.classList.contains('on'), undefined, { timeout: WAIT })
  // probe: the longest gap between 10 ms timer ticks (a busy main thread delays them), and the
  // time a click takes to change the page
  await page.evaluate(() => {
    const w = window as any
    w.__gaps = []
    let last = performance.now()
    w.__probe = setInterval(() => {
      const now = performance.now()
      w.__gaps.push(now - last)
      last = now
    }, 10)
  })
  // 1 000 changes a second for 3 s: every 100 ms, 100 objects of the first page and beyond updated
  const seconds = 3
  let written = 0
  const started = Date.now()
  for (let tick = 0; tick < seconds * 10; tick++) {
    await f.manager.db.write(bulk, (w) => {
      for (let i = 0; i < 100; i++) {
        const k = (tick * 100 + i) % 1000
        bulk.insert(w, { name: `obj-${String((k * 97) % BULK).padStart(6, '0')}`, n: tick + 1 })
      }
    })
    written += 100
    const due = started + (tick + 1) * 100
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())))
  }
  const clickStart = Date.now()
  await page.locator('#objects tr.row').nth(3).click()
  await page.locator('#json').waitFor({ timeout: WAIT })
  const clickMs = Date.now() - clickStart
  await page.waitForFunction((n) => (window as any).__statewright.applied >= n, written, { timeout: WAIT })
  const r = await page.evaluate(() => {
    const w = window as any
    clearInterval(w.__probe)
    const gaps = (w.__gaps as number[]).slice().sort((a, b) => a - b)
    return { maxGap: gaps[gaps.length - 1]!, p99Gap: gaps[Math.floor(gaps.length * 0.99)]!, ticks: gaps.length, ...w.__statewright }
  })
  const rate = Math.round(written / ((Date.now() - started) / 1000))
  console.log(
    `  100k-object table: first page in ${opened} ms; ${written} changes at ~${rate}/s: longest main-thread gap ${r.maxGap.toFixed(0)} ms (p99 ${r.p99Gap.toFixed(0)} ms over ${r.ticks} ticks), longest batch ${r.maxFlushMs.toFixed(1)} ms over ${r.flushes} batches, a click answered in ${clickMs} ms`,
  )
  // Bounds that tell a frozen page (one that renders every change, or all 100k rows: it blocks for
  // many seconds) from a working one on a loaded 2-core machine; the figures themselves are logged
  // above, not asserted tighter (performance lives in bench/).
  assert.ok(opened < 10_000, `the first page of 100k objects took ${opened} ms`)
  assert.ok(r.p99Gap < 1000, `the main thread was blocked ${r.p99Gap} ms at the 99th percentile`)
  assert.ok(r.maxGap < 3000, `the main thread was blocked ${r.maxGap} ms`)
  assert.ok(r.maxFlushMs < 500, `a batch of changes took ${r.maxFlushMs} ms`)
  assert.ok(clickMs < 5000, `a click took ${clickMs} ms`)
  assert.equal(pageErrors, [])
})

test.run()
