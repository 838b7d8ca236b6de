// scripts/check-snippets.mjs (run by `npm run typecheck`) fails on a broken snippet and names the
// markdown file and line; and docs/testserver.md's example test, which it only type-checks, runs.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const checker = join(root, 'scripts/check-snippets.mjs')

function check(...docs: string[]) {
  const r = spawnSync(process.execPath, [checker, ...docs], { cwd: root, encoding: 'utf8' })
  return { code: r.status, out: r.stdout + r.stderr }
}

const fence = '```'
const md = (lines: string[]) => lines.join('\n') + '\n'

test('broken snippets fail the check, each error named by markdown file and line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'snippets-test-'))
  try {
    const doc = join(dir, 'broken.md')
    writeFileSync(
      doc,
      md([
        '# A doc', // 1
        '', // 2
        `${fence}ts`, // 3
        "import { DB, Table, defineIndex } from '@statewright/statedb'", // 4
        "const byName = defineIndex<{ name: string }, string>({ name: 'name', key: (o) => o.name, unique: true })", // 5
        "const t = new Table({ name: 't', primary: byName })", // 6
        'const db = new DB({ tables: [t] })', // 7
        fence, // 8
        '', // 9
        '<!-- prelude', // 10
        "import type { DB } from '@statewright/statedb'", // 11
        'declare const db: DB', // 12
        '-->', // 13
        `${fence}ts`, // 14
        'const txn = db.readTxn()', // 15
        'const n: string = db.size', // 16: no such property
        fence, // 17
        '',
        `${fence}ts`, // 19
        'new Cluster({ qps = 100, burst = 2 × qps })', // 20: pseudo code
        fence,
        '',
        `${fence}sh`,
        'npm test',
        fence,
      ]),
    )
    const r = check(doc)
    assert.is(r.code, 1, r.out)
    assert.match(
      r.out,
      `${doc}:16:22: error TS2339: Property 'size' does not exist on type 'DB'`,
      'a type error after a prelude: its markdown line',
    )
    assert.match(r.out, `${doc}:20:36: error TS1127: Invalid character.`, 'a syntax error in another snippet is reported too')
    assert.not.match(r.out, /broken\.md:[1-9]\b|broken\.md:1[0-5]\b/, 'nothing in the correct snippet')
    assert.not.match(r.out, /\.tmp\/snippets/, 'no extracted file names in the report')
    assert.match(r.out, 'snippets: 3 checked, errors above')

    // the same doc fixed passes
    writeFileSync(doc, md(['text', `${fence}ts`, "import { Cluster } from '@statewright/k8s'", 'new Cluster({ qps: 100 })', fence]))
    const ok = check(doc)
    assert.is(ok.code, 0, ok.out)
    assert.match(ok.out, 'snippets: 1 TypeScript snippets in 1 documents type-check')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test("docs/testserver.md's example test runs and passes", () => {
  const text = readFileSync(join(root, 'docs/testserver.md'), 'utf8')
  const from = text.indexOf(`${fence}ts\n`, text.indexOf('## Testing a controller'))
  assert.ok(from > 0, 'the example is there')
  const code = text.slice(from + 6, text.indexOf(`\n${fence}\n`, from))
  // inside the repository, so that its imports resolve through node_modules
  const dir = join(root, '.tmp', `doc-example-${process.pid}`)
  mkdirSync(dir, { recursive: true })
  try {
    writeFileSync(join(dir, 'testserver.test.ts'), code + '\n')
    const r = spawnSync(process.execPath, ['--conditions=@statewright/source', '--import', 'tsx', join(dir, 'testserver.test.ts')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    })
    const out = r.stdout + r.stderr
    assert.is(r.status, 0, out)
    assert.match(out, /Passed:\s+1\b/, out)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.run()
