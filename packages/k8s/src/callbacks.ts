// Reporting failures from inside our loops to a user's logger. A logger that throws must not end the
// caller's loop, abort its batch write or leave a leader term unstopped (the reconciler's logTo
// drops its failure).
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
