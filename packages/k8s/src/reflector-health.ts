// A reflector's health: its state, counters and readiness, and the level and message the shared
// `Health` carries. Readiness is lost only when lists and watches have failed for `lostAfterMs`
// without a success: a routine watch restart or a relist keeps a synced reflector ready.
import type { Health } from '@statewright/statedb'

export type ReflectorState = 'new' | 'listing' | 'watching' | 'waiting' | 'backoff' | 'stopped'

/**
 * A reflector's health: the shared `Health` (level `ok` while lists and watches succeed, `degraded`
 * while they fail or the watch is lost, `stopped`; the message says the state and the last error)
 * and its counters.
 */
export interface ReflectorHealth extends Health {
  name: string
  cluster: string
  state: ReflectorState
  /** The first complete list is in the table. */
  synced: boolean
  /**
   * Readiness: synced, not stopped, and its watch not lost (lists and watches failing for
   * `lostAfterMs` without a success). A routine watch restart, a relist after 410 or a brief
   * failure keeps it ready: the table stays complete and catches up.
   */
  ready: boolean
  /** Unix ms of the last complete list. */
  lastSyncAt: number | undefined
  /** Unix ms of the last watch event or bookmark. */
  lastEventAt: number | undefined
  resourceVersion: string | undefined
  /** Complete lists, the first included. */
  lists: number
  /** Lists forced by 410 Gone / Expired. */
  relists: number
  watches: number
  events: number
  errors: number
  lastError: string | undefined
  /** Objects in the table (queryAll). */
  objects: number
}

/** The level and message of a reflector: stopped, degraded while failing (with the last error), else ok. */
export function reflectorLevel(
  state: string,
  failing: boolean,
  lastError: string | undefined,
  objects: number,
): Pick<Health, 'level' | 'message'> {
  if (state === 'stopped') return { level: 'stopped', message: 'stopped' }
  if (failing) return { level: 'degraded', message: `${state}: ${lastError ?? 'failing'}` }
  return { level: 'ok', message: `${state}, ${objects} objects` }
}
