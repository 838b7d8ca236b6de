// gen-types: the committed examples/site-types.ts is what the generator makes of examples/site-crd.yaml
// (so the example's types cannot drift from its CRD; the workspace type-check compiles them), the CLI
// prints the same, and bad input gets a clear error.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { genTypes } from '../src/index.ts'

const root = new URL('../../../', import.meta.url).pathname
const crd = readFileSync(`${root}examples/site-crd.yaml`, 'utf8')

test('examples/site-types.ts is the generated output of examples/site-crd.yaml', async () => {
  const ts = await genTypes(crd)
  assert.fixture(ts, readFileSync(`${root}examples/site-types.ts`, 'utf8'))
  assert.match(ts, 'export interface Site extends KubeObject')
  assert.match(ts, "export const Site = { apiVersion: 'demo.statewright.io/v1', kind: 'Site' } as const")
  assert.match(ts, /title: string;/, 'required fields are required')
})

test('the statewright CLI prints the same', () => {
  const r = spawnSync(
    process.execPath,
    ['--conditions=@statewright/source', '--import', 'tsx', `${root}packages/cli/src/bin.ts`, 'gen-types', `${root}examples/site-crd.yaml`],
    { encoding: 'utf8' },
  )
  assert.is(r.status, 0, r.stderr)
  assert.is(r.stdout, readFileSync(`${root}examples/site-types.ts`, 'utf8'))
})

test('bad input: no CRD, a missing version', async () => {
  await genTypes('kind: ConfigMap\n').then(
    () => assert.unreachable(),
    (e) => assert.match(e.message, 'no CustomResourceDefinition'),
  )
  await genTypes(crd, { version: 'v9' }).then(
    () => assert.unreachable(),
    (e) => assert.match(e.message, 'has no version "v9"'),
  )
})

test.run()
