// Running a batch operation's entries with bounded concurrency (the k8s and NATS targets, the
// controller's status writes): one worker pool, not one per target.
// Invariant: every entry is tried once; a failure is set on its entry (the reconciler retries that
// entry alone, with backoff) and never stops the others; an fn that returns (resolves to) true marks
// its entry `changed`, as an Update that returns true (out of sync in a full reconciliation).
import type { BatchEntry } from './config.ts'

/** The targets' default: 16 requests of one batch at a time. */
export const BATCH_CONCURRENCY = 16

/** Runs fn over the entries, `concurrency` at a time; failures (and `changed`, when fn returns true) are set on the entries. */
export async function eachEntry<T>(
  entries: BatchEntry<T>[],
  fn: (obj: T) => unknown | Promise<unknown>,
  concurrency = BATCH_CONCURRENCY,
): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < entries.length) {
      const e = entries[next++]!
      try {
        if ((await fn(e.object)) === true) e.changed = true
      } catch (err) {
        e.error = err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker))
}
