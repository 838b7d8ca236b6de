#!/usr/bin/env node
// Type-checks every ```ts snippet of README.md, docs/*.md and packages/*/README.md (CI runs it from
// `npm run typecheck`). Each snippet is its own module. A snippet that continues an earlier one may
// be preceded by a hidden prelude, an HTML comment that the rendered page does not show:
//   <!-- prelude
//   declare const db: DB
//   -->
// whose text is put before the snippet (imports included). Exits 1 with every syntax and type error,
// mapped back to the markdown file and line. ```js blocks (the package READMEs' examples, run by
// scripts/check-packages.mjs), ```sh, JSON and YAML blocks are not checked here.
//
//   node scripts/check-snippets.mjs                 every document above
//   node scripts/check-snippets.mjs a.md docs/b.md  only these (paths relative to the working directory)
//
// One TypeScript program over all the snippets, with tsconfig.base.json's options (strict, NodeNext,
// the "@statewright/source" condition: imports of the packages resolve to their src/). The snippets
// are served from memory as files of a directory that does not exist, .tmp/snippets/ (inside the
// repository, so that imports resolve through node_modules and the root package.json makes them
// ES modules): nothing is written to disk.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { isAbsolute, join, relative, resolve } from 'node:path'
import ts from 'typescript'

const root = new URL('..', import.meta.url).pathname

/** Documents as [label, absolute path]: the label (path from the repository root, or absolute when
 *  outside it) is what errors name. */
let docs
if (process.argv.length > 2) {
  docs = process.argv.slice(2).map((p) => {
    const abs = resolve(p)
    const rel = relative(root, abs)
    return [rel.startsWith('..') || isAbsolute(rel) ? abs : rel, abs]
  })
} else {
  const names = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `docs/${f}`),
  ]
  for (const p of readdirSync(join(root, 'packages')).sort())
    if (existsSync(join(root, 'packages', p, 'README.md'))) names.push(`packages/${p}/README.md`)
  docs = names.map((n) => [n, join(root, n)])
}

// extract
const dir = join(root, '.tmp', 'snippets')
const isTs = (line) => /^```(ts|typescript)\s*$/.test(line.trim())
const snippets = new Map() // virtual file -> { text, doc, firstLine, preludeLines }
for (const [doc, path] of docs) {
  const lines = readFileSync(path, 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (!isTs(lines[i])) continue
    let end = i + 1
    while (end < lines.length && lines[end].trim() !== '```') end++
    const body = lines.slice(i + 1, end)
    // a prelude comment directly above (blank lines allowed)
    let prelude = []
    let j = i - 1
    while (j >= 0 && lines[j].trim() === '') j--
    if (j >= 0 && lines[j].trim() === '-->') {
      let k = j - 1
      while (k >= 0 && !lines[k].trim().startsWith('<!--')) k--
      if (k >= 0 && lines[k].trim().startsWith('<!-- prelude')) prelude = lines.slice(k + 1, j)
    }
    const file = join(dir, `${doc.replace(/^\//, '').replace(/[^A-Za-z0-9]/g, '_')}_${snippets.size + 1}.ts`)
    snippets.set(file, { text: [...prelude, ...body, 'export {}', ''].join('\n'), doc, firstLine: i + 2, preludeLines: prelude.length })
    i = end
  }
}

// check
const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile)
if (base.error) throw new Error(ts.flattenDiagnosticMessageText(base.error.messageText, '\n'))
const parsed = ts.parseJsonConfigFileContent(base.config, ts.sys, root)
const options = { ...parsed.options, noEmit: true, allowImportingTsExtensions: true, noUnusedLocals: false, types: ['node'] }
const host = ts.createCompilerHost(options)
host.getCurrentDirectory = () => root // `types` resolve from the repository, whatever the working directory
const { fileExists, readFile, getSourceFile } = host
host.fileExists = (f) => snippets.has(f) || fileExists.call(host, f)
host.readFile = (f) => snippets.get(f)?.text ?? readFile.call(host, f)
host.getSourceFile = (f, lang, onError, create) => {
  const s = snippets.get(f)
  return s ? ts.createSourceFile(f, s.text, lang) : getSourceFile.call(host, f, lang, onError, create)
}
const program = ts.createProgram({ rootNames: [...snippets.keys()], options, host })
const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]
for (const file of snippets.keys()) {
  const sf = program.getSourceFile(file)
  diagnostics.push(...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf))
}

const lines = diagnostics.map((d) => {
  const msg = `${ts.DiagnosticCategory[d.category].toLowerCase()} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`
  if (!d.file || d.start === undefined) return msg
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start)
  const s = snippets.get(d.file.fileName)
  if (!s) return `${relative(root, d.file.fileName)}:${line + 1}:${character + 1}: ${msg}`
  const l = line + 1 - s.preludeLines
  return l < 1
    ? `${s.doc} (prelude of the snippet at line ${s.firstLine - 1}, its line ${line + 1}): ${msg}`
    : `${s.doc}:${s.firstLine + l - 1}:${character + 1}: ${msg}`
})
if (diagnostics.some((d) => d.category === ts.DiagnosticCategory.Error)) {
  console.log(lines.join('\n'))
  console.log(`snippets: ${snippets.size} checked, errors above`)
  process.exit(1)
}
console.log(`snippets: ${snippets.size} TypeScript snippets in ${docs.length} documents type-check`)
