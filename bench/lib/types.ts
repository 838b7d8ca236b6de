// The contract between the harness (bench/run.ts) and the suites (bench/<suite>.ts). Keep it stable:
// suites written by others depend on it.

/** Options the harness passes to a suite's `run`. */
export interface RunOptions {
  /** Smaller sizes and fewer runs: the whole suite well under a minute. */
  quick: boolean
}

/** One measured figure. */
export interface Result {
  /** Case name, e.g. "WriteTxn_100". */
  name: string
  /** Unit of `value`, e.g. "objects/s", "µs", "bytes/object" (see bench/README.md for direction). */
  unit: string
  value: number
  /** What the value is compared with, e.g. "immutable" or "Changes_Baseline". */
  baseline?: string
  /** The baseline's figure in the same unit. */
  baselineValue?: number
  /** value / baselineValue (filled in by the harness when absent and both are known). */
  ratio?: number
  /** Free text shown in the printed table only (not written to the JSON file). */
  note?: string
}

/** What every bench/<suite>.ts exports. */
export type Suite = (opts: RunOptions) => Promise<Result[]>

/** The JSON written to bench/results/<suite>.json. */
export interface ResultsFile {
  suite: string
  node: string
  quick: boolean
  /** The commit measured (short hash, "+dirty" with uncommitted changes); absent in older files. */
  commit?: string | null
  /** When the run ended (ISO 8601); absent in older files. */
  date?: string
  results: Array<{
    name: string
    unit: string
    value: number
    baseline: string | null
    baselineValue: number | null
    ratio: number | null
  }>
}

/** Units where a smaller value is better; for these a ratio below 1 means better than the baseline. */
const LOWER_IS_BETTER = /^(bytes|B|KiB|MiB|ns|µs|us|ms|s)(\/.*)?$|latency|bytes/i

export function lowerIsBetter(unit: string): boolean {
  return LOWER_IS_BETTER.test(unit) && !/\/s$/.test(unit)
}
