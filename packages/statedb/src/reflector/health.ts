// A reflector's health, the part every source shares: its state, its counters, readiness and the
// shared `Health` level. Invariants:
// - readiness is lost only when lists and watches have failed for `lostAfterMs` without a success
//   (a watch open for a second is a success, events or not): a routine watch restart, a relist or a
//   silent watch restarted keeps a synced reflector ready, the table stays complete and catches up;
// - one object's error (a transform, a value that does not decode) is counted, never makes it
//   degraded nor unready;
// - degraded from a failure of the list or watch until the next success.
import type { Health } from '../lifecycle.ts'

export type ReflectorCoreState = 'new' | 'listing' | 'watching' | 'waiting' | 'backoff' | 'stopped'

/** What every reflector's health holds (the k8s Reflector's and the NATS one extend it). */
export interface ReflectorCoreHealth extends Health {
  state: ReflectorCoreState
  /** The first complete list is in the table. */
  synced: boolean
  /**
   * Readiness: synced, not stopped, and its watch not lost (lists and watches failing for
   * `lostAfterMs` without a success). A routine watch restart, a relist or a brief failure keeps it
   * ready: the table stays complete and catches up.
   */
  ready: boolean
  /** Unix ms of the last complete list. */
  lastSyncAt: number | undefined
  /** Unix ms of the last watch event or bookmark. */
  lastEventAt: number | undefined
  /** Complete lists, the first included. */
  lists: number
  /** Lists forced by the source: a resume refused (410 Gone, history lost), a skipped entry, a verification. */
  relists: number
  /** Watches established (the first, and one per resume). */
  watches: number
  /** Watch events received. */
  events: number
  /** Watches restarted because nothing (no event, no bookmark) came for `inactivityTimeoutMs`. */
  inactivityRestarts: number
  errors: number
  lastError: string | undefined
}

/** The level and message: stopped, degraded while failing (with the last error), else ok. */
export function reflectorLevel(
  state: ReflectorCoreState,
  failing: boolean,
  lastError: string | undefined,
  objects: number,
): Pick<Health, 'level' | 'message'> {
  if (state === 'stopped') return { level: 'stopped', message: 'stopped' }
  if (failing) return { level: 'degraded', message: `${state}: ${lastError ?? 'failing'}` }
  return { level: 'ok', message: `${state}, ${objects} objects` }
}
