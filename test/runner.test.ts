// The test runner's own output (scripts/test.mjs): no colour codes when stdout is not a terminal,
// every failure repeated with its folder, file, test name and assertion diff, one summary line per
// folder, and the closing "N passed, N failed" line with a failing exit code.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const dir = join(root, '.tmp', `runner-${process.pid}`)

test('runner output: plain text off a terminal, failures with file, name and diff, a summary per folder', () => {
  mkdirSync(join(dir, 'a'), { recursive: true })
  mkdirSync(join(dir, 'b'), { recursive: true })
  const body = (name: string, ok: boolean) =>
    `import { test } from 'uvu'\nimport * as assert from 'uvu/assert'\ntest(${JSON.stringify(name)}, () => { assert.equal({ n: 1 }, { n: ${ok ? 1 : 2} }) })\ntest.run()\n`
  writeFileSync(join(dir, 'a', 'good.test.ts'), body('passes', true))
  writeFileSync(join(dir, 'b', 'bad.test.ts'), body('compares n', false))
  try {
    const r = spawnSync(process.execPath, [join(root, 'scripts/test.mjs')], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, STATEWRIGHT_TEST_FOLDERS: `${join(dir, 'a')},${join(dir, 'b')}` },
    })
    const out = r.stdout + r.stderr
    assert.is(r.status, 1, out)
    assert.not.ok(/\x1b\[/.test(out), 'no ANSI escape codes when stdout is not a terminal')
    assert.match(out, /Failures\n/)
    assert.match(out, `${join(dir, 'b')}/bad.test.ts › compares n`)
    assert.match(out, 'Expected values to be deeply equal')
    assert.match(out, /Actual:[\s\S]*"n":.1[\s\S]*Expected:[\s\S]*"n":.2/)
    assert.match(out, new RegExp(`${join(dir, 'a')}\\s+1 passed, 0 failed`))
    assert.match(out, new RegExp(`${join(dir, 'b')}\\s+0 passed, 1 failed`))
    assert.match(r.stdout, /\n1 passed, 1 failed\n$/, `stderr: ${r.stderr}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.run()
