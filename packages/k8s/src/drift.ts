// Drift repair: a reflector mirrors the objects we manage (selected by our ownership label) into an
// observed table; this watcher follows that table's changes and, when a managed object was deleted
// or no longer holds what we applied, marks its desired object pending again, so the reconciler
// repairs it instead of waiting for the next full reconciliation.
// Invariants: only desired objects that are done are touched (pending and failing ones are already
// being worked on); the mark is made inside a write transaction that reads the desired object, so a
// newer write of it always wins; a check compares only the fields we apply (others may add fields).
// Repairs are paced per object (repairs.ts): the first at once, then exponential backoff while the
// object keeps drifting, so a second writer that reverts us is not answered at full speed forever;
// such a fight is reported (health, metrics, onFight, a Warning Event naming the other manager).
// An object that holds what we want again before its repair is due is not repaired.
import { StoppedError } from './errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { Reconciler, statusPending } from '@statewright/reconciler'
import type { Health, Lifecycle } from '@statewright/statedb'
import type { ChangeIterator, DB, ReadTxn, Table } from '@statewright/statedb'
import type { KubeObject } from './gvk.ts'
import type { EventRecorder } from './events.ts'
import type { K8sMetrics } from './metrics.ts'
import { RepairPacer, otherManager, type Fight, type RepairPacing } from './repairs.ts'
import type { Target } from './target.ts'
import { objectKey, type DesiredObject, type DesiredTable } from './desired.ts'

export interface DriftOptions {
  db: DB
  /** The reflected managed objects (one cluster; any kinds). Reflect with keepManagedFields to name the other writer of a fight. */
  observed: Table<KubeObject>
  desired: DesiredTable
  /** Name of the cluster the observed table mirrors (default: the desired objects' default ""). */
  cluster?: string
  /** Also match desired objects that name no cluster (default true when `cluster` is given). */
  matchDefaultCluster?: boolean
  /** Backoff between repairs of one object and when that is a fight (defaults in RepairPacing). */
  pacing?: RepairPacing
  /** Our field manager: a fight names the last *other* manager of the object. */
  fieldManager?: string
  /** Warning Events (reason FightingWriter) on objects another writer keeps reverting. */
  events?: EventRecorder
  metrics?: K8sMetrics
  /** Called for each desired object marked pending (for logs and demos). */
  onDrift?: (d: DesiredObject, reason: 'deleted' | 'modified') => void
  /** Called when a fight starts. */
  onFight?: (f: Fight) => void
}

/** Drift repair's health: the shared `Health` (stopped once stopped; ready while it follows the table) and the fights. */
export interface DriftHealth extends Health {
  fights: Fight[]
}

interface Waiting {
  object: KubeObject
  reason: 'deleted' | 'modified'
}

export class DriftWatcher implements Lifecycle {
  /** Desired objects marked pending because of drift. */
  repairs = 0
  private ctrl = new AbortController()
  private loop: Promise<void> | undefined
  private iter: ChangeIterator<KubeObject> | undefined
  private readonly pacer: RepairPacer
  /** Drifted objects whose repair is not due yet, by desired key. */
  private readonly waiting = new Map<string, Waiting>()
  /** Revision of the observed table up to which changes are acted on (repaired or scheduled). */
  private consumed = -1
  private progress: Array<() => void> = []

  constructor(private readonly options: DriftOptions) {
    this.pacer = new RepairPacer(options.pacing)
  }

  /** Starts following the observed table; a stopped watcher may start again (a new leadership term). */
  async start(): Promise<void> {
    if (this.loop) return
    if (this.ctrl.signal.aborted) this.ctrl = new AbortController()
    this.iter = this.options.observed.changes(this.options.db.readTxn())
    this.loop = this.run(this.iter).finally(() => this.iter?.close())
  }

  async stop(): Promise<void> {
    this.ctrl.abort()
    await this.loop
    this.loop = undefined
    for (const f of this.progress.splice(0)) f()
  }

  /** Resolves once the observed table as it is now is acted on (see waitFor). */
  async settled(signal?: AbortSignal): Promise<void> {
    if (!this.loop || this.ctrl.signal.aborted) throw new StoppedError('drift watcher is not running')
    await this.waitFor(this.options.db.readTxn(), signal)
  }

