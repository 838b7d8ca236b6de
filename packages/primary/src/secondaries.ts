// The secondaries of a PrimaryController: what is observed of ours, by owner; which observed changes
// were our own writes and deletes; which foreign objects block which primaries. Writes and deletes
// go through the targets, always with the ownership check.
// Invariants:
// - An observed change is ours (nothing to repair) only when its version is the one our write
//   returned, or it is the delete of an object we deleted; any other change of one of ours re-marks
//   its owner (repair), and so does the removal or change of our stamp.
// - Only objects stamped with our owner kind are mapped to an owner, so only those are ever written
//   or deleted; a foreign object of a wanted name blocks its primary until it is gone.
// - What a primary may own is the union of what its syncs applied and what is observed with its
//   stamp: a secondary made by a sync whose result was lost is still found and deleted.
// - A failed write or delete keeps the secondary in what the primary owns (retried, never dropped).
import type { InvolvedObject } from './contract.ts'
import type { Change } from '@statewright/statedb'
import { ConfigError } from '@statewright/statedb'
import type { PrimaryControllerOptions, PrimaryControllerStats } from './options.ts'
import type { OwnerStamps, SecondaryTarget } from './contract.ts'
import type { OwnedRef } from './work.ts'

export class Secondaries {
  /** owner key -> id -> observed secondary (from the observed tables). */
  private readonly byOwner = new Map<string, Map<string, OwnedRef>>()
  /** id -> owner key, for what each observed secondary of ours belongs to. */
  private readonly ownerOfId = new Map<string, string>()
  /** id -> the version our last write returned, and the key it was written for. */
  private readonly lastWritten = new Map<string, { version: string; owner: string }>()
  /** ids we deleted (their delete events are ours). */
  private readonly deletedByUs = new Set<string>()
  /** foreign id -> primary keys waiting for it to go. */
  private readonly blockedBy = new Map<string, Set<string>>()
  /**
   * id -> the versions observed while our write of it was on its way: the observed table may show
   * our own write before the target's answer says which version it made. Judged when the answer
   * comes (`settleWrite`): any version but ours is another writer's, and its owner is repaired.
   */
  private readonly writing = new Map<string, Set<string | undefined>>()
  /** key -> what its last sync applied (kept here too: a row's write-back can lose a CAS race). */
  private readonly ownedByKey = new Map<string, readonly OwnedRef[]>()

  constructor(
    /** The controller's options: its secondaries (by index: OwnedRef.spec) and event sink. */
    private readonly options: Pick<PrimaryControllerOptions<unknown>, 'secondaries' | 'events'>,
    private readonly ownerKeyOf: (target: SecondaryTarget<any>, s: unknown) => string | undefined,
    /** The controller's stats (created, updated, deleted, garbage, foreign are counted here). */
    private readonly stats: PrimaryControllerStats,
    /** Marks an owner pending again (a change that was not ours, found after our write returned). */
    private readonly repairLater: (owner: string) => void = () => {},
  ) {}

  /**
   * Takes in changes of the observed table of secondaries[spec]. Returns the owners to mark pending
   * (changes that were not ours, foreign objects gone) and whether a secondary without a primary
   * was seen (`hasPrimary` on the snapshot the changes were read from).
   */
  observe(
    spec: number,
    changes: Iterable<Change<unknown>>,
    hasPrimary: (owner: string) => boolean,
  ): { repair: Set<string>; orphans: boolean } {
    const target = this.options.secondaries[spec]!.target
    const repair = new Set<string>()
    let orphans = false
    for (const c of changes) {
      let id: string
      try {
        id = target.id(c.object)
      } catch {
        continue
      }
      const owner = this.ownerKeyOf(target, c.object)
      const prevOwner = this.ownerOfId.get(id)
      if (c.deleted) {
        // the owner we knew, or the deleted object's own stamp (made and deleted between two reads,
        // it was never seen alive), or the key our last write of it was for (a deletion that does
        // not say what was deleted: a KV key's delete)
        const was = prevOwner ?? owner ?? this.lastWritten.get(id)?.owner
        if (was !== undefined) {
          this.byOwner.get(was)?.delete(id)
          this.ownerOfId.delete(id)
          if (this.deletedByUs.has(id)) this.deletedByUs.delete(id)
          else repair.add(was)
        }
        this.lastWritten.delete(id)
        const waiting = this.blockedBy.get(id)
        if (waiting) {
          this.blockedBy.delete(id)
          for (const k of waiting) repair.add(k)
        }
        continue
      }
      if (prevOwner !== undefined && prevOwner !== owner) {
        this.byOwner.get(prevOwner)?.delete(id)
        this.ownerOfId.delete(id)
        repair.add(prevOwner) // our stamp was removed or changed: the owner puts it back
      }
      if (owner === undefined) continue
      if (!hasPrimary(owner)) orphans = true
      let m = this.byOwner.get(owner)
      if (!m) this.byOwner.set(owner, (m = new Map()))
      m.set(id, { spec, object: c.object })
      this.ownerOfId.set(id, owner)
      const v = target.versionOf(c.object)
      const inFlight = this.writing.get(id)
      if (inFlight !== undefined)
        inFlight.add(v) // judged when our write returns
      else if (v === undefined || this.lastWritten.get(id)?.version !== v) repair.add(owner)
    }
    return { repair, orphans }
  }

