// Memory per object: heap growth (after forced full GCs) while building something, divided by a count.
// Needs --expose-gc; without it the figures are noisy and a warning is printed.

import { forceGc } from './timing.ts'

/** Heap in use after a forced full GC. */
export function heapAfterGc(): number {
  forceGc()
  return process.memoryUsage().heapUsed
}

/**
 * Calls `build`, keeps what it returns alive, and reports the heap growth per object:
 * (heap after - heap before) / count, both after full GCs. Returns the built value too, so callers
 * can measure layers (e.g. objects first, then an index over them) by calling this again.
 */
export function bytesPerObject<T>(count: number, build: () => T): { bytes: number; value: T } {
  const before = heapAfterGc()
  const value = build()
  const after = heapAfterGc() // `value` is still referenced here, so it is counted
  return { bytes: (after - before) / count, value }
}
