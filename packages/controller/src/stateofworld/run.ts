// One run of a state-of-world controller's reconcile function, and what a successful run writes.
// Invariants:
// - A run is traced as `controller.reconcile`; the topology's view is taken inside `topology.build`
//   (policy-machinery builds its graph per run; ours is kept incrementally, so "building" it is
//   taking the run's view), with the topology changes processed since the last run.
// - The topology's cycle is given to the run as `ctx.error` (and logged at warn), not thrown.
// - A run is counted before reconcile is called: a failing run counts too.
// - Only a run that returns and was not aborted writes: its desired groups (when it declared any),
//   its statuses (queued on the status writes), and its inspection info (replacing the last run's).
import type { Logger } from '@statewright/statedb'
import type { Manager } from '../manager/manager.ts'
import type { Topology } from '@statewright/topology'
import type { DesiredGroups } from './desiredgroups.ts'
import { newStateOfWorldContext, type StateOfWorldFn, type ResourceEvent } from './reconcile.ts'
import type { StatusWrites } from './statuswrites.ts'
import { inSpan, recordError, type TracerLike } from './tracing.ts'
import type { WatchedKind } from './watched.ts'

/** What a run reads and writes of its controller. */
export interface RunContext {
  readonly name: string
  readonly manager: Manager
  readonly tables: ReadonlyMap<string, WatchedKind>
  readonly topology: Topology
  readonly reconcile: StateOfWorldFn
  readonly tracer: TracerLike | undefined
  readonly log: Logger
  readonly groups: DesiredGroups
  readonly statusWrites: StatusWrites
  /** Each topology node's inspection info (policy status, effective policy), by locator. */
  readonly inspectInfo: Map<string, { status?: string; effective?: unknown }>
  /** Runs so far (counted as each starts). */
  readonly state: { runs: number }
  /** Objects the topology processed since the last run (reset by a run); writes made by runs so far. */
  readonly counts: { topologyChanges: number; writes: number }
}

/** One run of reconcile; on success its desired groups and statuses are written. */
export async function runOnce(
  c: RunContext,
  events: ResourceEvent[],
  signal: AbortSignal,
  applyChanges: ReadonlySet<string> = new Set(),
): Promise<void> {
  const m = c.manager
  await inSpan(c.tracer, 'controller.reconcile', async (span) => {
    span?.setAttribute('controller.name', c.name)
    span?.setAttribute('events.count', events.length)
    const txn = m.db.readTxn()
    const { view, error } = inSpan(c.tracer, 'topology.build', (s) => {
      const view = c.topology.view(txn)
      const error = view.cycle()
      if (s?.isRecording()) {
        s.setAttribute('topology.changes', c.counts.topologyChanges)
        s.setAttribute('topology.policies', view.policies().items().length)
        s.setAttribute('topology.targetables', view.targetables().items().length)
        s.setAttribute('topology.objects', view.objects().items().length)
      }
      if (error) recordError(s, error)
      return { view, error }
    })
    c.counts.topologyChanges = 0
    if (error) c.log.warn({ err: error }, 'the topology has a cycle; reconcile gets it as ctx.error')
    const { ctx, want, statuses, info } = newStateOfWorldContext({
      name: c.name,
      manager: m,
      tables: c.tables,
      events,
      txn,
      topology: view,
      signal,
      logger: c.log,
      ...(error ? { error } : {}),
      ...(c.tracer ? { tracer: c.tracer } : {}),
      applyChanges,
    })
    c.state.runs++
    const t0 = performance.now()
    await c.reconcile(ctx)
    c.log.debug({ run: c.state.runs, events: events.length, ms: Math.round(performance.now() - t0) }, 'reconciled')
    if (signal.aborted) return
    if (want.size) await c.groups.replace(m.db, m.desired, want, () => c.counts.writes++)
    c.counts.writes += await c.statusWrites.queue(statuses.values())
    c.inspectInfo.clear()
    for (const [k, v] of info) c.inspectInfo.set(k, v)
  })
}
