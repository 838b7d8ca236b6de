#!/usr/bin/env node
// Type-checks every ```ts snippet of README.md, docs/*.md and packages/*/README.md (CI runs it from
// `npm run typecheck`). Each snippet is its own module. A snippet that continues an earlier one may
// be preceded by a hidden prelude, an HTML comment that the rendered page does not show:
//   <!-- prelude
//   declare const db: DB
//   -->
// whose text is put before the snippet (imports included). Exits 1 with tsc's errors mapped back to
// the markdown file and line.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { join, relative } from 'node:path'
import { spawnSync } from 'node:child_process'

const root = new URL('..', import.meta.url).pathname
const out = join(root, '.tmp', 'snippets')
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })

const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
for (const p of readdirSync(join(root, 'packages'))) if (existsSync(join(root, 'packages', p, 'README.md'))) docs.push(`packages/${p}/README.md`)

const map = new Map() // snippet file -> { doc, firstLine, preludeLines }
let n = 0
for (const doc of docs) {
  const lines = readFileSync(join(root, doc), 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```ts') continue
    let end = i + 1
    while (end < lines.length && lines[end].trim() !== '```') end++
    const body = lines.slice(i + 1, end)
    // a prelude comment directly above (blank lines allowed)
    let prelude = []
    let j = i - 1
    while (j >= 0 && lines[j].trim() === '') j--
    if (j >= 0 && lines[j].trim() === '-->') {
      let k = j - 1
      while (k >= 0 && !lines[k].trim().startsWith('<!-- prelude')) k--
      if (k >= 0) prelude = lines.slice(k + 1, j)
    }
    const name = `${doc.replace(/[/.]/g, '_')}_${++n}.ts`
    writeFileSync(join(out, name), [...prelude, ...body, 'export {}', ''].join('\n'))
    map.set(name, { doc, firstLine: i + 2, preludeLines: prelude.length })
    i = end
  }
}
writeFileSync(join(out, 'tsconfig.json'), JSON.stringify({
  extends: relative(out, join(root, 'tsconfig.base.json')),
  compilerOptions: { noEmit: true, allowImportingTsExtensions: true, noUnusedLocals: false, types: ['node'] },
  include: ['*.ts'],
}, null, 2))
const r = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(out, 'tsconfig.json')], { encoding: 'utf8' })
const text = (r.stdout + r.stderr).replace(/^(\S+\.ts)\((\d+),(\d+)\)/gm, (m, file, line, col) => {
  const s = map.get(file.split('/').pop())
  if (!s) return m
  const l = Number(line) - s.preludeLines
  return l < 1 ? `${s.doc} (prelude of the snippet at line ${s.firstLine - 1})` : `${s.doc}:${s.firstLine + l - 1}:${col}`
})
if (r.status !== 0) {
  process.stdout.write(text)
  console.log(`snippets: ${n} checked, type errors above`)
  process.exit(1)
}
console.log(`snippets: ${n} TypeScript snippets in ${docs.length} documents type-check`)
