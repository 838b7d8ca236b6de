// The benchmark harness.
//
//   npm run bench -- <suite> [--quick]     runs bench/<suite>.ts
//   npm run bench -- all [--quick]         runs every suite file in bench/, one after the other
//
// A suite is bench/<suite>.ts exporting `async function run(opts: { quick: boolean }): Promise<Result[]>`
// (see bench/lib/types.ts). The harness prints a table and writes bench/results/<suite>.json:
//   {"suite", "node", "quick", "results": [{"name", "unit", "value", "baseline", "baselineValue", "ratio"}]}
// with null for absent baseline fields. ratio = value / baselineValue (see bench/README.md).
// A --quick run writes to bench/results/quick/<suite>.json instead (untracked): only a full run
// updates the tracked results, which the docs' figures are generated from (scripts/bench-docs.mjs).

import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { cpus as cpus_, loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { hasGc } from './lib/timing.ts'
import { table } from './lib/format.ts'
import type { Result, ResultsFile, RunOptions } from './lib/types.ts'

const benchDir = dirname(fileURLToPath(import.meta.url))
const resultsDir = join(benchDir, 'results')
const NOT_SUITES = new Set(['run'])

function suitesPresent(): string[] {
  return readdirSync(benchDir, { withFileTypes: true })
    .filter((d) => d.isFile() && d.name.endsWith('.ts') && !d.name.endsWith('.d.ts'))
    .map((d) => d.name.slice(0, -3))
    .filter((n) => !NOT_SUITES.has(n))
    .sort()
}

function usage(msg?: string): never {
  if (msg) console.error(msg)
  console.error(`usage: npm run bench -- <suite|all> [--quick]\nsuites: ${suitesPresent().join(', ') || '(none)'}`)
  process.exit(2)
}

function checkResult(suite: string, r: unknown, i: number): Result {
  const o = r as Partial<Result> | null
  if (!o || typeof o.name !== 'string' || typeof o.unit !== 'string' || typeof o.value !== 'number') {
    throw new Error(`suite "${suite}": result ${i} lacks name/unit/value: ${JSON.stringify(r)}`)
  }
  const out: Result = { ...(o as Result) }
  if (out.ratio === undefined && out.baselineValue !== undefined && out.baselineValue !== 0 && Number.isFinite(out.value)) {
    out.ratio = out.value / out.baselineValue
  }
  return out
}

/** The commit measured: short hash, "+dirty" when the work tree has uncommitted changes. */
function commitMeasured(): string | null {
  try {
    const git = (...a: string[]) => execFileSync('git', a, { cwd: benchDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    return git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '+dirty' : '')
  } catch {
    return null
  }
}

const num = (n: number | undefined): number | null => (n === undefined || !Number.isFinite(n) ? null : n)

async function runSuite(suite: string, opts: RunOptions): Promise<void> {
  const file = join(benchDir, `${suite}.ts`)
  if (!existsSync(file)) usage(`no suite "${suite}" (no file bench/${suite}.ts)`)
  const mod = (await import(pathToFileURL(file).href)) as { run?: unknown }
  if (typeof mod.run !== 'function') throw new Error(`bench/${suite}.ts does not export a function run(opts)`)
  const cpus = cpus_()
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
  console.log(
    `\n== ${suite}${opts.quick ? ' (quick)' : ''}: node ${process.version}, ${cpus.length} x ${cpus[0]?.model.trim() ?? '?'}, load ${load}, ${new Date().toISOString()}`,
  )
  const started = performance.now()
  const raw = await (mod.run as (o: RunOptions) => Promise<unknown>)(opts)
  if (!Array.isArray(raw)) throw new Error(`suite "${suite}": run() must resolve to an array of results`)
  const results = raw.map((r, i) => checkResult(suite, r, i))
  console.log(table(results))
  console.log(`(${suite}: ${((performance.now() - started) / 1000).toFixed(1)} s)`)
  const out: ResultsFile = {
    suite,
    node: process.version,
    quick: opts.quick,
    commit: commitMeasured(),
    date: new Date().toISOString(),
    results: results.map((r) => ({
      name: r.name,
      unit: r.unit,
      value: r.value,
      baseline: r.baseline ?? null,
      baselineValue: num(r.baselineValue),
      ratio: num(r.ratio),
    })),
  }
  const dir = opts.quick ? join(resultsDir, 'quick') : resultsDir
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, `${suite}.json`), JSON.stringify(out, null, 2) + '\n')
  console.log(`wrote ${join('bench', 'results', ...(opts.quick ? ['quick'] : []), `${suite}.json`)}`)
}

async function main(): Promise<void> {
  const args = process.argv.slice(2)
  const quick = args.includes('--quick')
  const unknown = args.filter((a) => a.startsWith('-') && a !== '--quick')
  if (unknown.length) usage(`unknown option(s): ${unknown.join(' ')}`)
  const names = args.filter((a) => !a.startsWith('-'))
  if (names.length === 0) usage()
  if (!hasGc()) console.warn('warning: global.gc is missing: run with --expose-gc (npm run bench does); memory figures will be noisy')
  const suites = names.includes('all') ? suitesPresent() : names
  let failed = 0
  for (const s of suites) {
    try {
      await runSuite(s, { quick })
    } catch (err) {
      failed++
      console.error(`suite "${s}" failed:`, err)
    }
  }
  if (failed) process.exitCode = 1
}

await main()
