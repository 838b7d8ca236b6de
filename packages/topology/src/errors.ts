// What @statewright/topology throws: StatewrightErrors (statedb's root). A definition it cannot use
// is the shared ConfigError; a cycle met by a read that needs an acyclic graph (paths, check) is a
// TopologyCycleError, naming the cycle.
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, UsageError, StoppedError, TimeoutError } from '@statewright/statedb'

export type TopologyGraphErrorCode = 'Cycle'

/** A failure of the graph itself (not of one input object: those are kept in `topology.errors()`). */
export class TopologyGraphError extends StatewrightError {
  override name = 'TopologyGraphError'
  declare readonly code: TopologyGraphErrorCode
  constructor(message: string, code: TopologyGraphErrorCode, options?: ErrorOptions) {
    super(message, code, options)
  }
}

/** A cycle in the topology, named as `a -> b -> a`. */
export class TopologyCycleError extends TopologyGraphError {
  override name = 'TopologyCycleError'
  constructor(readonly cycle: readonly string[]) {
    super(`topology has a cycle: ${cycle.join(' -> ')} (set allowLoops to allow it)`, 'Cycle')
  }
}
