// Composing reconcile functions, as Kuadrant's policy-machinery does:
// - Subscription: runs its function only when an event matches one of its matchers, and passes it
//   the matching events; or when a derived object it read through applied()/observed() in its last
//   run changed its apply status (a tracked read, with no events); other runs without events (a
//   resync) run it only with `onEmpty: true`.
// - Workflow: precondition, then tasks concurrently, then postcondition. The first task error aborts
//   the other tasks (their signal); every task is waited for. A step's error goes to the error
//   handler joined with the error the workflow was given (`ctx.error`): a handler that returns
//   suppresses it and the workflow goes on to its next step; one that throws stops the workflow with
//   what it throws. Without a handler a step's error stops the workflow as it is.
import { WorkflowError } from '../errors.ts'
import type { StateOfWorldContext, StateOfWorldFn, ResourceEvent } from './reconcile.ts'

/** Matches events by kind (and group), type, namespace, name; absent fields match anything. */
export interface EventMatcher {
  kind?: string
  group?: string
  type?: ResourceEvent['type']
  namespace?: string
  name?: string
}

export function matches(m: EventMatcher, e: ResourceEvent): boolean {
  const obj = e.new ?? e.old
  return (
    (m.kind === undefined || m.kind === e.kind) &&
    (m.group === undefined || m.group === e.group) &&
    (m.type === undefined || m.type === e.type) &&
    (m.namespace === undefined || m.namespace === obj?.metadata?.namespace) &&
    (m.name === undefined || m.name === obj?.metadata?.name)
  )
}

export class Subscription {
  constructor(
    readonly options: {
      events: EventMatcher[]
      reconcile: StateOfWorldFn
      /** Also run on runs without events (a resync, a derived object's apply status changed). Default false. */
      onEmpty?: boolean
    },
  ) {}

  /** Keys of the derived objects the last run read through applied()/observed(). */
  private applyReads = new Set<string>()

  readonly reconcile: StateOfWorldFn = async (ctx) => {
    const mine = ctx.events.filter((e) => this.options.events.some((m) => matches(m, e)))
    // (a context made by hand in a unit test may lack the apply tracking)
    const reread = [...(ctx.applyChanges ?? [])].some((k) => this.applyReads.has(k))
    if (!(mine.length || reread || (ctx.events.length === 0 && this.options.onEmpty === true))) return
    if (!ctx.applyKey) return void (await this.options.reconcile({ ...ctx, events: mine }))
    const reads = new Set<string>()
    await this.options.reconcile({
      ...ctx,
      events: mine,
      applied: (obj, cluster) => (reads.add(ctx.applyKey(obj, cluster)), ctx.applied(obj, cluster)),
      observed: (obj, cluster) => (reads.add(ctx.applyKey(obj, cluster)), ctx.observed(obj, cluster)),
    })
    this.applyReads = reads
  }
}

export interface WorkflowOptions {
  precondition?: StateOfWorldFn
  tasks?: StateOfWorldFn[]
  postcondition?: StateOfWorldFn
  /**
   * Sees a step's error, joined with the error the workflow was given (a WorkflowError listing both;
   * the step's error as it is when there was none). Return to suppress it: the workflow goes on.
   * Throw to stop the workflow (the run fails and is retried with backoff).
   */
  errorHandler?: (err: unknown, ctx: StateOfWorldContext) => void | Promise<void>
}

/** policy-machinery's errors.Join(carried over, step error): the step's error alone when nothing was carried over. */
export function joinErrors(carried: unknown, err: unknown): unknown {
  return carried === undefined ? err : new WorkflowError([carried, err])
}

export class Workflow {
  constructor(readonly options: WorkflowOptions) {}

  readonly reconcile: StateOfWorldFn = async (ctx) => {
    const { precondition, postcondition, tasks = [] } = this.options
    if (precondition) await this.step(ctx, () => precondition(ctx))
    if (tasks.length) await this.step(ctx, () => this.runTasks(tasks, ctx))
    if (postcondition) await this.step(ctx, () => postcondition(ctx))
  }

  /** Runs one step; its error goes to the handler (which may suppress it) or stops the workflow. */
  private async step(ctx: StateOfWorldContext, run: () => void | Promise<void>): Promise<void> {
    try {
      await run()
    } catch (err) {
      if (!this.options.errorHandler) throw err
      await this.options.errorHandler(joinErrors(ctx.error, err), ctx)
    }
  }

  /** The tasks concurrently; the first error aborts the others' signal, and is thrown once all are done. */
  private async runTasks(tasks: StateOfWorldFn[], ctx: StateOfWorldContext): Promise<void> {
    const ac = new AbortController()
    const signal = AbortSignal.any([ctx.signal, ac.signal])
    let first: { err: unknown } | undefined
    await Promise.all(
      tasks.map(async (task) => {
        try {
          await task({ ...ctx, signal })
        } catch (err) {
          if (!first) {
            first = { err }
            ac.abort(err)
          }
        }
      }),
    )
    if (first) throw first.err
  }
}
