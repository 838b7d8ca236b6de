// Calling users' callbacks from inside our loops.

/**
 * Reports an error to a user's `onError`. A callback that throws must not end the caller's loop,
 * abort its batch write or leave a leader term unstopped, so its own failure is dropped.
 */
export function reportError(onError: ((err: Error) => void) | undefined, err: Error): void {
  if (onError === undefined) return
  try {
    onError(err)
  } catch {
    // the callback's failure is not ours to handle
  }
}

/** Counts a failed request in a part's status and reports it (leader election, sharded leases). */
export function noteFailure(
  st: { errors: number; lastError?: string | undefined },
  onError: ((err: Error) => void) | undefined,
  err: Error,
): void {
  st.errors++
  st.lastError = err.message
  reportError(onError, err)
}
