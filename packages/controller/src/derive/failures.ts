// A derivation's failing inputs: one row per input in the database's derivation-errors table, and
// the backoff that decides when each is tried again.
// Invariants:
// - A failed run writes the input's row (error, attempts, next try) and schedules its retry (none for
//   a TerminalError: retryAt is Infinity); a successful run, or the input's deletion, clears both.
// - Backoff doubles from retry.minMs up to retry.maxMs, jittered so that inputs failing together do
//   not retry together (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, ±20%).
// - An input no longer known when its retry is due is dropped from the schedule, not retried.
import type { Logger } from '@statewright/statedb'
import {
  Table,
  backoffDelay,
  defineIndex,
  resolveRetry,
  type DB,
  type RetryOptions,
  type ReadTxn,
  type WriteTxn,
} from '@statewright/statedb'
import type { Journal } from './journal.ts'
import { describeInput, type InputRef } from './keys.ts'

/** A failing input: a row of the derivation's errors table. */
export interface DerivationError {
  /** "<derivation>\u001f<input>" (unique; `derivation` and `input` are the readable parts) */
  readonly id: string
  readonly derivation: string
  /** The input: "<table> <primary key>". */
  readonly input: string
  readonly error: string
  readonly attempts: number
  /** Unix ms of the next try. */
  readonly retryAt: number
  /**
   * Whether the input's outputs of an earlier success in this process stand (false: none since the
   * process started, so what it produced before is unknown: the input is unsettled).
   */
  readonly outputsKept: boolean
}

const errorId = defineIndex<DerivationError, string>({ name: 'id', key: (e) => e.id, unique: true })
const errorTables = new WeakMap<DB, Table<DerivationError>>()
/** The errors table of a database's derivations (registered on first use; one per DB). */
export function derivationErrors(db: DB): Table<DerivationError> {
  let t = errorTables.get(db)
  if (!t) {
    t = new Table<DerivationError>({ name: 'derivation-errors', primary: errorId })
    db.register(t)
    errorTables.set(db, t)
  }
  return t
}

/** Between a derivation's name and an input in an error row's id (names may contain "/"). */
const SEP = '\u001f'

export class Failures {
  private readonly retries = new Map<string, { attempts: number; at: number }>()

  constructor(
    private readonly name: string,
    private readonly errors: Table<DerivationError>,
    private readonly from: ReadonlyArray<Table<any>>,
    /** The derivation's options (read at each failure, as they were). */
    private readonly options: { readonly retry?: RetryOptions },
    private readonly journal: Journal,
    private readonly log: Logger,
  ) {}

  /** The rows of this derivation's failing inputs. */
  list(txn: ReadTxn): DerivationError[] {
    return this.errors.prefix(txn, errorId.query(`${this.name}${SEP}`)).toArray()
  }

  /** Marks the inputs whose retry is due; returns when the next retry is due (Infinity: none). */
  due(now: number, refs: ReadonlyMap<string, InputRef>, mark: (id: string, ref: InputRef) => void): number {
    let nextRetry = Infinity
    for (const [id, r] of this.retries) {
      if (r.at <= now) {
        const ref = refs.get(id)
        if (ref) mark(id, ref)
        else this.retries.delete(id)
      } else nextRetry = Math.min(nextRetry, r.at)
    }
    return nextRetry
  }

  /** The input id of a row. */
  inputIdOf(row: DerivationError): string {
    return row.id.slice(this.name.length + SEP.length)
  }

  /** Records a failed run of the input: its row, and its next try. */
  failed(w: WriteTxn, id: string, err: unknown, outputsKept: boolean, terminal = false): void {
    const prev = this.retries.get(id)
    const attempts = (prev?.attempts ?? 0) + 1
    const delay = terminal ? Infinity : backoffDelay(attempts, resolveRetry(this.options.retry))
    const at = Date.now() + delay
    this.journal.mapSet(this.retries, id, { attempts, at })
    const message = (err as Error)?.message ?? String(err)
    const input = describeInput(this.from, id)
    this.errors.insert(w, {
      id: `${this.name}${SEP}${id}`,
      derivation: this.name,
      input,
      error: message,
      attempts,
      retryAt: at,
      outputsKept,
    })
    if (terminal) this.log.warn({ input, attempts, err: message }, 'derivation failed (terminal: not retried until the input changes)')
    else this.log.warn({ input, attempts, retryInMs: Math.round(delay), err: message }, 'derivation failed; will retry')
  }

  /** The input ran (or is gone): its row and retry go. */
  clear(w: WriteTxn, id: string): void {
    if (!this.retries.has(id)) return
    this.journal.mapDel(this.retries, id)
    const cur = this.errors.get(w, errorId.query(`${this.name}${SEP}${id}`))
    if (cur) this.errors.delete(w, cur)
    this.log.info({ input: describeInput(this.from, id) }, 'derivation recovered')
  }
}
