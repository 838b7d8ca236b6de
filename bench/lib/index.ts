// Shared helpers for the benchmark suites.

export type { Result, RunOptions, Suite, ResultsFile } from './types.ts'
export { lowerIsBetter } from './types.ts'
export { measure, measureInterleaved, forceGc, hasGc, timeOnce, type Measurement, type MeasureOptions } from './timing.ts'
export { bytesPerObject, heapAfterGc } from './memory.ts'
export { rng, shuffle, type Rng } from './rng.ts'
export { median, percentile, mean } from './stats.ts'
export { fmt, table } from './format.ts'
