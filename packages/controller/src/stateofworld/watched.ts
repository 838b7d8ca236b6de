// The kinds a StateOfWorldController watches. A kind is either reflected incrementally (list+watch
// into a Manager table) or, in 'stateOfWorld' mode, listed again before every run into a table of
// its own.
// Invariants:
// - A relist writes, each kind in one transaction, only what changed (by resourceVersion), and
//   deletes what is no longer listed.
// - The first list is retried with backoff (100 ms doubling to 30 s) until it succeeds or the
//   controller stops: nothing runs before every watched kind is synced.
import { setTimeout as sleep } from 'node:timers/promises'
import { Table, backoffDelay, defineIndex, resolveRetry, type DB, type RetryOptions } from '@statewright/statedb'
import { listAll, namespacedName, resolveKind, type Cluster, type KindRef, type KubeObject } from '@statewright/k8s'
import type { Logger } from '@statewright/statedb'
import type { WatchOptions } from '../manager/options.ts'
import type { ResourceEvent } from './reconcile.ts'

export interface WatchSpec extends Omit<WatchOptions, 'name'> {
  kind: KindRef
  /** Table name (default: the Manager's name for the kind). */
  table?: string
  /** 'incremental' (default): list+watch into the table. 'stateOfWorld': listed again before every run. */
  mode?: 'incremental' | 'stateOfWorld'
  /** Which changes are events (the table keeps every object). */
  predicate?: (e: ResourceEvent) => boolean
}

/** A watched kind: its spec, its table and the cluster it is watched in. */
export interface WatchedKind {
  spec: WatchSpec
  table: Table<KubeObject>
  cluster: Cluster
}

/** The table of a 'stateOfWorld' kind, keyed by namespace/name like a reflector's. */
export function newListedTable(db: DB, name: string): Table<KubeObject> {
  const t = new Table<KubeObject>({ name, primary: defineIndex({ name: 'name', key: namespacedName, unique: true }) })
  db.register(t)
  return t
}

/** Lists the stateOfWorld kinds (by kind name) and writes what changed (by resourceVersion) in one txn per kind. */
export async function relist(db: DB, kinds: ReadonlyMap<string, WatchedKind>, signal: AbortSignal): Promise<void> {
  for (const { spec, table, cluster } of kinds.values()) {
    if (spec.mode !== 'stateOfWorld') continue
    const ref = await resolveKind(cluster, spec.kind)
    const { items } = await listAll(cluster, ref, {
      ...(spec.namespace ? { namespace: spec.namespace } : {}),
      ...(spec.labelSelector ? { labelSelector: spec.labelSelector } : {}),
      ...(spec.fieldSelector ? { fieldSelector: spec.fieldSelector } : {}),
      signal,
    })
    const objs = items.flatMap((i) => {
      const x = spec.transform ? spec.transform(i) : i
      return x ? (Array.isArray(x) ? x : [x]) : []
    })
    await db.write(table, (w) => {
      const keep = new Set<string>()
      for (const obj of objs) {
        keep.add(namespacedName(obj))
        const cur = table.get(w, table.primary.query(namespacedName(obj) as never))
        if (!cur || cur.metadata.resourceVersion !== obj.metadata.resourceVersion) table.insert(w, obj)
      }
      for (const cur of table.all(w).toArray()) if (!keep.has(namespacedName(cur))) table.delete(w, cur)
    })
  }
}

/** relist until it succeeds (or the signal aborts), backing off between failures. */
export async function relistUntilDone(
  db: DB,
  kinds: ReadonlyMap<string, WatchedKind>,
  log: Logger,
  signal: AbortSignal,
  retry?: RetryOptions,
): Promise<void> {
  const r = resolveRetry(retry)
  for (let attempt = 0; !signal.aborted; attempt++) {
    try {
      await relist(db, kinds, signal)
      return
    } catch (err) {
      if (signal.aborted) return
      log.warn({ err: (err as Error).message }, 'listing state-of-world kinds failed; retrying')
      await sleep(backoffDelay(attempt + 1, r), undefined, { signal }).catch(() => {})
    }
  }
}
