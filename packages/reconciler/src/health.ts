// Health: ok ("N objects") or degraded ("N errors: first messages", or a failed prune), observable;
// and readiness, which is not the same thing.
//
// A per-object error makes health degraded (with the count and the last few failing keys) but never
// unready: readiness depends only on the reconciler being started, its table initialized and its
// loop alive. So a readiness probe does not flap while one object fails and is retried.
//
// Invariants: listeners are called only when the level or the message changes, synchronously at
// the end of the round that changed it, and a listener that throws does not stop the others (its
// error goes to the reconciler's logger: health must never break the reconciler).

import type { Health } from '@statewright/statedb'

/** An object failing now: its key, its error, and whether it is a delete. */
export interface FailingObject {
  readonly key: string
  readonly error: string
  readonly deleted: boolean
}

/** A reconciler's health. */
export interface ReconcilerHealth extends Health {
  /** Started, table initialized and its initial objects acted on, loop alive. Object errors do not count. */
  readonly ready: boolean
  /** Why not ready (absent when ready). */
  readonly notReady?: string
  /** The first few failing objects (HEALTH_MESSAGES of them), with keys. */
  readonly failing: readonly FailingObject[]
  /** Objects in the table at the last round. */
  readonly objects: number
  /** Objects failing now (updates in error and deletes that have not reached the target). */
  readonly errors: number
  /** The last prune's failure, if it failed. */
  readonly pruneError?: string
  /** Epoch ms of the last change. */
  readonly updatedAt: number
}

/** How many error messages a degraded health message quotes. */
export const HEALTH_MESSAGES = 3

/** What describeHealth summarizes: counts, the first messages, a prune failure, why not ready. */
export interface HealthInput {
  objects: number
  errors: number
  messages: readonly string[]
  pruneError: string | undefined
  failing?: readonly FailingObject[]
  /** Undefined when ready, else why not. */
  notReady: string | undefined
}

export function describeHealth(h: HealthInput): Pick<Health, 'level' | 'message'> {
  if (h.errors === 0 && h.pruneError === undefined) return { level: 'ok', message: `${h.objects} objects` }
  const parts: string[] = []
  if (h.errors > 0) parts.push(`${h.errors} error${h.errors === 1 ? '' : 's'}: ${h.messages.slice(0, HEALTH_MESSAGES).join('; ')}`)
  if (h.pruneError !== undefined) parts.push(`prune failed: ${h.pruneError}`)
  return { level: 'degraded', message: parts.join('; ') }
}

export class HealthReporter {
  constructor(private readonly onError: (err: unknown, what: string) => void = reportToProcess) {}

  private value: ReconcilerHealth = {
    level: 'ok',
    message: 'starting',
    ready: false,
    notReady: 'not started',
    failing: [],
    objects: 0,
    errors: 0,
    updatedAt: Date.now(),
  }
  private readonly listeners = new Set<(h: ReconcilerHealth) => void>()

  get current(): ReconcilerHealth {
    return this.value
  }

  /** Calls fn with every change (not with the current value). Returns the unsubscribe function. */
  subscribe(fn: (h: ReconcilerHealth) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  update(input: HealthInput): void {
    const { level, message } = describeHealth(input)
    const next: ReconcilerHealth = {
      level,
      message,
      ready: input.notReady === undefined,
      failing: input.failing ?? [],
      objects: input.objects,
      errors: input.errors,
      pruneError: input.pruneError,
      updatedAt: Date.now(),
    }
    this.set(input.notReady === undefined ? next : { ...next, notReady: input.notReady })
  }

  stopped(): void {
    this.set({ ...this.value, level: 'stopped', message: 'stopped', ready: false, notReady: 'stopped', updatedAt: Date.now() })
  }

  private set(next: ReconcilerHealth): void {
    const prev = this.value
    this.value = next
    if (prev.level === next.level && prev.message === next.message && prev.ready === next.ready) return
    for (const fn of this.listeners) {
      try {
        fn(next)
      } catch (err) {
        this.onError(err, 'a reconciler health listener failed')
      }
    }
  }
}

/** The default failure report: a process warning (shown on stderr unless the application handles it). */
export function reportToProcess(err: unknown, what: string): void {
  process.emitWarning(`${what}: ${(err as Error)?.stack ?? String(err)}`, { code: 'STATEWRIGHT_RECONCILER' })
}
