#!/usr/bin/env node
// Renders bench/results/packaging.json as the markdown table between `<!-- bench:packaging -->` and
// `<!-- /bench -->` in docs/performance.md, so the figures there are never typed by hand.
//
//   node scripts/bench-docs-packaging.mjs           rewrite the block
//   node scripts/bench-docs-packaging.mjs --check   exit 1 when the block differs from the results
//
// `renderPackaging(results)` is the per-suite renderer, for a general generator of such blocks.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = new URL('..', import.meta.url).pathname
const GOALS_MS = { statedb: 150, k8s: 400 } // issue 11
const PACKAGES = ['statedb', 'reconciler', 'k8s', 'testserver']

const kB = (bytes) => `${(bytes / 1000).toFixed(1)} kB`

/** The markdown table (with a line naming the run) for a parsed bench/results/packaging.json. */
export function renderPackaging(file) {
  const by = new Map(file.results.map((r) => [r.name, r]))
  const get = (name) => {
    const r = by.get(name)
    if (!r) throw new Error(`bench/results/packaging.json has no result "${name}"`)
    return r.value
  }
  const lines = [
    `Node ${file.node}${file.quick ? ', **quick run**' : ''}; cold import = median of fresh \`node\` processes running \`await import()\` from the installed tarballs.`,
    '',
    '| package | cold import | goal | tarball | unpacked | files |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  ]
  for (const p of PACKAGES) {
    const ms = get(`ImportCold_${p}`)
    const goal = GOALS_MS[p] ? `< ${GOALS_MS[p]} ms ${ms < GOALS_MS[p] ? '(met)' : '(missed)'}` : ''
    lines.push(`| @statewright/${p} | ${ms.toFixed(0)} ms | ${goal} | ${kB(get(`Tarball_${p}`))} | ${kB(get(`TarballUnpacked_${p}`))} | ${get(`TarballFiles_${p}`)} |`)
  }
  lines.push(`| @kubernetes/client-node alone (baseline of k8s) | ${get('ImportCold_client-node').toFixed(0)} ms | | | | |`)
  return lines.join('\n')
}

/** `doc` with the text between the packaging markers replaced by `body`. */
export function replaceBlock(doc, suite, body) {
  const re = new RegExp(`(<!-- bench:${suite} -->\\n)[\\s\\S]*?(<!-- /bench -->)`)
  if (!re.test(doc)) throw new Error(`no <!-- bench:${suite} --> ... <!-- /bench --> block`)
  return doc.replace(re, (_, open, close) => `${open}${body}\n${close}`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const docPath = `${root}docs/performance.md`
  const results = JSON.parse(readFileSync(`${root}bench/results/packaging.json`, 'utf8'))
  const doc = readFileSync(docPath, 'utf8')
  const next = replaceBlock(doc, 'packaging', renderPackaging(results))
  if (process.argv.includes('--check')) {
    if (next !== doc) {
      console.error('docs/performance.md: the packaging block differs from bench/results/packaging.json; run node scripts/bench-docs-packaging.mjs')
      process.exit(1)
    }
    console.log('docs/performance.md: the packaging block matches bench/results/packaging.json')
  } else {
    writeFileSync(docPath, next)
    console.log('docs/performance.md: packaging block written from bench/results/packaging.json')
  }
}
