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

/** Collects `gc` performance entries while active. */
class GcRecorder {
  private readonly entries: PerformanceEntry[] = []
  private readonly observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) this.entries.push(e)
  })
  constructor() {
    this.observer.observe({ entryTypes: ['gc'] })
  }
  /** Waits until the entries of what ran so far have arrived (some come tens of milliseconds late). */
  async settle(): Promise<void> {
    await new Promise((r) => setTimeout(r, 100))
  }
  sum(from: number, to: number): number {
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
  return (await measureInterleaved({ only: opts })).only
}

/**
 * Measures several contenders with their runs interleaved (A B C, A B C, ...) rather than one after
 * the other: load that comes and goes during a case (the machines are shared) falls on every
 * contender alike, so the ratios between them hold better than their rates. Each contender has its
 * own setup, warm-up runs and GC before each run, as with `measure`.
 */
export async function measureInterleaved<T extends Record<string, MeasureOptions<any>>>(
  contenders: T,
): Promise<{ [K in keyof T]: Measurement }> {
  const names = Object.keys(contenders) as Array<keyof T & string>
  const warmup = Math.max(...names.map((n) => contenders[n]!.warmup ?? 1))
  const runs = Math.max(...names.map((n) => contenders[n]!.runs ?? 5))
  const acc = new Map(names.map((n) => [n, { samples: [] as number[], totalMs: 0, spans: [] as Array<[number, number]> }]))
  const rec = new GcRecorder()
  const out = {} as { [K in keyof T]: Measurement }
  try {
    for (let i = 0; i < warmup + runs; i++) {
      for (const name of names) {
        const opts = contenders[name]!
        const state = opts.setup ? await opts.setup() : undefined
        if (opts.gcBefore ?? true) forceGc()
        const t0 = performance.now()
        const ops = await opts.run(state)
        const t1 = performance.now()
        if (opts.teardown) await opts.teardown(state)
        if (i < warmup) continue
        const a = acc.get(name)!
        a.samples.push((ops / (t1 - t0)) * 1000)
        a.totalMs += t1 - t0
        a.spans.push([t0, t1])
      }
    }
    // GC entries are counted once all have arrived: some come later than the next run's start.
    await rec.settle()
    for (const name of names) {
      const a = acc.get(name)!
      const gcMs = a.spans.reduce((ms, [t0, t1]) => ms + rec.sum(t0, t1), 0)
      out[name] = { opsPerSec: median(a.samples), samples: a.samples, gcShare: a.totalMs > 0 ? gcMs / a.totalMs : 0, totalMs: a.totalMs }
    }
  } finally {
    rec.stop()
  }
  return out
}

/** Times one call of fn, in milliseconds. */
export async function timeOnce(fn: () => unknown): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}
