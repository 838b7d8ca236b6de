// What @statewright/primary throws: StatewrightErrors (statedb's root). Options it cannot run with
// are the shared ConfigError, a call at the wrong time the shared UsageError; a failed sync (or a
// sync that returned no { secondaries }, or a write of its secondaries that failed) is a SyncError,
// retried with backoff and shown in the primary's status.
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, UsageError, StoppedError, TimeoutError } from '@statewright/statedb'

export type PrimaryErrorCode = 'Sync'

/** A failure of the primary/secondary controller itself. */
export class PrimaryError extends StatewrightError {
  override name = 'PrimaryError'
  declare readonly code: PrimaryErrorCode
  constructor(message: string, code: PrimaryErrorCode, options?: ErrorOptions) {
    super(message, code, options)
  }
}

/** A sync, its result, or a write of its secondaries failed; retried with backoff. */
export class SyncError extends PrimaryError {
  override name = 'SyncError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Sync', options)
  }
}
