// A reflector's health: statedb's reflector core health (state, counters, readiness, the shared
// `Health` level; its invariants are there) with the Kubernetes names: cluster and resourceVersion.
// Readiness is lost only when lists and watches have failed for `lostAfterMs` without a success: a
// routine watch restart, a relist or a silent watch restarted keeps a synced reflector ready.
import type { ReflectorCoreHealth, ReflectorCoreState } from '@statewright/statedb'

export type ReflectorState = ReflectorCoreState

/**
 * A reflector's health: the shared `Health` (level `ok` while lists and watches succeed, `degraded`
 * while they fail or the watch is lost, `stopped`; the message says the state and the last error)
 * and its counters (statedb's ReflectorCoreHealth: lists, relists, watches, events,
 * inactivityRestarts, errors...).
 */
export interface ReflectorHealth extends ReflectorCoreHealth {
  name: string
  cluster: string
  /** Where the next watch resumes from. */
  resourceVersion: string | undefined
  /** Objects in the table (queryAll). */
  objects: number
}
