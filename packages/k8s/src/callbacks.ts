// Reporting failures from inside our loops to a user's logger (a logger that throws must not end the
// caller's loop, abort its batch write or leave a leader term unstopped: logTo drops its failure),
// and waiting for a loop's next event until a stop or the caller's signal (settled() of the leases).
import { logTo, type Logger } from '@statewright/statedb'

/**
 * Counts a failed request in a part's status and logs it at warn (it is retried): leader election,
 * sharded leases. `fields` say which part (its lease name, cluster).
 */
export function noteFailure(
  st: { errors: number; lastError?: string | undefined },
  logger: Logger | undefined,
  err: Error,
  fields: object,
  msg: string,
): void {
  st.errors++
  st.lastError = err.message
  logTo(logger, 'warn', { err, ...fields }, msg)
}

/**
 * Resolves when `subscribe`'s callback is called, rejects with the reason when `stop` or `signal`
 * aborts first; leaves no listener behind either way.
 */
export function nextOrStop(subscribe: (done: () => void) => void, stop: AbortSignal, signal?: AbortSignal): Promise<void> {
  const s = signal ? AbortSignal.any([signal, stop]) : stop
  if (s.aborted) return Promise.reject(s.reason)
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(s.reason)
    s.addEventListener('abort', onAbort, { once: true })
    subscribe(() => {
      s.removeEventListener('abort', onAbort)
      resolve()
    })
  })
}