  /** Awaits our write of `id`; then the versions observed meanwhile that are not ours repair `owner`. */
  private async settleWrite<R extends { version?: string }>(id: string, owner: string, apply: Promise<R>): Promise<R> {
    let version: string | undefined
    try {
      const r = await apply
      version = r.version
      if (version !== undefined) this.lastWritten.set(id, { version, owner })
      return r
    } finally {
      const seen = this.writing.get(id)
      this.writing.delete(id)
      if (seen !== undefined) for (const v of seen) if (v === undefined || v !== version) this.repairLater(owner)
    }
  }

  /**
   * Writes the secondaries a sync of `key` returned (stamped) and deletes those it owned and no
   * longer returns. `previous`: what the key's work row says it owned. Returns what it owns now,
   * whether anything was written, and the failures (none: all done).
   */
  async write(
    key: string,
    previous: readonly OwnedRef[],
    secondaries: readonly unknown[],
    stamps: OwnerStamps,
    involved: InvolvedObject,
    signal: AbortSignal,
  ): Promise<{ applied: OwnedRef[]; changed: boolean; failures: string[] }> {
    const events = this.options.events
    const applied: OwnedRef[] = []
    const appliedIds = new Set<string>()
    const failures: string[] = []
    let changed = false
    for (const s of secondaries) {
      let spec: number
      let stamped: unknown
      let target: SecondaryTarget<any>
      try {
        spec = this.specFor(this.kindOfAny(s))
        target = this.options.secondaries[spec]!.target
        stamped = target.withStamps(s, stamps)
      } catch (err) {
        failures.push((err as Error).message)
        continue
      }
      const id = target.id(stamped)
      const what = target.describe(stamped)
      appliedIds.add(id)
      this.writing.set(id, new Set())
      try {
        const r = await this.settleWrite(id, key, target.apply(stamped, this.ownedBy(key, target), signal))
        if (r.result === 'foreign') {
          this.stats.foreign++
          const msg = `Resource "${what}" already exists and is not managed by this controller`
          events?.warning(involved, 'ErrResourceExists', msg)
          let waiting = this.blockedBy.get(id)
          if (!waiting) this.blockedBy.set(id, (waiting = new Set()))
          waiting.add(key)
          failures.push(msg)
          continue
        }
        this.deletedByUs.delete(id) // a delete of ours whose event never came (already gone) is no longer pending
        applied.push({ spec, object: stamped })
        if (r.result === 'created' || r.result === 'updated') {
          changed = true
          this.stats[r.result]++
          events?.normal(involved, 'Synced', `"${what}" synced successfully (${r.result})`)
        }
      } catch (err) {
        failures.push(`${what}: ${(err as Error).message}`)
        // keep what we had for it: a failed write is retried, not deleted
        const prev = previous.find((o) => this.idOf(o) === id)
        if (prev) applied.push(prev)
      }
    }
    // secondaries this primary no longer returns: what it owned before and what is observed with its stamp
    for (const [id, o] of this.mayOwn(key, previous)) {
      if (appliedIds.has(id)) continue
      const target = this.options.secondaries[o.spec]!.target
      try {
        this.deletedByUs.add(id)
        if (await target.delete(o.object, this.ownedBy(key, target), signal)) {
          changed = true
          this.stats.deleted++
          events?.normal(involved, 'Synced', `"${target.describe(o.object)}" synced successfully (deleted)`)
        } else this.deletedByUs.delete(id)
      } catch (err) {
        this.deletedByUs.delete(id)
        failures.push(`${target.describe(o.object)}: delete failed: ${(err as Error).message}`)
        applied.push(o)
      }
    }
    this.ownedByKey.set(key, applied)
    return { applied, changed, failures }
  }

