// The `statewright` inspection CLI against hostile data: keys, names, kinds, labels, error messages,
// reconciler names, health messages and topology nodes full of escape sequences (SGR, clear screen,
// OSC 8 links, OSC 52 clipboard), 8-bit CSI and other C1, NUL, BEL, backspace, CR, newlines, bidi
// overrides and non-Latin-1 text, served by inspectHandler alone. Every command in every format, with
// colour on a terminal and with NO_COLOR: nothing forbidden reaches stdout or stderr, the hostile
// text is there spelled as escapes, JSON and YAML parse back to the exact data; the DOT and SVG of a
// hostile graph are valid; `show` pages with `continue` tokens.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parse as parseYaml } from 'yaml'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { Reconciler, newStatusIndex, statusPending, type Status } from '@statewright/reconciler'
import { inspectHandler } from '@statewright/controller/inspect'
import { toDot, toSvg } from '../src/index.ts'
import type { InspectGraph } from '@statewright/topology'
import { runInspect } from '../src/inspect.ts'
import { guarded } from '../src/terminal.ts'

const OSC8 = '\x1b]8;;http://evil\x07x\x1b]8;;\x07'
const OSC52 = '\x1b]52;c;ZXZpbA==\x07'
/** Everything a terminal must not receive raw, and text that must come through as it is. */
const HOSTILE = `\x1b[31mred\x1b[0m \x1b[2J ${OSC8} ${OSC52} \u009b2J \u0085\u009d \x00 \x07 \x08 \r \n \t \u202eevil\u202c \u2066iso\u2069 \x7f 日本語`
/** HOSTILE as the terminal must show it: every control spelled out, nothing dropped. */
const SHOWN =
  '\\x1b[31mred\\x1b[0m \\x1b[2J \\x1b]8;;http://evil\\x07x\\x1b]8;;\\x07 \\x1b]52;c;ZXZpbA==\\x07 \\x9b2J \\x85\\x9d \\x00 \\x07 \\x08 \\r \\n \\t \\u202eevil\\u202c \\u2066iso\\u2069 \\x7f 日本語'
/** A line of /readyz cannot hold a newline (the reasons are one a line). */
const HOSTILE_LINE = HOSTILE.replace(' \n', '')
const SHOWN_LINE = SHOWN.replace(' \\n', '')

