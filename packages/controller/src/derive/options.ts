// What a derivation is given (its options and the context its fn reads through) and what its health
// reports.
// Invariant: types only; the behaviour they describe is Derivation's (derivation.ts).
import type { DB, Key, Query, RetryOptions, Table, Txn, Watch } from '@statewright/statedb'
import type { Health } from '@statewright/statedb'
import type { Logger } from '@statewright/statedb'
import type { DerivationError } from './failures.ts'

/**
 * Why fn runs for an input now: its first run in this process or term (`created`), its own change
 * (`updated`), a change of what it read through ctx (`dependency`), a retry after a failure
 * (`retry`), a requeue it asked for or a rederive of chosen inputs (`requeue`), or every input
 * derived again (`resync`: a new leader term, rederive()).
 */
export type RunReason = 'created' | 'updated' | 'dependency' | 'retry' | 'requeue' | 'resync'

export interface DeriveContext {
  /** Why fn runs for this input now. */
  readonly reason: RunReason
  /** The snapshot the derivation reads. Read joined tables through get/list so changes re-derive. */
  readonly txn: Txn
  /** One object of a joined table; the input is derived again when what this returns changes. */
  get<T>(table: Table<T>, q: Query<T>): T | undefined
  /** Objects of a joined table; the input is derived again when the result changes. */
  list<T>(table: Table<T>, q: Query<T>): T[]
  /**
   * The run's logger, set when a Manager traces its runs (ManagerOptions.tracer): the Manager's
   * logger with the run span's `trace_id` and `span_id`, so the run's log lines name its trace.
   */
  readonly logger?: Logger
}

export interface DeriveOptions<In, Out> {
  /** Names the derivation in health, errors, logs and `to`'s initializer (default "<from>-><to>"). */
  name?: string
  db: DB
  /** Input tables; `fn` runs once per input object. */
  from: Table<In> | ReadonlyArray<Table<In>>
  /** Tables `fn` reads through ctx.get/ctx.list (joins); their changes re-derive the readers. */
  joins?: ReadonlyArray<Table<any>>
  to: Table<Out>
  fn: (input: In, ctx: DeriveContext) => Out | readonly Out[] | undefined | null
  /**
   * Called once with the last known state of an input that was deleted (its outputs go), in the
   * round that sees the deletion: best effort (a throw is logged, never retried; what must happen
   * before an object goes belongs in a finalizer).
   */
  onDeleted?: (last: In) => void
  /** Refuses an output with a message (a per-object error naming the input), e.g. a missing name. */
  validate?: (out: Out, input: In) => string | undefined
  /** Whether a stored output needs no rewrite (default: equal JSON). */
  equals?: (stored: Out, next: Out) => boolean
  /** Called after each run of fn (metrics: controller-runtime's reconcile_total and _time_seconds). */
  observe?: (result: 'success' | 'error', seconds: number) => void
  /** Backoff of failing inputs (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter 0.2). */
  retry?: RetryOptions
  logger?: Logger
  /**
   * @internal Expectations (kube-controller-manager's): given the keys (in `to`) of an input's last
   * outputs, a watch when the input must not run yet (an output's write is not answered: fn would
   * read the world from before it, and a generated value would be made twice). The input runs once
   * the watch fires.
   */
  hold?: (outputKeys: readonly Key[], txn: Txn) => Watch | undefined
}

/** A derivation's health: the shared `Health` and its failing inputs. */
export interface DerivationHealth extends Health {
  /** `to` is initialized (every input table initialized and derived from) and the loop runs. */
  readonly ready: boolean
  errors: number
  failing: DerivationError[]
  /** Input and join tables not listed yet: fn runs for none of the inputs until they are. */
  waitingFor?: string[]
}
