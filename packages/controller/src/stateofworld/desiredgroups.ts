// The derived objects of a StateOfWorldController, by group: a run declares a group's whole set and
// it replaces the group's previous set in the Manager's desired table.
// Invariants:
// - A group a run does not mention keeps its set; a key a group no longer declares is deleted from
//   the desired table (and so, by the Manager's reconciler, from the cluster).
// - An object equal to the stored one (object and cluster) is not written: stable resourceVersions,
//   also across restarts.
// - `has(key)` is true for every key some group holds: what the controller waits for and re-runs on.
import type { DB } from '@statewright/statedb'
import type { DesiredObject, DesiredTable } from '@statewright/k8s'
import { desiredEquals } from '../manager/desired.ts'

export class DesiredGroups {
  /** group -> the keys of its set. */
  private readonly groups = new Map<string, Set<string>>()
  /** Every key some group holds. */
  private readonly mine = new Set<string>()

  has(key: string): boolean {
    return this.mine.has(key)
  }

  /** Replaces each group's set by `want`'s, in one write; `wrote` counts each object written or deleted. */
  async replace(db: DB, desired: DesiredTable, want: Map<string, Map<string, DesiredObject>>, wrote: () => void): Promise<void> {
    await db.write(desired.table, (w) => {
      for (const [group, set] of want) {
        const before = this.groups.get(group) ?? new Set<string>()
        for (const key of before) {
          if (set.has(key)) continue
          const cur = desired.table.get(w, desired.byKey.query(key))
          if (cur) {
            desired.table.delete(w, cur)
            wrote()
          }
          this.mine.delete(key)
        }
        for (const [key, d] of set) {
          const cur = desired.table.get(w, desired.byKey.query(key))
          if (!cur || !desiredEquals(cur, d)) {
            desired.table.insert(w, d)
            wrote()
          }
          this.mine.add(key)
        }
        this.groups.set(group, new Set(set.keys()))
      }
    })
  }
}