  /**
   * Resolves once the observed table's changes up to `txn` are acted on: repairs marked, or
   * scheduled when backed off (for waits in tests). Rejects when stopped or aborted.
   */
  async waitFor(txn: ReadTxn, signal?: AbortSignal): Promise<void> {
    const want = this.options.observed.revision(txn)
    while (this.consumed < want) {
      if (!this.loop || this.ctrl.signal.aborted) throw new StoppedError('drift watcher is not running')
      signal?.throwIfAborted()
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal!.reason)
        signal?.addEventListener('abort', onAbort, { once: true })
        this.progress.push(() => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        })
      })
    }
  }

  /** Objects another writer keeps reverting (fights in progress). */
  fights(): Fight[] {
    return this.pacer.fights()
  }

  health(): DriftHealth {
    const fights = this.fights()
    const ready = this.loop !== undefined && !this.ctrl.signal.aborted
    if (this.ctrl.signal.aborted) return { level: 'stopped', message: 'stopped', ready, fights }
    if (fights.length === 0) return { level: 'ok', message: `${this.repairs} repairs`, ready, fights }
    const first = fights
      .slice(0, 3)
      .map((f) => `${f.key} (${f.repairs} repairs, other writer ${f.otherManager ?? 'unknown'})`)
      .join('; ')
    return { level: 'degraded', message: `${fights.length} objects fought over: ${first}`, ready, fights }
  }

  private async run(iter: ChangeIterator<KubeObject>): Promise<void> {
    const { db, desired } = this.options
    const signal = this.ctrl.signal
    const clusters = [this.options.cluster ?? '']
    if (this.options.cluster !== undefined && this.options.matchDefaultCluster !== false) clusters.push('')
    while (!signal.aborted) {
      const [batch, watch] = iter.next(db.readTxn())
      const txn = db.readTxn()
      for (const { object, deleted } of batch) {
        for (const c of clusters) {
          const key = objectKey(c, object)
          const e = desired.table.get(txn, desired.byKey.query(key))
          if (!e) continue
          if (!deleted && holds(object, e.object)) {
            this.waiting.delete(key)
            continue
          }
          if (e.status.kind === 'done') this.waiting.set(key, { object, reason: deleted ? 'deleted' : 'modified' })
        }
      }
      const next = await this.repairDue()
      this.consumed = this.options.observed.revision(txn)
      for (const f of this.progress.splice(0)) f()
      const round = new AbortController()
      const both = AbortSignal.any([signal, round.signal])
      try {
        await Promise.race([
          watch.wait(both),
          ...(next === undefined ? [] : [sleep(Math.max(0, next - Date.now()), undefined, { signal: both })]),
        ])
      } catch {
        if (signal.aborted) return
      } finally {
        round.abort()
      }
    }
  }

  /** Marks pending every waiting object whose repair is due; returns when the next one is due. */
  private async repairDue(): Promise<number | undefined> {
    if (this.waiting.size === 0) return undefined
    const { db, desired } = this.options
    const now = Date.now()
    const due: string[] = []
    let next: number | undefined
    for (const key of this.waiting.keys()) {
      const at = this.pacer.dueAt(key)
      if (at <= now) due.push(key)
      else next = next === undefined ? at : Math.min(next, at)
    }
    if (due.length === 0) return next
    const fights: Array<{ fight: Fight; object: KubeObject }> = []
    await db.write(desired.table, (w) => {
      for (const key of due) {
        const waiting = this.waiting.get(key)!
        this.waiting.delete(key)
        const cur = desired.table.get(w, desired.byKey.query(key))
        if (!cur || cur.status.kind !== 'done') continue
        desired.table.insert(w, { ...cur, status: statusPending() })
        this.repairs++
        this.options.metrics?.driftRepairs.inc({ cluster: this.options.cluster ?? '' })
        const fight = this.pacer.repaired(
          key,
          waiting.reason === 'modified' ? otherManager(waiting.object, this.options.fieldManager) : undefined,
        )
        if (fight) fights.push({ fight, object: waiting.object })
        this.options.onDrift?.(cur, waiting.reason)
      }
    })
    for (const { fight, object } of fights) this.reportFight(fight, object)
    this.options.metrics?.driftFights.set({ cluster: this.options.cluster ?? '' }, this.pacer.fights().length)
    return next
  }

  private reportFight(f: Fight, object: KubeObject): void {
    this.options.onFight?.(f)
    const who = f.otherManager ? `field manager "${f.otherManager}"` : 'another writer'
    this.options.events?.warning(
      object,
      'FightingWriter',
      `${who} keeps reverting what ${this.options.fieldManager ? `"${this.options.fieldManager}"` : 'this controller'} applies: ${f.repairs} repairs within the fight window; repairs are backed off`,
    )
  }
}

/**
 * Whether `observed` holds every field `want` sets (labels and annotations included). Lists of objects
 * match by item, in any order, with room for items other managers added; lists of scalars exactly.
 */
export function holds(observed: KubeObject, want: KubeObject): boolean {
  for (const k of Object.keys(want)) {
    if (k === 'status' || k === 'apiVersion' || k === 'kind') continue
    if (k === 'metadata') {
      const wm = want.metadata ?? {}
      const om = observed.metadata ?? {}
      if (wm.labels && !subset(om.labels ?? {}, wm.labels)) return false
      if (wm.annotations && !subset(om.annotations ?? {}, wm.annotations)) return false
      continue
    }
    if (!subset(observed[k], want[k])) return false
  }
  return true
}

function subset(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return have === want
  if (Array.isArray(want)) {
    if (!Array.isArray(have)) return false
    // a list of objects is matched item by item whatever the order, and may hold items others added
    // (a sidecar container, another manager's condition): only ours must be there, as we applied them
    if (want.length > 0 && want.every((w) => w !== null && typeof w === 'object' && !Array.isArray(w))) {
      return want.every((w) => have.some((h) => subset(h, w)))
    }
    if (have.length !== want.length) return false
    for (let i = 0; i < want.length; i++) if (!subset(have[i], want[i])) return false
    return true
  }
  if (have === null || typeof have !== 'object' || Array.isArray(have)) return false
  for (const [k, v] of Object.entries(want)) if (!subset((have as any)[k], v)) return false
  return true
}
