// A Logger for tests that keeps what it is given: entries with level, fields and message;
// `errors` lists the `err` messages logged (what an `onError` callback used to collect).
import type { Logger } from '@statewright/statedb'

export interface LogEntry {
  level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'
  fields: Record<string, unknown>
  msg: string | undefined
}

export interface CollectingLogger extends Logger {
  readonly entries: LogEntry[]
  /** The messages of the logged `err` fields, in order. */
  readonly errors: string[]
}

export function collectingLogger(
  onEntry?: (e: LogEntry) => void,
  bindings: Record<string, unknown> = {},
  entries: LogEntry[] = [],
): CollectingLogger {
  const at =
    (level: LogEntry['level']) =>
    (a: object | string, msg?: string): void => {
      const e: LogEntry = typeof a === 'string' ? { level, fields: { ...bindings }, msg: a } : { level, fields: { ...bindings, ...a }, msg }
      entries.push(e)
      onEntry?.(e)
    }
  return {
    entries,
    get errors() {
      return entries.filter((e) => e.fields.err !== undefined).map((e) => (e.fields.err as Error)?.message ?? String(e.fields.err))
    },
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    child: (b) => collectingLogger(onEntry, { ...bindings, ...b }, entries),
  }
}
