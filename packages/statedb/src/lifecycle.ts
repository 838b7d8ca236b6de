// The one lifecycle contract of statewright: every part that runs (a reconciler, a reflector, a
// lease, finalizers, a derivation, the primary controller, the Manager's components) is started,
// stopped, asked how it is and waited on the same way, so the Manager, tests and people handle any
// part without knowing which it is (controller-runtime's Runnable, with health and a settle wait).
// It lives here, on the ground floor, because every package has parts that run.
//
// Invariants:
// - start() resolves once the part runs (its first list or round may still be under way: settled()
//   waits for that); a second start() while running is a no-op, a start() after stop() is a
//   UsageError;
// - stop() resolves once nothing the part started is still running; it may be called more than
//   once and before start();
// - health() never throws and is cheap enough for a probe; object errors make it degraded, never
//   unready (`ready` says only whether the part can be relied on);
// - settled(signal) resolves once the part has acted on everything it had seen when called (its
//   errors are in health(), not a rejection), and rejects only when the signal aborts or the part
//   stops.

/** How a part is doing: the one level every statewright health reports. */
export type HealthLevel = 'ok' | 'degraded' | 'stopped'

/**
 * The one health shape: every part's health (the reconciler's, reflectors', derivations', drift's,
 * finalizers', leases', components', the primary controller's) extends it with its own fields.
 */
export interface Health {
  readonly level: HealthLevel
  /** One line for people: what is wrong, or a count when nothing is. */
  readonly message: string
  /** Whether the part can be relied on (readiness); object errors do not make a part unready. */
  readonly ready: boolean
}

/** A part with a lifecycle: started, stopped, asked how it is, waited on. */
export interface Lifecycle {
  /** Starts the part; resolves once it runs. */
  start(): Promise<void>
  /** Stops the part; resolves once nothing it started still runs. */
  stop(): Promise<void>
  /** How the part is doing now. */
  health(): Health
  /** Resolves once the part has acted on everything it had seen when called; rejects when `signal` aborts or the part stops. */
  settled(signal?: AbortSignal): Promise<void>
}
