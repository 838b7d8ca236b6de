// Pacing of drift repairs per object, and fight detection.
// Invariants:
// - The first repair of an object is immediate; each further repair while the object keeps drifting
//   waits twice as long as the one before (retry.minMs, 2·minMs, ... up to retry.maxMs), however long the fight
//   lasts. An object that has not been repaired for `windowMs` (and twice its current delay) starts over.
// - More than `fightRepairs` repairs within `windowMs` is a fight: reported once when it starts
//   (with the other writer's name), and over when the object stays quiet for `windowMs`.
// - Time comes from `now()` only, so tests and the pacing agree on it.

import { backoffDelay, resolveRetry, type RetryOptions } from '@statewright/statedb'

/**
 * The pacing's own default, deliberately not the shared DEFAULT_RETRY: a repair is a write that undoes
 * another writer's, so it starts slower (1 s) and may wait far longer (5 min) than a retry of a
 * failure; no jitter, because the delays are per object and fight detection counts them in a window.
 */
const REPAIR_RETRY: Required<RetryOptions> = { minMs: 1000, maxMs: 300_000, jitter: 0 }

export interface RepairPacing {
  /**
   * Delay before the second repair of a drifting object (`minMs`, default 1000 ms), doubling each
   * time up to `maxMs` (default 300 000 ms), jitter 0: this pacing's own default, not the shared one.
   */
  retry?: RetryOptions
  /** Repairs within this window count towards a fight; quiet for this long resets (default 60 000 ms). */
  windowMs?: number
  /** More repairs than this within the window is a fight (default 5). */
  fightRepairs?: number
}

export interface Fight {
  /** The desired object's key (cluster|group|kind|namespace|name). */
  key: string
  /** Unix ms when the fight was detected. */
  since: number
  /** Repairs within the window. */
  repairs: number
  /** The other writer: the last field manager other than ours in managedFields, if known. */
  otherManager: string | undefined
}

interface State {
  /** Repairs within the window (fight detection). */
  times: number[]
  /** Repairs since the object was last quiet for a whole window (the backoff exponent). */
  streak: number
  last: number
  fight: Fight | undefined
}

export class RepairPacer {
  private readonly retry: Required<RetryOptions>
  private readonly windowMs: number
  private readonly fightRepairs: number
  private readonly states = new Map<string, State>()

  constructor(
    p: RepairPacing = {},
    private readonly now: () => number = Date.now,
  ) {
    this.retry = resolveRetry({ ...REPAIR_RETRY, ...p.retry }, 'drift repair pacing')
    this.windowMs = p.windowMs ?? 60_000
    this.fightRepairs = p.fightRepairs ?? 5
  }

  private state(key: string): State {
    let s = this.states.get(key)
    if (!s) this.states.set(key, (s = { times: [], streak: 0, last: 0, fight: undefined }))
    const cutoff = this.now() - this.windowMs
    // quiet for a whole window (and twice the current delay, so a backoff longer than the window does
    // not reset itself): start over
    if (s.streak && s.last < this.now() - Math.max(this.windowMs, 2 * this.delay(s.streak))) {
      s.times = []
      s.streak = 0
      s.fight = undefined
    }
    while (s.times.length && s.times[0]! < cutoff) s.times.shift()
    return s
  }

  /** Unix ms at which the next repair of `key` may run (0: at once). */
  dueAt(key: string): number {
    const s = this.state(key)
    if (s.streak === 0) return 0 // not now(): a clock tick between the caller's now and ours would defer it
    // the streak, not the repairs still in the window: a long fight keeps climbing to maxMs
    return s.last + this.delay(s.streak)
  }

  private delay(streak: number): number {
    return backoffDelay(streak, this.retry)
  }

  /** Records a repair of `key`; returns the fight when this repair starts one. */
  repaired(key: string, otherManager: string | undefined): Fight | undefined {
    const s = this.state(key)
    s.last = this.now()
    s.streak++
    s.times.push(s.last)
    if (s.fight) {
      s.fight.repairs = s.times.length
      if (otherManager) s.fight.otherManager = otherManager
      return undefined
    }
    if (s.times.length <= this.fightRepairs) return undefined
    s.fight = { key, since: this.now(), repairs: s.times.length, otherManager }
    return s.fight
  }

  /** Fights going on now (objects that drifted more than the limit within the window). */
  fights(): Fight[] {
    const out: Fight[] = []
    for (const [key, s] of this.states) {
      const cur = this.state(key)
      if (cur.streak === 0) this.states.delete(key)
      else if (s.fight) out.push({ ...s.fight })
    }
    return out
  }
}

/** The last field manager other than `ours` to write the object, from its managedFields. */
export function otherManager(obj: { metadata?: { [k: string]: unknown } } | undefined, ours: string | undefined): string | undefined {
  const entries = (obj?.metadata?.managedFields ?? []) as Array<{ manager?: string; time?: string }>
  let best: { manager?: string; time?: string } | undefined
  for (const e of entries) {
    if (!e.manager || e.manager === ours) continue
    if (!best || (e.time ?? '') >= (best.time ?? '')) best = e
  }
  return best?.manager
}
