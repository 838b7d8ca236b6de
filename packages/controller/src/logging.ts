// Structured logging: the Logger interface (statedb's, the ground floor's, which pino satisfies: pass a pino
// logger as it is), and a small default that writes JSON lines to stderr.
// Invariants:
// - Library code logs only through a Logger, never console.*; components log with child loggers that
//   carry their cluster, table, reconciler or derivation, and the object key where there is one.
// - Everything logged goes through statedb's secret redactor first: a Secret's data (at any depth)
//   or an object marked sensitive is never written to a log.
// - The default level is info; LOG_LEVEL overrides it (trace, debug, info, warn, error, fatal, silent).
import { redactSecrets } from '@statewright/statedb'
import type { LogFn, Logger } from '@statewright/statedb'

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent'

const LEVELS: Record<Exclude<LogLevel, 'silent'>, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 }

export interface LoggerOptions {
  /** Default: LOG_LEVEL, else info. */
  level?: LogLevel
  /** Where lines go (default process.stderr). */
  write?: (line: string) => void
  /** Fields on every line. */
  bindings?: Record<string, unknown>
}

function levelFrom(env: string | undefined): LogLevel | undefined {
  const l = env?.toLowerCase()
  return l && (l === 'silent' || l in LEVELS) ? (l as LogLevel) : undefined
}

/** Errors become { type, message, stack } (JSON.stringify drops their fields otherwise). */
function serialize(v: unknown): unknown {
  if (v instanceof Error) return { type: v.name, message: v.message, ...(v.stack ? { stack: v.stack } : {}) }
  return v
}

class JsonLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly write: (line: string) => void,
    private readonly bindings: Record<string, unknown>,
  ) {}

  private log(level: Exclude<LogLevel, 'silent'>, a: object | string, msg?: string): void {
    const n = LEVELS[level]
    if (n < this.min) return
    const fields = typeof a === 'string' ? {} : (redactSecrets('log', a) as Record<string, unknown>)
    const out: Record<string, unknown> = { level: n, time: Date.now(), ...this.bindings }
    for (const [k, v] of Object.entries(fields)) out[k] = serialize(v)
    out.msg = typeof a === 'string' ? a : msg
    let line: string
    try {
      line = JSON.stringify(out, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))
    } catch {
      line = JSON.stringify({ level: n, time: out.time, ...this.bindings, msg: out.msg, logError: 'fields could not be serialized' })
    }
    this.write(line + '\n')
  }

  trace: LogFn = (a: object | string, msg?: string) => this.log('trace', a, msg)
  debug: LogFn = (a: object | string, msg?: string) => this.log('debug', a, msg)
  info: LogFn = (a: object | string, msg?: string) => this.log('info', a, msg)
  warn: LogFn = (a: object | string, msg?: string) => this.log('warn', a, msg)
  error: LogFn = (a: object | string, msg?: string) => this.log('error', a, msg)
  fatal: LogFn = (a: object | string, msg?: string) => this.log('fatal', a, msg)

  child(bindings: Record<string, unknown>): Logger {
    return new JsonLogger(this.min, this.write, { ...this.bindings, ...(redactSecrets('log', bindings) as Record<string, unknown>) })
  }
}

/** JSON lines (pino's shape: level number, time, bindings, msg) on stderr, at LOG_LEVEL or info. */
export function createLogger(o: LoggerOptions = {}): Logger {
  const level = o.level ?? levelFrom(process.env.LOG_LEVEL) ?? 'info'
  const min = level === 'silent' ? Infinity : LEVELS[level]
  return new JsonLogger(min, o.write ?? ((line) => void process.stderr.write(line)), o.bindings ?? {})
}

const noop: LogFn = () => {}
/** A logger that drops everything (the default where no logger is given outside a Manager). */
export const nullLogger: Logger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, fatal: noop, child: () => nullLogger }
