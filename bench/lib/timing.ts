// Timing: warm-up runs, then several measured runs; the figure is the median rate. Each run's
// garbage-collection time is recorded too (from `gc` performance entries), so suites can report
// what share of the time went to GC.

import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks'
import { median } from './stats.ts'

export interface MeasureOptions<S> {
  /** Builds the state of one run; not timed. Runs before every warm-up and measured run. */
  setup?: () => S | Promise<S>
  /** The timed work; returns how many operations it did. */
  run: (state: S) => number | Promise<number>
  /** Runs after every run; not timed. */
  teardown?: (state: S) => void | Promise<void>
  /** Untimed runs first (default 1). */
  warmup?: number
  /** Measured runs (default 5). */
  runs?: number
  /** Force a full GC before each run so that earlier garbage is not charged to it (default true). */
  gcBefore?: boolean
}

export interface Measurement {
  /** Median operations per second over the measured runs. */
  opsPerSec: number
  /** Operations per second of each measured run. */
  samples: number[]
  /** Share of the measured time spent in GC pauses (0..1), over all measured runs. */
  gcShare: number
  /** Total measured milliseconds. */
  totalMs: number
}

/** Forces a full garbage collection; a no-op (with one warning) when Node runs without --expose-gc. */
export function forceGc(): void {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc) {
    gc()
    gc()
  } else if (!warned) {
    warned = true
    console.warn('warning: run node with --expose-gc (npm run bench does); GC is not forced between runs')
  }
}
let warned = false

export function hasGc(): boolean {
  return typeof (globalThis as { gc?: unknown }).gc === 'function'
}

const tick = () => new Promise<void>((r) => setImmediate(r))

/** Collects `gc` performance entries while active. */
class GcRecorder {
  private readonly entries: PerformanceEntry[] = []
  private readonly observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) this.entries.push(e)
  })
  constructor() {
    this.observer.observe({ entryTypes: ['gc'] })
  }
  /** GC milliseconds that started inside [from, to] (entries arrive asynchronously: await first). */
  async within(from: number, to: number): Promise<number> {
    await tick()
    await tick()
    let ms = 0
    for (const e of this.entries) if (e.startTime >= from && e.startTime <= to) ms += e.duration
    return ms
  }
  stop(): void {
    this.observer.disconnect()
  }
}

/** Measures the rate of `run` (operations per second): warm-up, then the median of several runs. */
export async function measure<S = undefined>(opts: MeasureOptions<S>): Promise<Measurement> {
  const warmup = opts.warmup ?? 1
  const runs = opts.runs ?? 5
  const gcBefore = opts.gcBefore ?? true
  const samples: number[] = []
  let totalMs = 0
  let gcMs = 0
  const rec = new GcRecorder()
  try {
    for (let i = 0; i < warmup + runs; i++) {
      const state = (opts.setup ? await opts.setup() : undefined) as S
      if (gcBefore) forceGc()
      const t0 = performance.now()
      const ops = await opts.run(state)
      const t1 = performance.now()
      if (opts.teardown) await opts.teardown(state)
      if (i < warmup) continue
      samples.push((ops / (t1 - t0)) * 1000)
      totalMs += t1 - t0
      gcMs += await rec.within(t0, t1)
    }
  } finally {
    rec.stop()
  }
  return { opsPerSec: median(samples), samples, gcShare: totalMs > 0 ? gcMs / totalMs : 0, totalMs }
}

/** Times one call of fn, in milliseconds. */
export async function timeOnce(fn: () => unknown): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}
