// Every repository path the docs name exists (issue 37: docs named moved test files and deleted
// sources). A path is looked up from the repository's root, then from the package a page is about
// (docs/k8s.md's `test/fight.test.ts` is packages/k8s/test/fight.test.ts, a package README's paths are
// its own); paths in an anchor's repository are listed below with the repository they belong to.
// Also: every npm script the docs run (`npm run X`) is a script of the root package.json; every
// package and face the docs name (`@statewright/k8s/kinds`) is one; every name a code block of the
// docs imports from a statewright face is exported by it (read from the checked API reports).
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

/** Names of the same shape that are no package: the export condition, a placeholder. */
const NOT_PACKAGES = new Set(['@statewright/source', '@statewright/x'])

/** Each face of each package ('@statewright/k8s', '@statewright/k8s/kinds') with the names it exports. */
function faces(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  for (const p of readdirSync(join(root, 'packages'))) {
    const report = join(root, 'packages', p, 'api-report.md')
    if (!existsSync(report)) continue
    const name = JSON.parse(readFileSync(join(root, 'packages', p, 'package.json'), 'utf8')).name as string
    let names: Set<string> | undefined
    for (const line of readFileSync(report, 'utf8').split('\n')) {
      const h = /^## (?:src\/index\.ts|\.\/(\S+) )/.exec(line)
      if (h) out.set(h[1] ? `${name}/${h[1]}` : name, (names = new Set()))
      const d = /^(?:class|function|interface|type|const|enum) (\w+)/.exec(line)
      if (d && names) names.add(d[1]!)
    }
  }
  return out
}

test('every statewright package and face the docs name exists, and every name the docs import from one it exports', () => {
  const known = faces()
  const problems: string[] = []
  for (const { file } of pages()) {
    const text = readFileSync(join(root, file), 'utf8')
    for (const m of text.matchAll(/@statewright\/[a-z0-9-]+(?:\/[a-z][a-z0-9-]*)?/g)) {
      const spec = m[0]
      if (NOT_PACKAGES.has(spec)) continue
      if (!known.has(spec) && !known.has(spec.split('/').slice(0, 2).join('/'))) problems.push(`${file}: no package ${spec}`)
      else if (!known.has(spec) && spec.split('/').length === 3 && !/\/(src|dist|test)$/.test(spec))
        problems.push(`${file}: no face ${spec}`)
    }
    for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(@statewright\/[^']+)'/g)) {
      const names = known.get(m[2]!)
      if (!names) {
        problems.push(`${file}: imports from ${m[2]}, which is no face`)
        continue
      }
      for (const raw of m[1]!.split(',')) {
        const n = raw
          .replace(/^\s*type\s+/, '')
          .split(/\s+as\s+/)[0]!
          .trim()
        if (n && !names.has(n)) problems.push(`${file}: ${m[2]} exports no ${n}`)
      }
    }
  }
  assert.equal(problems, [], problems.join('\n'))
})

test.run()
