// Status writes of a state-of-world controller: the statuses a run declares, written by server-side
// apply on /status through a reconciler of their own (so each is retried with backoff, never dropped).
// Invariants:
// - a status equal to the object's current one (conditions by type, status, reason, message,
//   observedGeneration; other fields by value) is not written: after convergence nothing is rewritten;
// - a different patch replaces a pending one for the same object, so the last declared status wins.
import { isDeepStrictEqual } from 'node:util'
import { Table, defineIndex, type RetryOptions } from '@statewright/statedb'
import { Reconciler, newStatusIndex, statusPending, type ReconcilerHealth, type Status, type StatusIndex } from '@statewright/reconciler'
import type { KubeObject } from '@statewright/k8s'
import { StatusWriter, conditionsOf, type StatusPatch } from '../conditions.ts'
import type { Logger } from '@statewright/statedb'
import type { Manager } from '../manager/manager.ts'

interface StatusRow {
  key: string
  cluster: string
  object: KubeObject
  patch: StatusPatch
  status: Status
}

/** A status to write: the object (its freshest copy) and the patch. */
export interface StatusToWrite {
  key: string
  cluster: string
  object: KubeObject
  patch: StatusPatch
}

const SAME_CONDITION = ['type', 'status', 'reason', 'message', 'observedGeneration'] as const

/** The value as the API server would hold it (no undefined fields), for comparing with what it sent. */
const asJson = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)))

/** Whether the object already has the status the patch sets. */
export function sameStatus(obj: KubeObject, patch: StatusPatch): boolean {
  const cur = conditionsOf(obj)
  const { conditions, ...fields } = patch
  const curStatus = (obj as { status?: Record<string, unknown> }).status ?? {}
  // whatever the order of keys: the server's status need not list them in the order of our patch
  for (const [k, v] of Object.entries(fields)) if (!isDeepStrictEqual(asJson(curStatus[k]), asJson(v))) return false
  for (const c of conditions ?? []) {
    const x = cur.find((y) => y.type === c.type) as Record<string, unknown> | undefined
    const want = { observedGeneration: obj.metadata.generation, ...c } as Record<string, unknown>
    if (!x || SAME_CONDITION.some((f) => want[f] !== undefined && x[f] !== want[f])) return false
  }
  return true
}

export class StatusWrites {
  private readonly table: Table<StatusRow>
  private readonly index: StatusIndex<StatusRow>
  /** The reconciler writing the statuses (inspection shows its per-object status). */
  readonly reconciler: Reconciler<StatusRow>
  private readonly manager: Manager

  constructor(o: { manager: Manager; name: string; logger: Logger; retry?: RetryOptions }) {
    const m = (this.manager = o.manager)
    this.index = newStatusIndex<StatusRow>((r) => r.status)
    this.table = new Table<StatusRow>({
      name: `${o.name}-status-writes`,
      primary: defineIndex({ name: 'key', key: (r: StatusRow) => r.key, unique: true }),
      indexes: [this.index],
    })
    m.db.register(this.table)
    const writers = new Map<string, StatusWriter>()
    const writerOf = (cluster: string) => {
      let w = writers.get(cluster)
      if (!w) {
        w = new StatusWriter({
          cluster: m.clusters.get(cluster)!,
          fieldManager: m.name,
          fence: () => m.writeFence(),
          onWritten: (answer) => m.sawOwnWrite(answer, cluster),
        })
        writers.set(cluster, w)
      }
      return w
    }
    this.reconciler = new Reconciler<StatusRow>({
      name: `${o.name}-status`,
      // status writes: each row is written when it changes; the primary's own echo repairs drift
      fullReconciliationIntervalMs: 0,

      db: m.db,
      table: this.table,
      statusIndex: this.index,
      primaryKey: (r) => r.key,
      getObjectStatus: (r) => r.status,
      setObjectStatus: (r, status) => ({ ...r, status }),
      operations: {
        update: async (r, ctx) => {
          await writerOf(r.cluster).apply(r.object, r.patch, { signal: ctx.signal })
        },
        delete: () => {},
      },
      ...(o.retry ? { retry: o.retry } : {}),
      logger: o.logger,
    })
  }

  start(): Promise<void> {
    return this.reconciler.start()
  }
  stop(): Promise<void> {
    return this.reconciler.stop()
  }
  health(): ReconcilerHealth {
    return this.reconciler.health()
  }

  /** Whether some status waits to be written. */
  pending(): boolean {
    return this.table.list(this.manager.db.readTxn(), this.index.kind('pending')).first() !== undefined
  }

  /** Resolves once every queued status was acted on (written, or failed and queued for retry). */
  waitWritten(signal: AbortSignal): Promise<void> {
    return this.reconciler.waitForRevision(this.table.revision(this.manager.db.readTxn()), { signal })
  }

  /** Queues the statuses that differ from their objects' (in one transaction); returns how many. */
  async queue(statuses: Iterable<StatusToWrite>): Promise<number> {
    const list = [...statuses]
    if (list.length === 0) return 0
    let queued = 0
    await this.manager.db.write(this.table, (w) => {
      for (const s of list) {
        const cur = this.table.get(w, this.table.primary.query(s.key as never))
        const samePatch = !!cur && isDeepStrictEqual(cur.patch, s.patch)
        // written already (or on its way); a different pending patch is replaced so the last one wins
        if (sameStatus(s.object, s.patch) ? !cur || samePatch : samePatch && cur!.status.kind === 'pending') continue
        this.table.insert(w, { key: s.key, cluster: s.cluster, object: s.object, patch: s.patch, status: statusPending() })
        queued++
      }
    })
    return queued
  }
}
