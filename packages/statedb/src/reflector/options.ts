// What a reflector core is told: its table, source and row writer, how it batches, backs off, bounds
// silence and reports (hooks feed the metrics of the reflector built on it). Defaults are stated on
// each field; a source's reflector (k8s, NATS) fills them with its own where it has reasons.
import type { DB } from '../db.ts'
import type { Table } from '../table.ts'
import type { Logger } from '../logger.ts'
import type { RetryOptions } from '../retry.ts'
import type { ReflectorSource, RowWriter } from './source.ts'

/** Called as the core goes (metrics of the reflector built on it). */
export interface ReflectorHooks {
  /** A list was written. */
  listed?(): void
  /** A list forced by the source started (a resume refused, a requested relist). */
  relisted?(): void
  /** Rows were written: after a list, or a batch of events. */
  written?(what: 'list' | 'batch'): void
  /** A failure (of the list or watch, or of one object) was counted. */
  failed?(): void
  /** The watch is up (established) or down. */
  up?(up: boolean): void
  /** A silent watch was restarted. */
  inactive?(): void
}

export interface ReflectorCoreOptions<Item, P> {
  /** In health, logs and the table's initializer (`initializer`). */
  name: string
  /** The table initializer's name (default `name`). */
  initializer?: string
  db: DB
  table: Table<any>
  source: ReflectorSource<Item, P>
  rows: RowWriter<Item>
  /** Most keys per write transaction (default 1000). */
  batchSize?: number
  /** Longest delay between an event and its write, ms (default 10). */
  batchDelayMs?: number
  /** Backoff after failures (default: the shared DEFAULT_RETRY). */
  retry?: RetryOptions
  /** Readiness is lost after failing this long without a success, ms (default 15 000; Infinity: never). */
  lostAfterMs?: number
  /** Restart a watch that delivered nothing (no event, no bookmark) for this long, ms (default: never). */
  inactivityTimeoutMs?: number
  /** No watch: a list every this many ms replaces the rows (state of the world). */
  pollIntervalMs?: number
  /** Longest wait at stop() for a session that does not end at once, ms (default: as long as it takes). */
  stopGraceMs?: number
  logger?: Logger
  /** Fields of every log line (which reflector: its cluster and kind, its bucket). */
  logFields?: Record<string, unknown>
  /** Wraps a failure the core finds itself (a failed write, a watch closed at once) in the caller's error class. */
  error: (message: string, cause?: unknown) => Error
  hooks?: ReflectorHooks
}
