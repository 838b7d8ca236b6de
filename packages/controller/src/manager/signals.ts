// SIGTERM and SIGINT stop a Manager gracefully, then exit (0 when stop succeeded, else 1).
// Invariant: the handlers are removed (the returned functions) as soon as the manager starts
// stopping: a manager stopped by its owner never exits the process.
import type { Logger } from '@statewright/statedb'

/** Installs the handlers; returns the functions that remove them. */
export function trapSignals(logger: Logger, stop: () => Promise<void>): Array<() => void> {
  const off: Array<() => void> = []
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    const on = () => {
      logger.info({ signal: sig }, 'signal received; stopping')
      void stop().then(
        () => process.exit(0),
        (err) => {
          logger.error({ err }, 'stop failed')
          process.exit(1)
        },
      )
    }
    process.once(sig, on)
    off.push(() => process.off(sig, on))
  }
  return off
}