/** What no output may hold (colour codes of the CLI's own aside: see `assertNoControls`). */
const FORBIDDEN = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/
const SGR = /\x1b\[(\d+)m/g

interface Thing {
  kind: string
  metadata: { namespace: string; name: string; labels: Record<string, string> }
  fail?: boolean
  status: Status
}
const thingKey = (t: Thing) => `${t.metadata.namespace}/${t.metadata.name}`
const thingStatus = newStatusIndex<Thing>((t) => t.status)
const things = new Table<Thing>({
  name: 'things',
  primary: defineIndex<Thing, string>({ name: 'key', key: thingKey, unique: true }),
  indexes: [thingStatus],
})
const thing = (name: string, fail = false): Thing => ({
  kind: `Kind ${HOSTILE}`,
  metadata: { namespace: `ns ${HOSTILE}`, name, labels: { note: HOSTILE } },
  fail,
  status: statusPending(),
})
const OK_NAME = `ok ${HOSTILE}`
const BAD_NAME = `bad ${HOSTILE}`
const GONE_NAME = `gone ${HOSTILE}`

/** A table read page by page: 2500 keys, the last of the first page outside Latin-1, of the second a control. */
const pages = new Table<{ key: string }>({
  name: 'pages',
  primary: defineIndex<{ key: string }, string>({ name: 'key', key: (p) => p.key, unique: true }),
})
const PAGE_KEYS = Array.from({ length: 2500 }, (_, i) => {
  const k = `u-${String(i).padStart(4, '0')}`
  return i === 999 ? `${k}-日本語` : i === 1999 ? `${k}-\u009b\x1b[2J` : k
})

const GRAPH: InspectGraph = {
  nodes: [
    { id: `gw ${HOSTILE}`, kind: `Gateway ${HOSTILE}`, name: `gw ${HOSTILE}`, namespace: `ns ${HOSTILE}` },
    { id: 'route', kind: 'HTTPRoute', name: `r ${HOSTILE}`, namespace: 'ns' },
    { id: `pol ${HOSTILE}`, kind: 'RateLimitPolicy', name: `p ${HOSTILE}`, namespace: 'ns', policy: true, status: `Enforced ${HOSTILE}` },
  ],
  edges: [
    { from: `gw ${HOSTILE}`, to: 'route' },
    { from: `pol ${HOSTILE}`, to: `gw ${HOSTILE}`, policy: true },
  ],
}

const REC_NAME = `rec ${HOSTILE}`
const STATUSZ = {
  name: `proc ${HOSTILE}`,
  state: `running ${HOSTILE}`,
  reflectors: [{ name: `refl ${HOSTILE}`, ready: false, lastError: `list: ${HOSTILE}` }],
  derivations: [{ name: `der ${HOSTILE}`, level: 'degraded', message: `derive: ${HOSTILE}` }],
  reconciler: { name: REC_NAME, level: 'degraded', message: `msg ${HOSTILE}` },
  drift: [{ name: `drift ${HOSTILE}`, level: 'ok', message: `dm ${HOSTILE}` }],
  components: [{ name: `comp ${HOSTILE}`, level: `lvl ${HOSTILE}`, message: `cm ${HOSTILE}` }],
}
const READYZ = `not ready:\n- reflector ${HOSTILE_LINE}\n- derivation der\n`

let db: DB
let rec: Reconciler<Thing>
let server: Server
let url = ''
/** The request URLs the server saw (paging). */
const requests: string[] = []

test.before(async () => {
  db = new DB({ tables: [things, pages] })
  rec = new Reconciler<Thing>({
    name: REC_NAME,
    db,
    table: things,
    statusIndex: thingStatus,
    getObjectStatus: (t) => t.status,
    setObjectStatus: (t, status) => ({ ...t, status }),
    operations: {
      update: (t) => {
        if (t.fail) throw new Error(`apply ${t.metadata.name}: ${HOSTILE}`)
      },
      delete: () => {
        throw new Error(`delete: ${HOSTILE}`)
      },
    },
    retry: { minMs: 600_000, maxMs: 600_000 }, // no retry during the tests: the data stays put
    onError: () => {},
  })
  await db.write([things, pages], (w) => {
    for (const t of [thing(OK_NAME), thing(BAD_NAME, true), thing(GONE_NAME)]) things.insert(w, t)
    for (const key of PAGE_KEYS) pages.insert(w, { key })
  })
  rec.start()
  await rec.waitForRevision(things.revision(db.readTxn()))
  await db.write(things, (w) => {
    things.delete(w, thing(GONE_NAME))
  })
  await rec.waitForRevision(things.revision(db.readTxn()))
  assert.equal(
    rec.failures().map((f) => [f.deleted, f.error]),
    [
      [false, `apply ${BAD_NAME}: ${HOSTILE}`],
      [true, `delete: ${HOSTILE}`],
    ],
  )
  const inspect = inspectHandler({
    db,
    reconcilers: () => [rec],
    graphs: () => [{ component: `comp ${HOSTILE}`, graph: GRAPH }],
    status: () => STATUSZ,
  })
  server = createServer((req, res) => {
    requests.push(req.url ?? '')
    // the Manager's /readyz, whose reasons are plain text lines
    if (req.url === '/readyz') return void res.writeHead(503, { 'content-type': 'text/plain' }).end(READYZ)
    inspect(req, res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
test.after(async () => {
  await rec.stop()
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

interface Run {
  code: number
  stdout: string
  stderr: string
  color: boolean
  what: string
}
const MODES = [
  { color: true, env: {} },
  { color: false, env: { NO_COLOR: '1' } },
] as const

/** Runs one command with a fake terminal (colour on, or NO_COLOR); `until` ends a watch once it holds. */
async function run(args: string[], mode: (typeof MODES)[number], until?: (out: string) => boolean): Promise<Run> {
  let stdout = ''
  let stderr = ''
  const ctl = new AbortController()
  const io = {
    stdout: {
      write: (s: string) => {
        stdout += s
        if (until?.(stdout)) ctl.abort()
      },
      isTTY: true,
    },
    stderr: { write: (s: string) => void (stderr += s) },
    env: mode.env,
    signal: ctl.signal,
  }
  const [cmd, ...rest] = args
  const code = await runInspect(cmd!, [...rest, '--url', url], io)
  return { code, stdout, stderr, color: mode.color, what: `${args.join(' ')} (${mode.color ? 'colour' : 'NO_COLOR'})` }
}

/** Fails naming the command and the first forbidden code point in its stdout or stderr. */
function assertNoControls(r: Run): void {
  for (const [stream, text] of [
    ['stdout', r.stdout],
    ['stderr', r.stderr],
  ] as const) {
    const codes = [...text.matchAll(SGR)].map((m) => Number(m[1]))
    if (r.color && stream === 'stdout')
      assert.ok(
        codes.every((c) => [0, 1, 2, 31, 32, 33].includes(c)),
        `${r.what}: SGR ${codes}`,
      )
    const rest = r.color && stream === 'stdout' ? text.replace(SGR, '') : text
    const m = FORBIDDEN.exec(rest)
    if (m) {
      const cp = m[0].codePointAt(0)!.toString(16).padStart(4, '0')
      assert.unreachable(
        `${r.what}, ${stream}: U+${cp} at ${m.index} in ${JSON.stringify(rest.slice(Math.max(0, m.index - 30), m.index + 30))}`,
      )
    }
  }
}

/** A JSON text's raw C1 and bidi characters (JSON.stringify would pass them through). */
const RAW_IN_JSON = /[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

const getJson = async (path: string) => (await fetch(url + path)).json() as Promise<any>

test('status and status --errors show hostile object keys, reconciler names and errors as visible escapes, never raw (the reported bug)', async () => {
  for (const mode of MODES) {
    for (const args of [['status'], ['status', '--errors']]) {
      const r = await run(args, mode)
      assert.is(r.code, 0, r.stderr)
      assertNoControls(r)
      const plain = r.stdout.replace(SGR, '')
      assert.ok(plain.includes(`ns ${SHOWN}/bad ${SHOWN}`), `${r.what}: the failing object's key\n${plain}`)
      assert.ok(plain.includes(`ns ${SHOWN}/gone ${SHOWN}`), `${r.what}: the failed delete's key`)
      assert.ok(plain.includes(`apply bad ${SHOWN}: ${SHOWN}`), `${r.what}: the update's error`)
      assert.ok(plain.includes(`delete: ${SHOWN}`), `${r.what}: the delete's error`)
      if (args.length === 1) assert.ok(plain.includes(`reconciler rec ${SHOWN} (table things)`), r.what)
    }
  }
})

test('every command in every output format, coloured or not, writes no C0 (but newlines), C1 or bidi control', async () => {
  const commands = [
    ['tables'],
    ['show', 'things'],
    ['show', 'pages', '--limit', '1500'],
    ['show', 'things', '--prefix', 'ns'],
    ['show', 'things', '--index', 'key', '--key', `ns ${HOSTILE}/${OK_NAME}`],
    ['status'],
    ['status', '--errors'],
    ['status', REC_NAME],
    ['status', 'nope'],
    ['health'],
    ['topology'],
    ['topology', '--dot'],
    ['topology', '--svg'],
  ]
  for (const mode of MODES) {
    for (const args of commands) {
      for (const o of args[0]!.startsWith('topology') && args.length > 1 ? ['table'] : ['table', 'json', 'yaml']) {
        assertNoControls(await run([...args, '-o', o], mode))
      }
    }
    for (const o of ['table', 'json']) assertNoControls(await run(['watch', 'things', '-o', o], mode, (s) => s.split('\n').length > 2))
  }
})

test('table output shows every hostile field spelled as escapes: keys, namespaces, names, kinds, labels nowhere dropped', async () => {
  for (const mode of MODES) {
    const show = await run(['show', 'things'], mode)
    assert.is(show.code, 0, show.stderr)
    const plain = show.stdout.replace(SGR, '')
    for (const s of [`ns ${SHOWN}`, `ok ${SHOWN}`, `bad ${SHOWN}`, `Kind ${SHOWN}`]) assert.ok(plain.includes(s), `show: ${s}\n${plain}`)
    const watch = await run(['watch', 'things'], mode, (s) => s.includes('ADDED') && s.split('\n').length > 3)
    assert.ok(watch.stdout.replace(SGR, '').includes(`ok ${SHOWN}`), watch.stdout)
    assertNoControls(watch)
    const keys = await run(['show', 'pages', '--limit', '2000'], mode)
    assert.ok(keys.stdout.includes('u-1999-\\x9b\\x1b[2J'), 'a key with an 8-bit CSI')
  }
})

test('JSON output (show, tables, status, health, topology, watch -o json) parses back to the exact data and carries no raw C1 or bidi character', async () => {
  const mode = MODES[0]
  const check = async (args: string[], want: unknown) => {
    const r = await run([...args, '-o', 'json'], mode)
    assert.is(r.code, args[0] === 'health' ? 1 : 0, r.stderr) // health: not ready
    assertNoControls(r)
    assert.not.ok(RAW_IN_JSON.test(r.stdout), `${r.what}: a raw C1 or bidi character`)
    assert.equal(JSON.parse(r.stdout), want, r.what)
  }
  await check(['show', 'things'], await getJson('/statedb/tables/things'))
  await check(['tables'], await getJson('/statedb/tables'))
  await check(['status'], await getJson('/reconcilers?errors=1000'))
  await check(['health'], STATUSZ)
  await check(['topology'], [{ component: `comp ${HOSTILE}`, graph: GRAPH }])
  const [entry] = JSON.parse((await run(['show', 'things', '-o', 'json'], mode)).stdout)
  assert.is(entry.object.metadata.labels.note, HOSTILE)
  const watch = await run(['watch', 'things', '-o', 'json'], mode, (s) => s.split('\n').length > 2)
  assert.not.ok(RAW_IN_JSON.test(watch.stdout))
  const lines = watch.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  assert.equal(
    lines.map((e) => e.object.metadata.name).sort(), // the stream's order is the revisions'
    [BAD_NAME, OK_NAME],
  )
})

test('YAML output escapes C0, C1 and bidi characters inside double-quoted scalars and parses back to the exact data', async () => {
  for (const [args, want] of [
    [['show', 'things'], await getJson('/statedb/tables/things')],
    [
      ['status', '--errors'],
      (await getJson('/reconcilers?errors=1000')).map((r: any) => ({ name: r.name, errors: r.errors, failedDeletes: r.failedDeletes })),
    ],
    [['topology'], [{ component: `comp ${HOSTILE}`, graph: GRAPH }]],
  ] as const) {
    const r = await run([...args, '-o', 'yaml'], MODES[1])
    assert.is(r.code, 0, r.stderr)
    assertNoControls(r)
    assert.equal(parseYaml(r.stdout), want, r.what)
    assert.ok(r.stdout.includes('\\u009b2J'), `${r.what}: the 8-bit CSI as an escape`)
    assert.ok(r.stdout.includes('\\u202eevil'), `${r.what}: the RTL override as an escape`)
  }
})

test("health shows the /readyz reasons and every part's name and message with their escapes visible", async () => {
  for (const mode of MODES) {
    const r = await run(['health'], mode)
    assert.is(r.code, 1, 'not ready')
    assertNoControls(r)
    const plain = r.stdout.replace(SGR, '')
    assert.ok(plain.includes(`  - reflector ${SHOWN_LINE}\n`), plain)
    for (const s of [
      `refl ${SHOWN}`,
      `list: ${SHOWN}`,
      `der ${SHOWN}`,
      `derive: ${SHOWN}`,
      `rec ${SHOWN}`,
      `msg ${SHOWN}`,
      `cm ${SHOWN}`,
      `lvl ${SHOWN}`,
    ])
      assert.ok(plain.includes(s), `${r.what}: ${s}\n${plain}`)
    assert.ok(plain.includes(`(proc ${SHOWN}, running ${SHOWN})`), plain)
  }
})

test('an error the server sends, written to stderr, shows its escapes (a reconciler list with a hostile name)', async () => {
  for (const mode of MODES) {
    const r = await run(['status', 'nope'], mode)
    assert.is(r.code, 1)
    assertNoControls(r)
    assert.ok(r.stderr.includes(`no reconciler "nope" (reconcilers: rec ${SHOWN})`), r.stderr)
  }
})

test('topology: the tree, --dot and --svg show hostile node names, kinds, namespaces and statuses as escapes', async () => {
  for (const mode of MODES) {
    const t = await run(['topology'], mode)
    assert.is(t.code, 0, t.stderr)
    assertNoControls(t)
    const plain = t.stdout.replace(SGR, '')
    assert.ok(plain.includes(`comp ${SHOWN}\n`), plain)
    assert.ok(plain.includes(`Gateway ${SHOWN} ns ${SHOWN}/gw ${SHOWN}`), plain)
    assert.ok(plain.includes(`← policy RateLimitPolicy ns/p ${SHOWN} [Enforced ${SHOWN}]`), plain)
    assert.ok(plain.includes(`HTTPRoute ns/r ${SHOWN}`), plain)
    const svg = await run(['topology', '--svg'], mode)
    assertNoControls(svg)
    assertWellFormedXml(svg.stdout)
    assert.ok(svg.stdout.includes('\\x1b[2J'))
    const dot = await run(['topology', '--dot'], mode)
    assertNoControls(dot)
    assert.ok(dot.stdout.includes('\\\\x1b[2J'), 'in a DOT string, the escape of ESC is a backslash, escaped')
  }
})

// ---- DOT and SVG of hostile graphs ----

/** XML 1.0 forbids these, raw or as character references. */
const NOT_XML = /[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** A strict check of the XML toSvg writes: allowed characters, entities, tags with quoted attributes, balanced. */
function assertWellFormedXml(xml: string): void {
  const bad = NOT_XML.exec(xml)
  assert.not.ok(
    bad,
    `a character XML forbids at ${bad?.index}: ${JSON.stringify(xml.slice((bad?.index ?? 0) - 20, (bad?.index ?? 0) + 20))}`,
  )
  for (const m of xml.matchAll(/&([^;]{0,10});?/g)) {
    const ref = /^&(amp|lt|gt|quot|apos|#(\d+)|#x([0-9a-f]+));/i.exec(m[0])
    assert.ok(ref, `an & that starts no entity: ${JSON.stringify(xml.slice(m.index!, m.index! + 16))}`)
    const cp = ref![2] ? Number(ref![2]) : ref![3] ? parseInt(ref![3], 16) : undefined
    if (cp !== undefined) assert.not.ok(NOT_XML.test(String.fromCodePoint(cp)), `a reference to U+${cp.toString(16)}`)
  }
  const tag = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[A-Za-z][\w:.-]*="[^"<]*")*)\s*(\/?)>/y
  const open: string[] = []
  let roots = 0
  for (let i = xml.indexOf('<'); i >= 0; i = xml.indexOf('<', i)) {
    tag.lastIndex = i
    const m = tag.exec(xml)
    assert.ok(m, `a malformed tag at ${i}: ${JSON.stringify(xml.slice(i, i + 60))}`)
    const [, close, name, , selfClosing] = m!
    if (close) assert.is(open.pop(), name, `</${name}> closes what is open`)
    else if (!selfClosing) {
      if (open.length === 0) roots++
      open.push(name!)
    }
    i = tag.lastIndex
  }
  assert.equal(open, [], 'every element closed')
  assert.is(roots, 1, 'one root element')
}

const WORST = `${HOSTILE} \ud800 \udc00 \ufffe \uffff "q' <b> & &amp; \\`
const WORST_GRAPH: InspectGraph = {
  nodes: [
    { id: `a${WORST}`, kind: `K${WORST}`, name: `n${WORST}`, namespace: `ns${WORST}`, status: `s${WORST}` },
    { id: 'a\x1b', kind: 'K', name: 'esc' },
    { id: 'a\\x1b', kind: 'K', name: 'backslash' },
  ],
  edges: [{ from: `a${WORST}`, to: 'a\x1b' }],
}
/** Names that plain objects hold already (dagre keeps nodes in them). */
const PROTO_GRAPH: InspectGraph = {
  nodes: [
    { id: '__proto__', kind: 'K', name: 'proto', policy: true, status: 'constructor' },
    { id: 'constructor', kind: 'K', name: 'ctor' },
  ],
  edges: [{ from: '__proto__', to: 'constructor', policy: true }],
}

test('toSvg of hostile names, kinds, ids and statuses is well-formed XML 1.0 with the controls spelled out', () => {
  const svg = toSvg([{ component: `c${WORST}`, graph: WORST_GRAPH }])
  assertWellFormedXml(svg)
  assert.ok(svg.includes('\\x1b[2J \\x1b]8;;http://evil\\x07x'), 'ESC and BEL spelled out')
  assert.ok(svg.includes('\\ud800 \\udc00 \\ufffe \\uffff'), 'lone surrogates and non-characters spelled out')
  assert.ok(svg.includes('&quot;q&#39; &lt;b&gt; &amp; &amp;amp;'), 'markup escaped')
  assert.is(svg.match(/<g data-id=/g)!.length, WORST_GRAPH.nodes.length)
})

test('a node id "__proto__" or "constructor" and a status "constructor" break neither the layout nor toDot', () => {
  const g = PROTO_GRAPH
  assertWellFormedXml(toSvg([{ component: 'c', graph: g }]))
  const dot = toDot([{ component: 'c', graph: g }])
  assert.ok(dot.includes('"__proto__" -> "constructor" [style=dashed];'), dot)
  assert.not.ok(dot.includes('fillcolor="function'), 'no colour from Object.prototype')
})

/** The quoted strings of a DOT text, with what lies outside them. */
function dotStrings(dot: string): { strings: string[]; outside: string } {
  const strings: string[] = []
  const outside = dot.replace(/"((?:[^"\\]|\\[^])*)"/g, (_m, s: string) => (strings.push(s), 'S'))
  return { strings, outside }
}

test('toDot of hostile names: quotes, backslashes, newlines and controls escaped; one label line per field; distinct ids stay distinct', () => {
  const dot = toDot([{ component: `c${WORST}`, graph: WORST_GRAPH }])
  assert.not.ok(FORBIDDEN.test(dot.replace(/\n/g, '')), 'no control character in the DOT text')
  assert.not.ok(/["\\]/.test(dotStrings(dot).outside), 'every quote and backslash inside a string')
  assert.ok(dot.includes('label="K\\\\x1b[31mred\\\\x1b[0m \\\\x1b[2J'), 'ESC as the text \\x1b, its backslash escaped')
  assert.ok(dot.includes('\\\\\\nns\\\\x1b[31m'), "the kind's escaped backslash, then DOT's \\n: the next field is the next line")
  assert.ok(dot.includes('\\"q\' <b> & &amp; \\\\'), 'a quote and a backslash escaped')
  assert.ok(dot.includes('\\\\n \\\\t'), 'a newline in a field is the text \\n, not a line of the label')
  const ids = [...dot.matchAll(/^ {4}"((?:[^"\\]|\\[^])*)" \[label=/gm)].map((m) => m[1])
  assert.is(new Set(ids).size, WORST_GRAPH.nodes.length, `one distinct id per node: ${ids.join(' | ')}`)
})

test('the guard at the write lets through newlines and, with colour, SGR codes only; anything else shows as its escape', () => {
  let out = ''
  const w = { write: (s: string) => void (out += s) }
  guarded(w, true).write(`\x1b[31mred\x1b[0m\n${HOSTILE}`)
  assert.ok(out.startsWith('\x1b[31mred\x1b[0m\n'))
  assert.not.ok(FORBIDDEN.test(out.replace(SGR, '').replace(/\n/g, '')), JSON.stringify(out))
  out = ''
  guarded(w, false).write(`\x1b[31mred\x1b[0m\n\u009b2J\u202e`)
  assert.is(out, '\\x1b[31mred\\x1b[0m\n\\x9b2J\\u202e')
})

test('show reads every page with continue tokens, a page ending on a key outside Latin-1 or with a control character included', async () => {
  requests.length = 0
  const r = await run(['show', 'pages', '-o', 'json'], MODES[1])
  assert.is(r.code, 0, r.stderr)
  assert.equal(
    JSON.parse(r.stdout).map((e: any) => e.key),
    PAGE_KEYS,
  )
  const asked = requests.filter((u) => u.startsWith('/statedb/tables/pages')).map((u) => new URL(u, url).searchParams)
  assert.is(asked.length, 3)
  assert.ok(
    asked.every((p) => !p.has('after')),
    'continue=, not after=',
  )
  assert.equal(
    asked.slice(1).map((p) => Buffer.from(p.get('continue')!, 'base64url').toString('utf8')),
    [PAGE_KEYS[999], PAGE_KEYS[1999]],
  )
  const limited = await run(['show', 'pages', '-o', 'json', '--limit', '1500'], MODES[1])
  assert.is(JSON.parse(limited.stdout).length, 1500)
})

test.run()
