// Renders the benchmark figures in the docs from the committed results (bench/results/<suite>.json).
//
//   npm run bench:docs            rewrites every marked block in docs/*.md and README.md
//   npm run bench:docs -- --check exits 1 (naming the blocks) when a block differs from the results
//
// A block is
//   <!-- bench:<suite>[ <selector>...] -->
//   (generated; anything here is replaced)
//   <!-- /bench -->
// Selectors (any number, space separated; none = every result of the suite, in file order):
//   - a result name, or a glob with `*` (`WriteTxn_*`): a table of those results (name, value, unit,
//     baseline, baseline value, ratio), in the order the selectors and the file give;
//   - a goal, `<name>[.ratio](>=|<=)<number>`: a table of goals instead (measure, figure, goal,
//     met or how far off). Goals and result selectors cannot be mixed in one block.
// Every table ends with a line naming the file, the run (full or quick), its commit and date.
//
// Invariant: the output depends only on the results files and the block's marker line, so a test
// (test/bench-docs.test.ts) can tell whether the docs say what the committed results say.

import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fmt } from '../bench/lib/format.ts'
import type { ResultsFile } from '../bench/lib/types.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const BLOCK = /(<!-- bench:([a-z0-9_/-]+)((?: (?!-->)\S+)*) -->\n)([\s\S]*?)(<!-- \/bench -->)/gi
const GOAL = /^([^<>=]+?)(\.ratio)?(>=|<=)(-?[0-9.]+(?:e[0-9]+)?)$/i

type Row = ResultsFile['results'][number]

/**
 * Loads bench/results/<suite>.json for every suite present (the tracked, full-run files), and
 * bench/results/history/<name>.json as "history/<name>" (recorded comparisons, scripts/bench-ab.ts).
 */
export function loadResults(dir = join(root, 'bench', 'results')): Map<string, ResultsFile> {
  const out = new Map<string, ResultsFile>()
  for (const [sub, prefix] of [
    ['', ''],
    ['history', 'history/'],
  ] as const) {
    const d = join(dir, sub)
    if (!existsSync(d)) continue
    for (const f of readdirSync(d)) {
      if (!f.endsWith('.json') || f.endsWith('.tmp.json')) continue
      out.set(prefix + f.slice(0, -5), JSON.parse(readFileSync(join(d, f), 'utf8')) as ResultsFile)
    }
  }
  return out
}

function globRe(g: string): RegExp {
  return new RegExp('^' + g.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*') + '$')
}

const ratio = (r: number | null) => (r === null ? '-' : r.toFixed(2))
const cell = (s: string) => s.replace(/\|/g, '\\|')

function footer(suite: string, f: ResultsFile): string {
  const run = f.quick ? 'quick run' : 'full run'
  const at = f.commit ? ` at ${f.commit}` : ''
  const when = f.date ? `, ${f.date.slice(0, 16).replace('T', ' ')} UTC` : ''
  return `\n<sub>Generated from \`bench/results/${suite}.json\` (${run}${at}${when}, Node ${f.node}) by \`npm run bench:docs\`.</sub>\n`
}

function resultsTable(suite: string, f: ResultsFile, selectors: string[]): string {
  let rows: Row[]
  if (selectors.length === 0) rows = f.results
  else {
    rows = []
    for (const s of selectors) {
      const re = globRe(s)
      const hit = f.results.filter((r) => re.test(r.name) && !rows.includes(r))
      if (hit.length === 0) throw new Error(`bench:${suite}: no result matches "${s}"`)
      rows.push(...hit)
    }
  }
  const lines = ['| case | value | unit | baseline | baseline value | ratio |', '| --- | ---: | --- | --- | ---: | ---: |']
  for (const r of rows)
    lines.push(
      `| ${cell(r.name)} | ${fmt(r.value)} | ${r.unit} | ${cell(r.baseline ?? '-')} | ${fmt(r.baselineValue)} | ${ratio(r.ratio)} |`,
    )
  return lines.join('\n') + '\n' + footer(suite, f)
}

function goalsTable(suite: string, f: ResultsFile, goals: string[]): string {
  const lines = ['| measure | figure | goal | verdict |', '| --- | ---: | ---: | --- |']
  for (const g of goals) {
    const m = GOAL.exec(g)
    if (!m) throw new Error(`bench:${suite}: "${g}" is neither a result selector nor a goal`)
    const [, name, isRatio, op, target] = m
    const r = f.results.find((x) => x.name === name)
    if (!r) throw new Error(`bench:${suite}: no result named "${name}"`)
    const value = isRatio ? r.ratio : r.value
    if (value === null) throw new Error(`bench:${suite}: "${name}" has no ratio`)
    const t = Number(target)
    const met = op === '>=' ? value >= t : value <= t
    const off = met ? 'met' : `not met: ${op === '>=' ? (value / t).toFixed(2) + 'x of' : (value / t).toFixed(2) + 'x'} the goal`
    const what = isRatio ? `${name}: ratio vs ${r.baseline}` : `${name} (${r.unit})`
    const shown = isRatio ? value.toFixed(2) : fmt(value)
    lines.push(`| ${cell(what)} | ${shown} | ${op} ${isRatio ? t : fmt(t)} | ${off} |`)
  }
  return lines.join('\n') + '\n' + footer(suite, f)
}

/** The block's generated text for its marker. */
export function renderBlock(suite: string, selectors: string[], results: Map<string, ResultsFile>): string {
  const f = results.get(suite)
  if (!f) throw new Error(`bench:${suite}: no bench/results/${suite}.json`)
  const goals = selectors.filter((s) => /[<>]=/.test(s))
  if (goals.length > 0 && goals.length !== selectors.length) throw new Error(`bench:${suite}: a block shows goals or results, not both`)
  return goals.length > 0 ? goalsTable(suite, f, goals) : resultsTable(suite, f, selectors)
}

/** The document with every block rendered, and the markers of the blocks that changed. */
export function renderDoc(text: string, results: Map<string, ResultsFile>): { text: string; changed: string[] } {
  const changed: string[] = []
  const out = text.replace(BLOCK, (_all, open: string, suite: string, sel: string, body: string, close: string) => {
    const fresh = renderBlock(suite, sel.trim() ? sel.trim().split(/\s+/) : [], results)
    if (fresh !== body) changed.push(open.trim())
    return open + fresh + close
  })
  return { text: out, changed }
}

/** The files that may hold blocks: docs/*.md and README.md. */
export function docFiles(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(root, 'docs', f))
  const readme = join(root, 'README.md')
  return existsSync(readme) ? [...docs, readme] : docs
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check')
  const results = loadResults()
  let stale = 0
  for (const file of docFiles()) {
    const text = readFileSync(file, 'utf8')
    const r = renderDoc(text, results)
    if (r.changed.length === 0) continue
    const rel = file.slice(root.length)
    if (check) {
      stale += r.changed.length
      for (const c of r.changed) console.error(`${rel}: ${c} differs from bench/results`)
    } else {
      writeFileSync(file, r.text)
      console.log(`${rel}: ${r.changed.length} block(s) rewritten`)
    }
  }
  if (stale) {
    console.error('run `npm run bench:docs` to regenerate them')
    process.exitCode = 1
  }
}
