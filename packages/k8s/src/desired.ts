// The desired state a Target drives clusters towards: a statedb table of desired objects, one row per
// object of one cluster, with the reconciler's status.
// Invariants: an object's identity (objectKey) is cluster, group, kind, namespace and name (not the
// version: the same object served at two versions is one row); a row that names no cluster belongs to
// the target's first cluster and is keyed under cluster "".
import { newStatusIndex, statusPending, type Status, type StatusIndex } from '@statewright/reconciler'
import { Table, defineIndex, type Index, type SpanContextLike } from '@statewright/statedb'
import { groupOf, type KubeObject } from './gvk.ts'

/** One desired object of one cluster, with the reconciler's status. */
export interface DesiredObject {
  /** The cluster's name (a key of the target's clusters); absent: the target's first cluster. */
  readonly cluster?: string
  readonly object: KubeObject
  readonly status: Status
  /**
   * The span of the run that wanted it (OpenTelemetry's span context; traced only): its apply is that
   * span's child. Not part of what is desired (two rows that differ only here are the same).
   */
  readonly cause?: SpanContextLike
}

/** The identity of a desired (or observed) object: cluster, group, kind, namespace, name. */
export function objectKey(cluster: string, obj: KubeObject): string {
  const m = obj.metadata
  return `${cluster}|${groupOf(obj.apiVersion)}|${obj.kind}|${m.namespace ?? ''}|${m.name}`
}

export interface DesiredTable {
  table: Table<DesiredObject>
  /** Primary index: objectKey (cluster "" when the object names none). */
  byKey: Index<DesiredObject, string>
  statusIndex: StatusIndex<DesiredObject>
  primaryKey: (d: DesiredObject) => string
}

/** A table of desired objects with its primary index and status index. */
export function newDesiredTable(name = 'desired'): DesiredTable {
  const primaryKey = (d: DesiredObject) => objectKey(d.cluster ?? '', d.object)
  const byKey = defineIndex<DesiredObject, string>({ name: 'key', key: primaryKey, unique: true })
  const statusIndex = newStatusIndex<DesiredObject>((d) => d.status)
  const table = new Table<DesiredObject>({ name, primary: byKey, indexes: [statusIndex] })
  return { table, byKey, statusIndex, primaryKey }
}

/** A desired object, pending. */
export function desired(object: KubeObject, cluster?: string): DesiredObject {
  return cluster === undefined ? { object, status: statusPending() } : { cluster, object, status: statusPending() }
}
