// Retry backoff shared by every floor: one `RetryOptions` shape, one default, one delay function.
//
// Invariants:
// - every retry loop of statewright (the reconciler's retry queue, reflectors, derive, finalizers,
//   the state-of-world controller, the topology's links, the primary controller) takes its settings
//   as `retry?: RetryOptions` and fills the gaps from DEFAULT_RETRY through `resolveRetry`, so an
//   option left out means the same everywhere: 100 ms doubling to 30 s, spread by ±20%;
// - a place that needs another default passes it explicitly and says why where it does;
// - `backoffDelay` never returns more than maxMs, jitter included.
//
// It lives on the ground floor because the lowest package that retries (@statewright/topology)
// stands on statedb only.

import { ConfigError } from './errors.ts'

/** Exponential backoff settings: minMs doubling with each failure up to maxMs, jittered. */
export interface RetryOptions {
  /** First backoff after a failure, ms (default 100). */
  minMs?: number
  /** Backoff cap, ms (default 30 000). */
  maxMs?: number
  /** Spread each backoff by up to this fraction either way, 0..1 (default 0.2), so that loops failing together do not retry in step. */
  jitter?: number
}

/** The one default of every `retry` option: 100 ms doubling to 30 s, jitter ±20%. */
export const DEFAULT_RETRY: Readonly<Required<RetryOptions>> = Object.freeze({ minMs: 100, maxMs: 30_000, jitter: 0.2 })

/**
 * `options` with DEFAULT_RETRY filling what is left out. Throws a ConfigError naming the option when
 * minMs or maxMs is not a positive number, minMs is above maxMs, or jitter is outside 0..1;
 * `who` (default "retry") prefixes the message.
 */
export function resolveRetry(options?: RetryOptions, who = 'retry'): Required<RetryOptions> {
  const minMs = options?.minMs ?? DEFAULT_RETRY.minMs
  const maxMs = options?.maxMs ?? DEFAULT_RETRY.maxMs
  const jitter = options?.jitter ?? DEFAULT_RETRY.jitter
  for (const [name, v] of [
    ['minMs', minMs],
    ['maxMs', maxMs],
  ] as const) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      throw new ConfigError(`${who}: retry.${name} must be a positive number of ms, got ${String(v)}`)
    }
  }
  if (minMs > maxMs) throw new ConfigError(`${who}: retry.minMs (${minMs}) is above retry.maxMs (${maxMs})`)
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    throw new ConfigError(`${who}: retry.jitter must be a fraction between 0 and 1, got ${String(jitter)}`)
  }
  return { minMs, maxMs, jitter }
}

/**
 * The delay before retry number `attempts` (>= 1): minMs doubling with each attempt, capped at maxMs,
 * spread by up to `jitter` (0..1) either way and capped again. Every retry loop of statewright uses
 * it, so that a `retry: { minMs, maxMs, jitter }` option means the same everywhere. Pass settings
 * filled by `resolveRetry`; a missing `jitter` here means none.
 */
export function backoffDelay(
  attempts: number,
  retry: { minMs: number; maxMs: number; jitter?: number },
  random: () => number = Math.random,
): number {
  const d = Math.min(retry.minMs * 2 ** Math.min(Math.max(attempts, 1) - 1, 1023), retry.maxMs)
  const jitter = retry.jitter ?? 0
  return jitter > 0 ? Math.min(retry.maxMs, d * (1 + jitter * (2 * random() - 1))) : d
}
