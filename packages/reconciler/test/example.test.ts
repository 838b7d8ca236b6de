// The memos example (examples/memos.ts) runs its whole scenario and ends in sync.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../..', import.meta.url))

test('examples/memos.ts runs to a summary in sync, by itself', async () => {
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--conditions=@statewright/source', '--import', 'tsx', 'examples/memos.ts'],
      { cwd: root, timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout)),
    )
  })
  assert.match(out, /prune: removed stray file stray\.txt/)
  assert.match(out, /health: degraded \(2 errors: /)
  assert.match(out, /failed delete: groceries: EACCES/)
  assert.match(out, /1 out of sync \(repaired\)/)
  assert.match(out, /in sync: {3}yes/)
  assert.match(out, /health: {4}ok/)
})

test.run()
