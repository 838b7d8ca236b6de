// The one logging interface of statewright: the part of pino's Logger the packages use, so a pino
// logger is passed as it is. Every part that reports failures it handles itself (a reflector's
// failed list, a leader election request, the reconciler's loop) takes `logger?: Logger`.
//
// Invariants:
// - library code never writes to the console; without a logger a part stays quiet (its health and
//   metrics still say what is wrong), except the reconciler, whose loop failures become a process
//   warning;
// - a logger that throws never ends the caller's loop (logTo swallows it);
// - fields name what failed: `err` (the Error), and the part's cluster, kind, key or name.
// It lives here, on the ground floor: every package logs.
// @statewright/controller has a JSON-lines implementation (createLogger) and nullLogger.

/** One level's method: fields and a message, or a message alone (pino's signature). */
export type LogFn = {
  (obj: object, msg?: string): void
  (msg: string): void
}

/** The part of pino's Logger statewright uses. */
export interface Logger {
  trace: LogFn
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
  fatal: LogFn
  child(bindings: Record<string, unknown>): Logger
}

/** Logs `fields` and `msg` at `level` when there is a logger; a logger that throws is ignored. */
export function logTo(logger: Logger | undefined, level: 'warn' | 'error', fields: object, msg: string): void {
  if (logger === undefined) return
  try {
    logger[level](fields, msg)
  } catch {
    // the logger's failure is not ours to handle
  }
}
