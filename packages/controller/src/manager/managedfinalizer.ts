// A Finalizer as a Manager part: made on the manager's cluster, DB and field manager, and run as a
// leader-only Component.
// Invariants:
// - Leader-only: cleanups run on one replica at a time, and its writes are fenced by the leader's term.
// - Ready unless stopped: a failing cleanup is an object error (degraded, listed as failing), never
//   unreadiness.
import type { KubeObject, Cluster, EventRecorder, WriteFence } from '@statewright/k8s'
import type { DB, Table } from '@statewright/statedb'
import { Finalizer, type FinalizerOptions } from '../finalizers.ts'
import type { Logger } from '@statewright/statedb'
import type { Component, ManagedFinalizerOptions } from './options.ts'

/** The finalizer of `o`, and the Component that runs it. */
export function managedFinalizer<T extends object>(
  o: ManagedFinalizerOptions<T>,
  m: {
    cluster: Cluster
    db: DB
    fieldManager: string
    logger: Logger
    fence?: () => WriteFence | undefined
    events?: EventRecorder
  },
): { finalizer: Finalizer; component: Component } {
  const { on, cleanup, ...rest } = o
  const f = new Finalizer({
    ...rest,
    cleanup: cleanup as FinalizerOptions['cleanup'],
    cluster: m.cluster,
    db: m.db,
    table: on as unknown as Table<KubeObject>,
    fieldManager: m.fieldManager,
    logger: m.logger.child({ finalizer: o.name }),
    ...(m.fence ? { fence: m.fence } : {}),
    ...(m.events ? { events: m.events } : {}),
  })
  const component: Component = {
    name: `finalizer ${o.name}`,
    leaderOnly: true,
    start: () => f.start(),
    stop: () => f.stop(),
    health: () => {
      const h = f.health()
      return { ready: h.ready, level: h.level, message: h.message, failing: h.failing }
    },
    idle: () => f.pending() === 0,
    settled: (signal) => f.settled(signal),
  }
  return { finalizer: f, component }
}
