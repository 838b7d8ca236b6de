// Library code never writes to the console (it logs through a Logger, or reports through a hook
// whose default is a process warning): no `console.` outside comments in packages/*/src.
// Library code throws no bare Error: what it throws is a StatewrightError with a `code` callers can
// switch on so no `new Error(` or `throw Error(`
// (nor TypeError, RangeError) outside comments in packages/*/src. The tree is in docs/architecture.md.
// An import of types only says so (`import type { A }`): `import { type A }` stays in the output as a
// bare import that loads the module at run time (it loaded all of @statewright/primary into every
// operator's start through k8s's events.ts).
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

/** Lines of library code (comments dropped) that match `pattern`, as "path:line: text". */
function libraryLines(pattern: RegExp): string[] {
  const hits: string[] = []
  for (const pkg of readdirSync(join(root, 'packages'))) {
    for (const f of files(join(root, 'packages', pkg, 'src'))) {
      readFileSync(f, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const code = line.replace(/\/\/.*$/, '').replace(/^\s*\*.*$/, '')
          if (pattern.test(code)) hits.push(`${f.slice(root.length)}:${i + 1}: ${line.trim()}`)
        })
    }
  }
  return hits
}

test('no console.* in library code', () => {
  assert.equal(libraryLines(/\bconsole\.(log|error|warn|info|debug|trace)\b/), [])
})

test('no bare Error thrown by library code', () => {
  assert.equal(libraryLines(/\b(new|throw)\s+(Error|TypeError|RangeError)\s*\(/), [])
})

test('no import of types only written as a value import (it would load the module at run time)', () => {
  assert.equal(libraryLines(/^import \{\s*(type \w+(\s+as\s+\w+)?\s*,?\s*)+\}\s*from/), [])
})

test.run()
