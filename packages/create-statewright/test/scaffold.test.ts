// create-statewright: the project it writes is green out of the box: it type-checks and its own test
// (the operator on the test server, its webhook registered from its own manifests) passes, run here
// against the workspace's packages (the packed-package check runs it again from the tarballs, with a
// real npm install). Bad input: a bad name, a directory that is not empty.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ScaffoldError, scaffold } from 'create-statewright'

const root = new URL('../../../', import.meta.url).pathname
// inside the workspace, so that the project resolves the workspace's packages
const base = join(root, 'node_modules/.cache/create-statewright-test')
mkdirSync(base, { recursive: true })
const tmp = mkdtempSync(join(base, 'run-'))

test('the project it writes type-checks and its test passes, with no edits', () => {
  const dir = join(tmp, 'shop-operator')
  const files = scaffold(dir)
  for (const f of [
    'package.json',
    'tsconfig.json',
    'src/operator.ts',
    'src/main.ts',
    'test/operator.test.ts',
    'Dockerfile',
    '.gitignore',
    '.dockerignore',
    '.github/workflows/ci.yml',
    'README.md',
  ])
    assert.ok(files.includes(f), `${f} written`)
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  assert.is(pkg.name, 'shop-operator')
  assert.match(pkg.dependencies['@statewright/controller'], /^\^\d+\.\d+\.\d+/)
  assert.match(readFileSync(join(dir, 'src/operator.ts'), 'utf8'), /name: 'shop-operator'/)
  const tsc = spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', dir, '--customConditions', '@statewright/source'],
    {
      encoding: 'utf8',
    },
  )
  assert.is(tsc.status, 0, tsc.stdout + tsc.stderr)
  const run = spawnSync(process.execPath, ['--conditions=@statewright/source', '--import', 'tsx', '--test', 'test/operator.test.ts'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
  })
  assert.is(run.status, 0, run.stdout + run.stderr)
  assert.match(run.stdout, /# pass 1/)
})

test('bad input: a name that cannot name an operator, a directory that is not empty', () => {
  assert.throws(
    () => scaffold(join(tmp, 'Bad_Name')),
    (e: unknown) => e instanceof ScaffoldError && /lower-case letters, digits and dashes/.test(String(e)),
  )
  const full = join(tmp, 'full')
  mkdirSync(full)
  writeFileSync(join(full, 'keep.txt'), 'mine')
  assert.throws(() => scaffold(full), /exists and is not empty/)
  assert.is(readFileSync(join(full, 'keep.txt'), 'utf8'), 'mine', 'nothing overwritten')
  assert.not.ok(existsSync(join(full, 'package.json')))
})

test.after(() => rmSync(tmp, { recursive: true, force: true }))
test.run()
