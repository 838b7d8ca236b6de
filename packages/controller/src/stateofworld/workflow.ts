// Composing reconcile functions, as Kuadrant's policy-machinery does:
// - Subscription: runs its function only when an event matches one of its matchers, and passes it
//   the matching events.
// - Workflow: precondition, then tasks concurrently, then postcondition. The first task error aborts
//   the other tasks (their signal) and skips the postcondition; the error handler sees the error and
//   decides (rethrow to have the run retried with backoff, return to swallow it). Without a handler
//   the error propagates.
import type { ReconcileContext, ReconcileFn, ResourceEvent } from './reconcile.ts'

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
      reconcile: ReconcileFn
      /** Also run on runs without events (resyncs, startup). Default true. */ onEmpty?: boolean
    },
  ) {}

  readonly reconcile: ReconcileFn = async (ctx) => {
    if (ctx.events.length === 0) {
      if (this.options.onEmpty !== false) await this.options.reconcile(ctx)
      return
    }
    const mine = ctx.events.filter((e) => this.options.events.some((m) => matches(m, e)))
    if (mine.length) await this.options.reconcile({ ...ctx, events: mine })
  }
}

export interface WorkflowOptions {
  precondition?: ReconcileFn
  tasks?: ReconcileFn[]
  postcondition?: ReconcileFn
  /** Sees the error of any step; rethrow to fail the run (retried with backoff). */
  errorHandler?: (err: unknown, ctx: ReconcileContext) => void | Promise<void>
}

export class Workflow {
  constructor(readonly options: WorkflowOptions) {}

  readonly reconcile: ReconcileFn = async (ctx) => {
    try {
      if (this.options.precondition) await this.options.precondition(ctx)
      const tasks = this.options.tasks ?? []
      if (tasks.length) {
        const ac = new AbortController()
        const signal = AbortSignal.any([ctx.signal, ac.signal])
        await Promise.all(
          tasks.map(async (task) => {
            try {
              await task({ ...ctx, signal })
            } catch (err) {
              if (!ac.signal.aborted) ac.abort(err)
              throw err
            }
          }),
        )
      }
      if (this.options.postcondition) await this.options.postcondition(ctx)
    } catch (err) {
      if (!this.options.errorHandler) throw err
      await this.options.errorHandler(err, ctx)
    }
  }
}
