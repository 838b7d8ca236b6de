// Metrics: the interface the reconciler reports to, and an in-memory implementation (tests, the
// example, a status page). prometheus.ts has the prom-client one.
//
// The reconciler calls `operation` once per object operation (or once per batch call, with the
// batch size as `count`), so an implementation should be cheap: no allocation per call here.

export type OperationName = 'update' | 'delete'
export type OperationResult = 'success' | 'error'

export interface Metrics {
  /** Operations finished: `count` objects (a batch call reports its size) taking `seconds` in all. */
  operation(reconciler: string, op: OperationName, result: OperationResult, seconds: number, count: number): void
  /** A prune ran (alone or in a full reconciliation); `error` when it failed (the current prune error until the next prune). */
  prune(reconciler: string, seconds: number, error: boolean): void
  /** An incremental round finished: its duration and the objects it acted on (optional for custom metrics). */
  round?(reconciler: string, seconds: number, objects: number): void
  /** A full reconciliation finished: how many objects Update reported out of sync. */
  fullReconciliation(reconciler: string, seconds: number, outOfSync: number): void
  /** After each round: objects in error (updates and deletes) and retries queued. */
  state(reconciler: string, currentErrors: number, retryQueueDepth: number): void
}

export interface ReconcilerCounters {
  operations: Record<`${OperationName}/${OperationResult}`, number>
  /** Total seconds spent per operation. */
  seconds: Record<OperationName, number>
  pruneRuns: number
  pruneErrors: number
  /** Whether the last prune failed. */
  pruneCurrentError: boolean
  /** Total seconds spent pruning. */
  pruneSeconds: number
  /** Incremental rounds. */
  rounds: number
  fullRuns: number
  outOfSync: number
  currentErrors: number
  retryQueueDepth: number
}

function emptyCounters(): ReconcilerCounters {
  return {
    operations: { 'update/success': 0, 'update/error': 0, 'delete/success': 0, 'delete/error': 0 },
    seconds: { update: 0, delete: 0 },
    pruneRuns: 0,
    pruneErrors: 0,
    pruneCurrentError: false,
    pruneSeconds: 0,
    rounds: 0,
    fullRuns: 0,
    outOfSync: 0,
    currentErrors: 0,
    retryQueueDepth: 0,
  }
}

/** Counters kept in memory, per reconciler name. */
export class InMemoryMetrics implements Metrics {
  private readonly byName = new Map<string, ReconcilerCounters>()

  private of(name: string): ReconcilerCounters {
    let c = this.byName.get(name)
    if (c === undefined) this.byName.set(name, (c = emptyCounters()))
    return c
  }

  operation(reconciler: string, op: OperationName, result: OperationResult, seconds: number, count: number): void {
    const c = this.of(reconciler)
    c.operations[`${op}/${result}`] += count
    c.seconds[op] += seconds
  }

  prune(reconciler: string, seconds: number, error: boolean): void {
    const c = this.of(reconciler)
    c.pruneRuns++
    c.pruneSeconds += seconds
    c.pruneCurrentError = error
    if (error) c.pruneErrors++
  }

  round(reconciler: string): void {
    this.of(reconciler).rounds++
  }

  fullReconciliation(reconciler: string, _seconds: number, outOfSync: number): void {
    const c = this.of(reconciler)
    c.fullRuns++
    c.outOfSync += outOfSync
  }

  state(reconciler: string, currentErrors: number, retryQueueDepth: number): void {
    const c = this.of(reconciler)
    c.currentErrors = currentErrors
    c.retryQueueDepth = retryQueueDepth
  }

  /** A copy of the counters of one reconciler (zeros when it reported nothing). */
  get(reconciler: string): ReconcilerCounters {
    const c = this.byName.get(reconciler) ?? emptyCounters()
    return { ...c, operations: { ...c.operations }, seconds: { ...c.seconds } }
  }

  names(): string[] {
    return [...this.byName.keys()]
  }
}
