// Waiting for the next bit of progress of a loop: the loop calls (and clears) the waiters it keeps.

/** Resolves when the loop calls the waiter this pushes onto `waiters`; rejects when `signal` aborts. */
export function nextProgress(waiters: Array<() => void>, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => reject(signal!.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    waiters.push(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    })
  })
}