  /**
   * The primary `key` is gone: deletes what it may own and releases its waits on foreign objects.
   * Returns the failures; once there are none, what it applied is forgotten.
   */
  async removeAll(key: string, previous: readonly OwnedRef[], involved: InvolvedObject, signal: AbortSignal): Promise<string[]> {
    const failures: string[] = []
    for (const [, o] of this.mayOwn(key, previous)) {
      const target = this.options.secondaries[o.spec]!.target
      try {
        // not marked as our own delete: a primary made again meanwhile is re-marked by the deletion
        if (await target.delete(o.object, this.ownedBy(key, target), signal)) {
          this.stats.deleted++
          this.options.events?.normal(involved, 'Synced', `"${target.describe(o.object)}" synced successfully (deleted)`)
        }
      } catch (err) {
        failures.push(`${target.describe(o.object)}: ${(err as Error).message}`)
      }
    }
    for (const [id, keys] of this.blockedBy) {
      keys.delete(key)
      if (keys.size === 0) this.blockedBy.delete(id)
    }
    if (!failures.length) this.ownedByKey.delete(key)
    return failures
  }

  /**
   * GarbageSecondaries: deletes the observed secondaries whose owner is not `alive` (asked again
   * for each object). Returns how many were deleted, and the failures.
   */
  async garbage(alive: (owner: string) => boolean): Promise<{ deleted: number; failures: string[] }> {
    let deleted = 0
    const failures: string[] = []
    for (const [owner, objs] of [...this.byOwner]) {
      for (const [, o] of [...objs]) {
        // (Not marked as our own delete: should its primary appear while the delete is on its way,
        // the observed deletion re-marks it and the secondary is made again.)
        if (alive(owner)) break
        const target = this.options.secondaries[o.spec]!.target
        try {
          if (await target.delete(o.object, this.ownedBy(owner, target))) {
            deleted++
            this.stats.garbage++
          }
        } catch (err) {
          failures.push(`${target.describe(o.object)}: ${(err as Error).message}`)
        }
      }
    }
    return { deleted, failures }
  }

  /** What `key` may own, by id: what its syncs applied and what is observed with its stamp. */
  private mayOwn(key: string, previous: readonly OwnedRef[]): Map<string, OwnedRef> {
    const all = new Map<string, OwnedRef>()
    for (const o of [...previous, ...(this.ownedByKey.get(key) ?? [])]) all.set(this.idOf(o), o)
    for (const [id, o] of this.byOwner.get(key) ?? []) all.set(id, o)
    return all
  }

  private idOf(o: OwnedRef): string {
    return this.options.secondaries[o.spec]!.target.id(o.object)
  }

  private specFor(kind: string): number {
    const i = this.options.secondaries.findIndex((s) => s.kinds.includes(kind))
    if (i < 0)
      throw new ConfigError(
        `no secondary target takes kind "${kind}" (kinds: ${this.options.secondaries.flatMap((s) => s.kinds).join(', ')})`,
      )
    return i
  }

  private kindOfAny(s: unknown): string {
    for (const spec of this.options.secondaries) {
      try {
        const k = spec.target.kindOf(s)
        if (spec.kinds.includes(k)) return k
      } catch {
        /* not this target's shape */
      }
    }
    return this.options.secondaries[0]!.target.kindOf(s)
  }

  private ownedBy(key: string, target: SecondaryTarget<any>): (existing: unknown) => boolean {
    return (existing) => this.ownerKeyOf(target, existing) === key
  }
}
