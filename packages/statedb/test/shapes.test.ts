// The write path keeps its optimized code over a full GC taken between transactions (./src/shapes.ts
// says why it would not): checked in a child process, which can ask V8 for a function's state.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { test } from 'uvu'
import * as assert from 'uvu/assert'

test('a full GC between transactions leaves the write path optimized', () => {
  const child = fileURLToPath(new URL('./shapes-child.ts', import.meta.url))
  // Optimizing on the main thread, so the state asked for is not "optimizing in the background".
  const flags = ['--expose-gc', '--allow-natives-syntax', '--no-concurrent-recompilation']
  const args = ['--conditions=@statewright/source', '--import', 'tsx', ...flags, child]
  const r = spawnSync(process.execPath, args, { encoding: 'utf8' })
  assert.is(r.status, 0, r.stderr)
  const { before, after } = JSON.parse(r.stdout) as Record<'before' | 'after', Record<string, boolean>>
  const all = { 'TableWriter.insert': true, 'TreeWriter.set': true }
  assert.equal(before, all, 'optimized after warm-up (else the test proves nothing)')
  assert.equal(after, all, 'still optimized after the GC')
})

test.run()
