// Library code never writes to the console (it logs through a Logger, or reports through a hook
// whose default is a process warning): no `console.` outside comments in packages/*/src.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
}

test('no console.* in library code', () => {
  const hits: string[] = []
  for (const pkg of readdirSync(join(root, 'packages'))) {
    for (const f of files(join(root, 'packages', pkg, 'src'))) {
      readFileSync(f, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const code = line.replace(/\/\/.*$/, '').replace(/^\s*\*.*$/, '')
          if (/\bconsole\.(log|error|warn|info|debug|trace)\b/.test(code)) hits.push(`${f.slice(root.length)}:${i + 1}: ${line.trim()}`)
        })
    }
  }
  assert.equal(hits, [])
})

test.run()
