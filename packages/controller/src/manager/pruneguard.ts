// What the Manager's prune may delete: never a child an owner may still want.
// Invariants:
// - An owner (an input of a derivation or reconcile step) is unsettled while its function has failed
//   with no success in this process: a restart, a new leader or a shard just taken. What it wanted
//   before is unknown, so its children stay (controller-runtime never deletes because a Reconcile
//   failed; here prune deletes what is not desired, so it must know what is not desired).
// - With no unsettled owner, every object of ours that is not desired may be pruned.
// - With some, an object may be pruned only when one of its owner references names a current
//   input whose function succeeded; an object naming an unsettled owner, or naming no current
//   input at all (a child of `derive` without owner references, one in another namespace or
//   cluster), is kept until every owner has settled. Keeping is logged once per object and owner.
// - The verdict is read at the prune's own snapshot (the one its desired set came from): an owner
//   that settles while the prune lists the cluster still has its children kept by this prune, as
//   its new children are not in that desired set. Without a snapshot, at the current one.
import { describe, type KubeObject } from '@statewright/k8s'
import type { DB, ReadTxn, Table } from '@statewright/statedb'
import type { Logger } from '@statewright/statedb'

/** An owner whose function has not succeeded in this process (its children are unknown). */
export interface UnsettledOwner {
  /** Its uid, when it is a Kubernetes object. */
  readonly uid: string | undefined
  /** How logs name it ("Database default/db-1"). */
  readonly name: string
}

/** Something whose outputs the Manager prunes: a derivation, a reconcile step. */
export interface PruneSource {
  /** Its owners that were unsettled in the snapshot `txn`. */
  unsettledOwners(txn: ReadTxn): Iterable<UnsettledOwner>
  /** The uids of its current inputs (settled or not). */
  ownerUids(txn: ReadTxn): Iterable<string>
}

interface Snapshot {
  txn: ReadTxn
  /** uid (or a name, for an input without one) -> how logs name the owner */
  unsettled: Map<string, string>
  settled: Set<string>
}

export class PruneGuard {
  private snapshot: Snapshot | undefined
  /** Objects whose keeping was logged, with the reason (logged again when the reason changes). */
  private readonly logged = new Map<string, string>()

  constructor(
    private readonly db: DB,
    private readonly sources: () => Iterable<PruneSource>,
    private readonly log: Logger,
  ) {}

  /** Whether prune may delete `obj` (an object of ours that is not desired). */
  prunable(obj: KubeObject, cluster: string, txn?: ReadTxn): boolean {
    const s = this.read(txn)
    const what = `${describe(obj)} (cluster ${cluster})`
    let reason: string | undefined
    if (s.unsettled.size > 0) {
      const uids: string[] = []
      for (const r of (obj.metadata.ownerReferences ?? []) as Array<{ uid?: string }>) if (r?.uid) uids.push(r.uid)
      const held = uids.find((u) => s.unsettled.has(u))
      if (held !== undefined) reason = `its owner ${s.unsettled.get(held)} has not reconciled successfully since this process started`
      else if (!uids.some((u) => s.settled.has(u)))
        reason = `${s.unsettled.size} owner(s) have not reconciled successfully since this process started (${[...s.unsettled.values()]
          .slice(0, 3)
          .join(', ')}) and it names none that has`
    }
    if (reason === undefined) {
      this.logged.delete(what)
      this.log.info({ object: what }, 'pruning: no longer desired')
      return true
    }
    if (this.logged.get(what) !== reason) {
      this.logged.set(what, reason)
      this.log.info({ object: what, reason }, 'prune keeps an object that is not desired')
    }
    return false
  }

  private read(at: ReadTxn | undefined): Snapshot {
    if (this.snapshot && (at === undefined || this.snapshot.txn === at)) return this.snapshot
    const txn = at ?? this.db.readTxn()
    const unsettled = new Map<string, string>()
    for (const src of this.sources()) for (const o of src.unsettledOwners(txn)) unsettled.set(o.uid ?? `\u0000${o.name}`, o.name)
    // the settled owners are asked for only while some are not (the common case reads no inputs)
    const settled = new Set<string>()
    if (unsettled.size === 0) this.logged.clear()
    else {
      for (const src of this.sources()) {
        for (const uid of src.ownerUids(txn)) if (!unsettled.has(uid)) settled.add(uid)
      }
    }
    this.snapshot = { txn, unsettled, settled }
    queueMicrotask(() => (this.snapshot = undefined))
    return this.snapshot
  }
}

/** A derivation's inputs as owners (derive's: its fn's failures are its inputs'). */
export function derivationOwners(d: {
  readonly name: string
  readonly from: ReadonlyArray<Table<any>>
  unsettled(txn: ReadTxn): Array<{ input: unknown; name: string }>
}): PruneSource {
  return {
    unsettledOwners: (txn) => d.unsettled(txn).map(({ input, name }) => ({ uid: uidOf(input), name: `${name} (derivation ${d.name})` })),
    *ownerUids(txn) {
      for (const t of d.from)
        for (const o of t.all(txn)) {
          const uid = uidOf(o)
          if (uid) yield uid
        }
    },
  }
}

/** The uid of an input, when it is a Kubernetes object. */
export function uidOf(input: unknown): string | undefined {
  const uid = (input as KubeObject | undefined)?.metadata?.uid
  return typeof uid === 'string' && uid !== '' ? uid : undefined
}
