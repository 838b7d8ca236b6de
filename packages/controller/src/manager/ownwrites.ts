// Reads that see our own writes: the server's answer to an apply goes into the Manager's tables that
// reflect that object at once, before its watch event, so a function that reads it through a join
// (a generated Secret read back to keep its password) never acts on its own stale write (the Java
// Operator SDK's temporary resource cache; controller-runtime#3320).
// Invariants:
// - An answer is written only into a table that would hold the object: same cluster, group and kind,
//   its namespace and label selector matching (a selector this file cannot read: not written), no
//   transform and no field selector; and only when the table holds no newer version of it.
// - It is stored as the reflector stores it: compacted (no managedFields), a core Secret marked
//   sensitive (never shown by inspection). The reflector writes no older version over it (its watch
//   events are dropped when the row is newer, reflector-rows.ts), and its later event is the same.
// - An answer is not written into a table that lacks the object while its reflector has already
//   written the state of the answer's version or a newer one (writtenResourceVersion): the object was
//   deleted since (its ADDED and DELETED may have come in one batch, before the answer went in), and
//   writing it would leave a row of an object the server no longer has, until the next relist.
import { causeOf, markSensitive, rememberCause, type DB, type Table } from '@statewright/statedb'
import {
  groupOf,
  namespacedName,
  newerResourceVersion,
  stripManagedFields,
  type Cluster,
  type KindRef,
  type KubeObject,
} from '@statewright/k8s'
import type { WatchOptions } from './options.ts'

/** Whether the label selector selects these labels; undefined when the selector is beyond its reading. */
export function selects(selector: string, labels: Record<string, string>): boolean | undefined {
  for (const raw of selector.split(/,(?![^(]*\))/)) {
    const term = raw.trim()
    if (term === '') continue
    let m: RegExpExecArray | null
    if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(term))) {
      const has = labels[m[1]!] === m[3]
      if (m[2] === '!=' ? has : !has) return false
    } else if ((m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term))) {
      const values = m[3]!.split(',').map((v) => v.trim())
      const v = labels[m[1]!]
      const inside = v !== undefined && values.includes(v)
      if (m[2] === 'in' ? !inside : inside) return false
    } else if ((m = /^(!?)([\w./-]+)$/.exec(term))) {
      if ((m[1] === '!') === m[2]! in labels) return false
    } else return undefined
  }
  return true
}

type Watched = { kind: KindRef; table: Table<KubeObject>; options: WatchOptions; cluster: Cluster }

/** How long answers gather before they go in (a reflector batches its watch events as long: batchDelayMs). */
export const OWN_WRITES_DELAY_MS = 10
/** Answers that go in at once, whatever the delay (a reflector's batchSize). */
const OWN_WRITES_BATCH = 1000

/**
 * Puts the server's answers to our writes into the tables that reflect them (see the invariants).
 * Answers gather for OWN_WRITES_DELAY_MS and go in one transaction, as a reflector's watch events do:
 * a hundred status writes answered one after the other are one change for what reads the tables (a
 * state-of-world controller rebuilds its view once, not a hundred times: one transaction per answer
 * made its policy bench 6x slower).
 */
export class OwnWrites {
  private queue: Array<{ obj: KubeObject; cluster: string }> = []
  private flushing: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined
  private release: (() => void) | undefined

  constructor(
    private readonly db: DB,
    private readonly watched: () => Iterable<Watched>,
    private readonly currentSelector: (table: Table<KubeObject>) => string | undefined,
    /** The newest resourceVersion whose state the table's reflector has written (see the invariants). */
    private readonly writtenVersion: (table: Table<KubeObject>) => string | undefined,
    private readonly delayMs = OWN_WRITES_DELAY_MS,
  ) {}

  /** Resolves once the answer is in its tables (or it has none). */
  saw(obj: KubeObject, cluster: string): Promise<void> {
    this.queue.push({ obj, cluster })
    const p = (this.flushing ??= new Promise<void>((r) => {
      this.release = r
      this.timer = setTimeout(r, this.delayMs)
    }).then(() => this.flush()))
    if (this.queue.length >= OWN_WRITES_BATCH) this.release?.()
    return p
  }

  private async flush(): Promise<void> {
    clearTimeout(this.timer)
    this.flushing = this.release = undefined // answers from here on go in the next transaction
    const writes: Array<{ tables: Table<KubeObject>[]; stored: KubeObject }> = []
    const all = new Set<Table<KubeObject>>()
    for (const { obj, cluster } of this.queue.splice(0)) {
      const tables = this.tablesOf(obj, cluster)
      if (tables.length === 0) continue
      const stored = stripManagedFields(structuredClone(obj))
      rememberCause(stored, causeOf(obj)) // the write's span (traced): a run it causes links to it
      if (obj.kind === 'Secret' && obj.apiVersion === 'v1') markSensitive(stored)
      writes.push({ tables, stored })
      for (const t of tables) all.add(t)
    }
    if (writes.length === 0) return
    await this.db.write([...all], (txn) => {
      for (const { tables, stored } of writes)
        for (const t of tables) {
          const cur = t.get(txn, t.primary.query(namespacedName(stored) as never))
          const rv = stored.metadata.resourceVersion
          if (cur && !newerResourceVersion(rv, cur.metadata.resourceVersion)) continue
          if (!cur && rv !== undefined) {
            const written = this.writtenVersion(t)
            if (written === rv || newerResourceVersion(written, rv)) continue // deleted since
          }
          t.insert(txn, stored)
        }
    })
  }

  private tablesOf(obj: KubeObject, cluster: string): Table<KubeObject>[] {
    const tables: Table<KubeObject>[] = []
    for (const w of this.watched()) {
      const o = w.options
      if (w.cluster.name !== cluster || w.kind.kind !== obj.kind || groupOf(w.kind.apiVersion) !== groupOf(obj.apiVersion)) continue
      if (o.transform || o.fieldSelector) continue
      if (o.namespace && o.namespace !== obj.metadata.namespace) continue
      const selector = this.currentSelector(w.table) ?? o.labelSelector
      if (selector && selects(selector, obj.metadata.labels ?? {}) !== true) continue
      tables.push(w.table)
    }
    return tables
  }
}
