// Running a reconciler's batch with bounded concurrency: what a batch operation of the Manager's own
// reconcilers (a reconcile step's status writes) does with its entries.
// Invariant: every entry is tried once; a failure is set on its entry (the reconciler retries that
// entry alone, with backoff) and never stops the others.
import type { BatchEntry } from '@statewright/reconciler'

/** Same as the Target's batches: 16 requests of one batch at a time. */
export const BATCH_CONCURRENCY = 16

/** Runs fn over the entries, `concurrency` at a time; failures are set on the entries. */
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
        await fn(e.object)
      } catch (err) {
        e.error = err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker))
}
