// Every repository path the docs name exists (issue 37: docs named moved test files and deleted
// sources). A path is looked up from the repository's root, then from the package a page is about
// (docs/k8s.md's `test/fight.test.ts` is packages/k8s/test/fight.test.ts, a package README's paths are
// its own); paths in an anchor's repository are listed below with the repository they belong to.
// Also: every npm script the docs run (`npm run X`) is a script of the root package.json.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const ANCHOR_PATHS = new Map([
  ['test/integration/conversion/conversion_test.go', 'kubernetes/kubernetes (apiextensions-apiserver)'],
  ['examples/color_policy', 'Kuadrant/policy-machinery'],
  ['examples/json_patch', 'Kuadrant/policy-machinery'],
  ['test/operator.test.ts', 'the project npm create statewright writes'],
])

function pages(): Array<{ file: string; pkg?: string }> {
  const out: Array<{ file: string; pkg?: string }> = [{ file: 'README.md' }]
  for (const f of readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'))) {
    const pkg = f.replace(/\.md$/, '')
    out.push({ file: `docs/${f}`, ...(existsSync(join(root, 'packages', pkg)) ? { pkg } : {}) })
  }
  for (const p of readdirSync(join(root, 'packages')))
    if (existsSync(join(root, 'packages', p, 'README.md'))) out.push({ file: `packages/${p}/README.md`, pkg: p })
  return out
}

test('every path the docs name exists', () => {
  const missing: string[] = []
  for (const { file, pkg } of pages()) {
    const text = readFileSync(join(root, file), 'utf8')
    for (const m of text.matchAll(/(?<![\w./{-])((?:packages|scripts|test|examples|bench|docs)\/[\w./-]*[\w-])([*{]?)/g)) {
      if (m[2]) continue // a pattern (pm-*.test.ts, {a,b}.test.ts), not a path
      const p = m[1]!.replace(/\.+$/, '')
      if (ANCHOR_PATHS.has(p)) continue
      const candidates = [join(root, p), ...(pkg ? [join(root, 'packages', pkg, p)] : [])]
      if (!candidates.some((c) => existsSync(c) || existsSync(c + '.ts'))) missing.push(`${file}: ${p}`)
    }
  }
  assert.equal(missing, [], `paths the docs name that do not exist:\n${missing.join('\n')}`)
})

test('every `npm run <script>` the docs give is a script', () => {
  const scripts = Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts)
  const missing: string[] = []
  for (const { file } of pages()) {
    // the scripts of the project npm create writes
    if (file === 'docs/getting-started.md' || file === 'packages/create-statewright/README.md') continue
    for (const m of readFileSync(join(root, file), 'utf8').matchAll(/npm run (?:-s )?([\w:-]+)/g))
      if (!scripts.includes(m[1]!)) missing.push(`${file}: npm run ${m[1]}`)
  }
  assert.equal(missing, [], missing.join('\n'))
})

test.run()
