// A NATS key-value reflector's health: its state, counters and readiness, and the level and message
// the shared `Health` carries. A backoff after a lost connection keeps a synced reflector ready: the
// table catches up.
import type { Health } from '@statewright/statedb'

export type NatsReflectorState = 'new' | 'listing' | 'watching' | 'backoff' | 'stopped'

/**
 * A reflector's health: the shared `Health` (level `degraded` while backing off after a failure, with
 * the last error; `stopped`; else `ok`) and its counters.
 */
export interface NatsKvReflectorHealth extends Health {
  name: string
  bucket: string
  state: NatsReflectorState
  /** The first complete list is in the table. */
  synced: boolean
  /** Synced and not stopped (a backoff after a lost connection keeps it ready: the table catches up). */
  ready: boolean
  lastSyncAt: number | undefined
  lastEventAt: number | undefined
  /** The last revision applied (the resume point is this + 1). */
  revision: number
  /** Complete lists, the first included. */
  lists: number
  /** Lists forced by lost history, a skipped entry or a verification. */
  relists: number
  /** Revision jumps in which the stream still held a message the watch had not delivered. */
  gaps: number
  /** Rows a forced relist found different from the table (what the watch had missed). */
  repaired: number
  /** Watches started (the first, and one per resume). */
  watches: number
  /** Entries applied. */
  events: number
  errors: number
  lastError: string | undefined
  objects: number
}

/** The level and message of a reflector: stopped, degraded while backing off (with the last error), else ok. */
export function natsReflectorLevel(
  state: NatsReflectorState,
  lastError: string | undefined,
  objects: number,
): Pick<Health, 'level' | 'message'> {
  if (state === 'stopped') return { level: 'stopped', message: 'stopped' }
  if (state === 'backoff') return { level: 'degraded', message: `backoff: ${lastError ?? 'failing'}` }
  return { level: 'ok', message: `${state}, ${objects} objects` }
}
