// The events a state-of-world run receives: changes of watched objects, coalesced per object since the
// last run taken.
// Invariants:
// - per object at most one event: create + update = create (newest object), create + delete =
//   nothing, update + update = update (oldest old, newest new), update + delete = delete (oldest),
//   delete + create = update;
// - a delete of an object never seen (inserted and deleted between two reads) is no event;
// - a predicate decides which changes are events; the last seen object is kept either way, so `old`
//   is the previous version even when the change in between was filtered out;
// - events given back (a failed run) come before those that arrived meanwhile, and merge with them.
import { namespacedName, type KubeObject } from '@statewright/k8s'
import type { ResourceEvent } from './reconcile.ts'

export class PendingEvents {
  private readonly pending = new Map<string, ResourceEvent>()
  private readonly lastSeen = new Map<string, KubeObject>()

  get size(): number {
    return this.pending.size
  }

  /** Forgets everything (a new term starts from the state of the world). */
  reset(): void {
    this.pending.clear()
    this.lastSeen.clear()
  }

  /** A change of a watched object. */
  add(kind: string, group: string, obj: KubeObject, deleted: boolean, predicate?: (e: ResourceEvent) => boolean): void {
    const key = `${kind}|${namespacedName(obj)}`
    const old = this.lastSeen.get(key)
    // a delete of an object never seen (written and deleted between two reads) is no event
    if (deleted && old === undefined) return
    if (deleted) this.lastSeen.delete(key)
    else this.lastSeen.set(key, obj)
    const e: ResourceEvent = deleted
      ? { kind, group, type: 'delete', old: old! }
      : old
        ? { kind, group, type: 'update', old, new: obj }
        : { kind, group, type: 'create', new: obj }
    if (predicate && !predicate(e)) return
    this.merge(key, e)
  }

  /** The events so far, in arrival order; the queue is empty after. */
  take(): ResourceEvent[] {
    const out = [...this.pending.values()]
    this.pending.clear()
    return out
  }

  /** Gives back the events of a failed run: they go first, merged with what arrived since. */
  restore(events: readonly ResourceEvent[]): void {
    const later = [...this.pending.entries()]
    this.pending.clear()
    for (const e of events) this.pending.set(`${e.kind}|${namespacedName((e.new ?? e.old)!)}`, e)
    for (const [k, e] of later) this.merge(k, e)
  }

  private merge(key: string, e: ResourceEvent): void {
    const prev = this.pending.get(key)
    if (!prev) {
      this.pending.set(key, e)
      return
    }
    if (prev.type === 'create' && e.type === 'delete') {
      this.pending.delete(key)
      return
    }
    const type = prev.type === 'create' ? 'create' : e.type === 'delete' ? 'delete' : 'update'
    this.pending.set(key, {
      kind: e.kind,
      group: e.group,
      type,
      ...(prev.old && type !== 'create' ? { old: prev.old } : {}),
      ...(e.new && type !== 'delete' ? { new: e.new } : {}),
    })
  }
}
