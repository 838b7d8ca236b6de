// What @statewright/cli throws: StatewrightErrors (statedb's root). A bad command line is the shared
// UsageError (exit 2); a process it cannot read (unreachable, a token refused, an HTTP error) is an
// InspectError (exit 1); gen-types input that holds no usable CRD is an InvalidInputError.
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, UsageError, StoppedError, TimeoutError } from '@statewright/statedb'

export type CliErrorCode = 'Inspect' | 'InvalidInput'

/** A failure of the statewright command. */
export class CliError extends StatewrightError {
  override name = 'CliError'
  declare readonly code: CliErrorCode
  constructor(message: string, code: CliErrorCode, options?: ErrorOptions) {
    super(message, code, options)
  }
}

/** The statewright CLI could not read the inspected process: unreachable, a token refused, an HTTP error. */
export class InspectError extends CliError {
  override name = 'InspectError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'Inspect', options)
  }
}

/** Input the command cannot use: a file with no CustomResourceDefinition, a CRD lacking its group or kind. */
export class InvalidInputError extends CliError {
  override name = 'InvalidInputError'
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'InvalidInput', options)
  }
}
