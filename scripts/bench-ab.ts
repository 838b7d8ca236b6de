// Combines quick runs of two commits, taken alternately on the same machine, into one results file
// whose rows compare them: value = the later commit (median over its runs), baseline = the earlier.
//
//   node --import tsx scripts/bench-ab.ts <out.json> <before-commit> <after-commit> \
//        --before a1.json a2.json ... --after b1.json b2.json ...
//
// Rows: every result present in both, as `<name>` (its value), and for results with a ratio, as
// `<name>/<baseline>` (spaces as `_`, so goal markers can name it): the within-run ratio, the figure the goals are stated in (machines
// are shared and noisy, so ratios within one run are the comparable figures). The file goes to
// bench/results/history/ and renders in the docs like any suite (`<!-- bench:history/<name> -->`).

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { median } from '../bench/lib/stats.ts'
import type { ResultsFile } from '../bench/lib/types.ts'

const args = process.argv.slice(2)
const [out, beforeCommit, afterCommit] = args
const bi = args.indexOf('--before')
const ai = args.indexOf('--after')
if (!out || !beforeCommit || !afterCommit || bi < 0 || ai < bi) {
  console.error('usage: bench-ab.ts <out.json> <before-commit> <after-commit> --before <files...> --after <files...>')
  process.exit(2)
}
const load = (fs: string[]) => fs.map((f) => JSON.parse(readFileSync(f, 'utf8')) as ResultsFile)
const before = load(args.slice(bi + 1, ai))
const after = load(args.slice(ai + 1))
type Row = ResultsFile['results'][number]
const pick = (runs: ResultsFile[], name: string, f: (r: Row) => number | null): number | null => {
  const vs = runs
    .map((r) => r.results.find((x) => x.name === name))
    .filter((x): x is Row => x !== undefined)
    .map(f)
    .filter((v): v is number => v !== null)
  return vs.length === 0 ? null : median(vs)
}
const results: Row[] = []
for (const r of after[0]!.results) {
  const b = pick(before, r.name, (x) => x.value)
  const a = pick(after, r.name, (x) => x.value)
  if (a === null || b === null) continue
  results.push({ name: r.name, unit: r.unit, value: a, baseline: `before (${beforeCommit})`, baselineValue: b, ratio: a / b })
  if (r.ratio !== null && r.baseline !== null) {
    const br = pick(before, r.name, (x) => x.ratio)
    const ar = pick(after, r.name, (x) => x.ratio)
    if (ar !== null && br !== null)
      results.push({
        name: `${r.name}/${r.baseline}`.replace(/\s+/g, '_'),
        unit: 'ratio',
        value: ar,
        baseline: `before (${beforeCommit})`,
        baselineValue: br,
        ratio: ar / br,
      })
  }
}
const file: ResultsFile = {
  suite: after[0]!.suite,
  node: after[0]!.node,
  quick: [...before, ...after].some((r) => r.quick),
  commit: afterCommit,
  date: new Date().toISOString(),
  results,
}
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, JSON.stringify(file, null, 2) + '\n')
console.log(`wrote ${out}: ${results.length} rows from ${before.length} + ${after.length} runs`)
