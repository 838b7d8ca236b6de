// A NATS key-value reflector's health: statedb's reflector core health (state, counters, readiness,
// the shared `Health` level; its invariants are there) with the NATS names: bucket, revision, gaps
// and repaired rows. A backoff after a lost connection keeps a synced reflector ready: the table
// catches up.
import type { ReflectorCoreHealth, ReflectorCoreState } from '@statewright/statedb'

/** The core's states but 'waiting' (a NATS reflector always watches). */
export type NatsReflectorState = Exclude<ReflectorCoreState, 'waiting'>

/**
 * A reflector's health: the shared `Health` (level `degraded` from a failed watch until the next
 * success, with the last error; `stopped`; else `ok`) and its counters (statedb's
 * ReflectorCoreHealth: lists, relists, watches, events, inactivityRestarts, errors...).
 */
export interface NatsKvReflectorHealth extends ReflectorCoreHealth {
  name: string
  bucket: string
  state: NatsReflectorState
  /** Synced and not stopped (a backoff after a lost connection keeps it ready: the table catches up). */
  ready: boolean
  /** The last revision received (the resume point is this + 1). */
  revision: number
  /** Revision jumps in which the stream still held a message the watch had not delivered. */
  gaps: number
  /** Rows a forced relist found different from the table (what the watch had missed). */
  repaired: number
  objects: number
}
