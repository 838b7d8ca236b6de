// The error tree in docs/architecture.md is the one written description of every class statewright
// throws: this test holds it against the classes the packages export. Each class in the tree exists,
// with the parent the tree draws and exported by the package the tree names (inherited from the
// nearest ancestor line that names one); each exported StatewrightError class is in the tree; and a
// class is exported by its own package only, except the root and the four shared failures, which
// every package re-exports.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readFileSync } from 'node:fs'
import { StatewrightError } from '@statewright/statedb'

const PACKAGES = ['statedb', 'reconciler', 'primary', 'k8s', 'nats', 'testserver', 'topology', 'cli', 'controller']
const SHARED = new Set(['StatewrightError', 'ConfigError', 'UsageError', 'StoppedError', 'TimeoutError'])

interface Drawn {
  name: string
  parent: string | undefined
  pkg: string
}

function drawnTree(): Drawn[] {
  const doc = readFileSync(new URL('../docs/architecture.md', import.meta.url), 'utf8')
  const start = doc.indexOf('<!-- errors-tree')
  assert.ok(start >= 0, 'docs/architecture.md has no errors-tree block')
  const from = doc.indexOf('```text\n', start) + 8
  const block = doc.slice(from, doc.indexOf('\n```', from))
  const stack: Drawn[] = []
  const out: Drawn[] = []
  for (const line of block.split('\n')) {
    const m = /^([│├└─ ]*)([A-Z][A-Za-z0-9]+)/.exec(line)
    assert.ok(m, `a tree line without a class: ${line}`)
    const depth = m[1]!.length / 3
    const pkg = /@statewright\/([a-z0-9]+)/.exec(line)?.[1]
    stack.length = depth
    const parent = stack[depth - 1]
    const d: Drawn = { name: m[2]!, parent: parent?.name, pkg: pkg ?? parent?.pkg ?? 'statedb' }
    stack[depth] = d
    out.push(d)
  }
  return out
}

async function exported(): Promise<Map<Function, string[]>> {
  const where = new Map<Function, string[]>()
  for (const p of PACKAGES) {
    const m = (await import(`@statewright/${p}`)) as Record<string, unknown>
    for (const v of Object.values(m))
      if (typeof v === 'function' && (v === StatewrightError || v.prototype instanceof StatewrightError))
        where.set(v, [...(where.get(v) ?? []), p])
  }
  return where
}

test('every exported error class is drawn in docs/architecture.md, with its parent and its package', async () => {
  const drawn = new Map(drawnTree().map((d) => [d.name, d]))
  const where = await exported()
  const seen = new Set<string>()
  for (const [cls, pkgs] of where) {
    seen.add(cls.name)
    const d = drawn.get(cls.name)
    assert.ok(d, `${cls.name} (exported by ${pkgs.join(', ')}) is not in the error tree of docs/architecture.md`)
    const parent = cls === StatewrightError ? undefined : Object.getPrototypeOf(cls).name
    assert.is(d.parent, parent, `${cls.name}: the tree draws it under ${d.parent}, its class extends ${parent}`)
    if (SHARED.has(cls.name)) assert.equal(pkgs, PACKAGES, `${cls.name} is re-exported by every package`)
    else assert.equal(pkgs, [d.pkg], `${cls.name} is exported by @statewright/${d.pkg} only, not by ${pkgs.join(', ')}`)
  }
  for (const name of drawn.keys()) assert.ok(seen.has(name), `the tree draws ${name}, which no package exports`)
})

test.run()
