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

/** Puts the server's answer to our apply into the tables that reflect it (see the invariants). */
export async function sawOwnWrite(
  db: DB,
  watched: Iterable<{ kind: KindRef; table: Table<KubeObject>; options: WatchOptions; cluster: Cluster }>,
  currentSelector: (table: Table<KubeObject>) => string | undefined,
  obj: KubeObject,
  cluster: string,
): Promise<void> {
  const tables: Table<KubeObject>[] = []
  for (const w of watched) {
    const o = w.options
    if (w.cluster.name !== cluster || w.kind.kind !== obj.kind || groupOf(w.kind.apiVersion) !== groupOf(obj.apiVersion)) continue
    if (o.transform || o.fieldSelector) continue
    if (o.namespace && o.namespace !== obj.metadata.namespace) continue
    const selector = currentSelector(w.table) ?? o.labelSelector
    if (selector && selects(selector, obj.metadata.labels ?? {}) !== true) continue
    tables.push(w.table)
  }
  if (tables.length === 0) return
  const stored = stripManagedFields(structuredClone(obj))
  rememberCause(stored, causeOf(obj)) // the write's span (traced): a run it causes links to it
  if (obj.kind === 'Secret' && obj.apiVersion === 'v1') markSensitive(stored)
  await db.write(tables, (txn) => {
    for (const t of tables) {
      const cur = t.get(txn, t.primary.query(namespacedName(obj) as never))
      if (cur && !newerResourceVersion(stored.metadata.resourceVersion, cur.metadata.resourceVersion)) continue
      t.insert(txn, stored)
    }
  })
}
