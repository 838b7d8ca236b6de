// The clock leases and fences read: wall-clock milliseconds with sub-millisecond precision,
// monotonic within the process (performance.timeOrigin + performance.now(), never set back).

/** Wall-clock milliseconds with sub-millisecond precision, monotonic within the process. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now()
}
