// When a reconciler runs a full reconciliation and a prune alone, and the callers waiting for them.
// Invariants:
// - Neither runs before the table is initialized (pruning against a partial desired set would
//   delete what the writers have not inserted yet): while one is due on an uninitialized table the
//   loop waits on the initialization watch, not on the overdue time.
// - A full reconciliation runs every `fullIntervalMs` (counted from the end of the last one) and on
//   request; with `operations.prune`, a prune alone runs as soon as the table is initialized (once
//   per start), then every `pruneIntervalMs` after the last prune (a full reconciliation's prune
//   counts) and on request.
// - Callers asking meanwhile share the next run: a full reconciliation answers the prune requests
//   too (its prune is one); a run that throws rejects every request it took.
// - A prune's error is the reconciler's `pruneError` until the next prune.
// - A full reconciliation whose listing failed (`operations.list`) did nothing: it runs again after
//   the reconciler's backoff (`retry`, per consecutive failure), before the next interval, until a
//   listing succeeds; the callers of the failed one get its report (with `listError`).
import { backoffDelay, type Watch } from '@statewright/statedb'
import type { ResolvedReconcilerConfig } from './config.ts'
import { fullReconciliation, type Between, type FullReport } from './full.ts'
import { prune, type PruneReport } from './prune.ts'
import type { OperationRunner } from './runner.ts'

interface Request<R> {
  resolve: (r: R) => void
  reject: (e: unknown) => void
}

export class FullSchedule<Obj> {
  private fullRequests: Request<FullReport>[] = []
  private pruneRequests: Request<PruneReport>[] = []
  private nextFullAt = Infinity
  /** When the next prune alone is due (Infinity: none scheduled; 0: as soon as the table is initialized). */
  private nextPruneAt = Infinity
  /** The last prune's error. */
  pruneError: string | undefined
  /** The last full reconciliation's report. */
  lastFull: FullReport | undefined
  /** Consecutive full reconciliations whose listing failed. */
  private listFailures = 0

  constructor(
    private readonly config: ResolvedReconcilerConfig<Obj>,
    private readonly counters: { fullRuns: number; pruneRuns: number },
  ) {}

  /** A start: the first full reconciliation one interval from now, the first prune at once. */
  start(now: number): void {
    this.nextFullAt = this.config.fullIntervalMs > 0 ? now + this.config.fullIntervalMs : Infinity
    this.nextPruneAt = this.config.operations.prune ? 0 : Infinity
    this.listFailures = 0
  }

  /** Resolves with the next full reconciliation's report. */
  requestFull(): Promise<FullReport> {
    return new Promise<FullReport>((resolve, reject) => this.fullRequests.push({ resolve, reject }))
  }

  /** Resolves with the next prune's report. */
  requestPrune(): Promise<PruneReport> {
    return new Promise<PruneReport>((resolve, reject) => this.pruneRequests.push({ resolve, reject }))
  }

  /**
   * Runs what is due (a full reconciliation before a prune alone) once the table is initialized.
   * Returns when the loop is to wake for them next, and, while they wait for the table to be
   * initialized, its initialization watch.
   */
  async runDue(runner: OperationRunner<Obj>, between?: Between): Promise<{ fullAt: number; pruneAt: number; initWatch?: Watch }> {
    const { db, table } = this.config
    let fullAt = this.nextFullAt
    const fullDue = this.fullRequests.length > 0 || Date.now() >= this.nextFullAt
    const pruneDue = this.pruneRequests.length > 0 || Date.now() >= this.nextPruneAt
    let pruneAt = this.nextPruneAt
    if (!fullDue && !pruneDue) return { fullAt, pruneAt }
    const [initialized, initWatch] = table.initialized(db.readTxn())
    if (!initialized) return { fullAt: fullDue ? Infinity : fullAt, pruneAt: pruneDue ? Infinity : pruneAt, initWatch }
    if (fullDue) await this.runFull(runner, between)
    else await this.runPrune(runner)
    return { fullAt: this.nextFullAt, pruneAt: this.nextPruneAt }
  }

  /** Rejects every waiting request (the reconciler stopped). */
  fail(err: unknown): void {
    for (const r of this.fullRequests.splice(0)) r.reject(err)
    for (const r of this.pruneRequests.splice(0)) r.reject(err)
  }

  private async runFull(runner: OperationRunner<Obj>, between: Between | undefined): Promise<void> {
    const requests = this.fullRequests.splice(0)
    const pruneRequests = this.config.operations.prune ? this.pruneRequests.splice(0) : []
    let listFailed = false
    try {
      const report = await fullReconciliation(runner, between)
      listFailed = report.listError !== undefined
      this.counters.fullRuns++
      this.lastFull = report
      this.pruned(report.pruneError)
      for (const r of requests) r.resolve(report)
      const pruneReport: PruneReport = { durationMs: report.durationMs }
      for (const r of pruneRequests) r.resolve(report.pruneError === undefined ? pruneReport : { ...pruneReport, error: report.pruneError })
    } catch (err) {
      for (const r of [...requests, ...pruneRequests]) r.reject(err)
      throw err
    } finally {
      const now = Date.now()
      this.nextFullAt = this.config.fullIntervalMs > 0 ? now + this.config.fullIntervalMs : Infinity
      if (listFailed) this.nextFullAt = Math.min(this.nextFullAt, now + backoffDelay(++this.listFailures, this.config.retry))
      else this.listFailures = 0
    }
  }

  private async runPrune(runner: OperationRunner<Obj>): Promise<void> {
    const requests = this.pruneRequests.splice(0)
    try {
      const report = await prune(runner)
      this.counters.pruneRuns++
      this.pruned(report.error)
      for (const r of requests) r.resolve(report)
    } catch (err) {
      for (const r of requests) r.reject(err)
      throw err
    }
  }

  /** After any prune: its error is the health's until the next prune; the next prune alone is scheduled. */
  private pruned(error: string | undefined): void {
    if (this.config.operations.prune === undefined && this.config.operations.list === undefined) return
    this.pruneError = error
    this.nextPruneAt = this.config.pruneIntervalMs > 0 ? Date.now() + this.config.pruneIntervalMs : Infinity
  }
}
