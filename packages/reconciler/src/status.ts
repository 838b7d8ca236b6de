// Reconciliation status: what a reconciler knows about one object, stored in the object itself.
//
// Invariants:
// - a Status is immutable (frozen in validation mode, never mutated by this package);
// - every Status made by a constructor carries a fresh `id`: a writer that marks an object pending
//   gives it an id no earlier write of that object had, which is how a reconciler tells "my own
//   pending mark, untouched" from "a newer pending mark" when its compare-and-swap fails;
// - a reconciler acts on `pending` and `refreshing` only: its own write-backs (`done`, `error`)
//   never retrigger it.
//
// `updatedAt` is epoch milliseconds (a number, not a Date: one object per status is the main cost
// of a status, and the reconciler writes one per object per round).

import { UsageError } from './errors.ts'
import { Index, Query, type IndexOptions } from '@statewright/statedb'

export type StatusKind = 'pending' | 'refreshing' | 'done' | 'error'

export interface Status {
  readonly kind: StatusKind
  /** When the status was made, epoch ms. */
  readonly updatedAt: number
  /** The failure, for `error`. */
  readonly error?: string
  /** Unique per constructed status (see the invariants above). */
  readonly id: number
}

let lastId = 0
/** A fresh status id. Ids only grow within a process. */
export function nextStatusId(): number {
  return ++lastId
}

/** Marks an object as wanting reconciliation. Call it for every write: each call gives a new id. */
export function statusPending(): Status {
  return { kind: 'pending', updatedAt: Date.now(), id: ++lastId }
}

/** Marks a done object for another Update (refresh); written by the reconciler itself. */
export function statusRefreshing(): Status {
  return { kind: 'refreshing', updatedAt: Date.now(), id: ++lastId }
}

/** Reconciled. The reconciler shares one done status among the objects of a round. */
export function statusDone(): Status {
  return { kind: 'done', updatedAt: Date.now(), id: ++lastId }
}

/** Failed with `err` (an Error's message, or the value as text). */
export function statusError(err: unknown): Status {
  return { kind: 'error', updatedAt: Date.now(), error: errorMessage(err), id: ++lastId }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name
  return String(err)
}

/** Whether the reconciler should act on an object with this status. */
export function wantsReconcile(s: Status | undefined): boolean {
  return s !== undefined && (s.kind === 'pending' || s.kind === 'refreshing')
}

export function showStatus(s: Status): string {
  const age = Math.max(0, Date.now() - s.updatedAt)
  return s.kind === 'error' ? `error (${age} ms ago): ${s.error}` : `${s.kind} (${age} ms ago)`
}

// ---- status sets: several reconcilers on one table ----

/**
 * The statuses of one object for several named reconcilers. Immutable: `set` and `pending` return a
 * new set. A name the set does not hold reads as pending (id 0), so a reconciler added later picks
 * up every object.
 */
export class StatusSet {
  private constructor(private readonly statuses: Readonly<Record<string, Status>>) {
    Object.freeze(this)
  }

  /** A set with every name pending (one fresh id shared by the names: they are distinct statuses). */
  static pending(names: readonly string[]): StatusSet {
    const s = statusPending()
    const out: Record<string, Status> = {}
    for (const n of names) out[n] = s
    return new StatusSet(out)
  }

  /** The status for `name` (pending with id 0 when absent). */
  get(name: string): Status {
    return this.statuses[name] ?? ABSENT
  }

  /** A copy with `name` set to `status`. */
  set(name: string, status: Status): StatusSet {
    return new StatusSet({ ...this.statuses, [name]: status })
  }

  /** A copy with every name marked pending again (a writer's change to the object). */
  pending(): StatusSet {
    return StatusSet.pending(Object.keys(this.statuses))
  }

  names(): string[] {
    return Object.keys(this.statuses)
  }

  toJSON(): Record<string, Status> {
    return this.statuses
  }

  toString(): string {
    return Object.entries(this.statuses)
      .map(([n, s]) => `${n}: ${showStatus(s)}`)
      .join(', ')
  }
}

const ABSENT: Status = Object.freeze({ kind: 'pending', updatedAt: 0, id: 0 })

// ---- the status index ----

const KIND_SEPARATOR = ':'

/**
 * A non-unique index by status kind, ready to add to a table. For a single status the key is the
 * kind ("pending"); for a status set it is "name:kind", so each reconciler's view is one query.
 * `kind(kind, name?)` builds the query (for a status set, of the reconciler `name`).
 */
export class StatusIndex<Obj> extends Index<Obj, string> {
  /** Set when the index covers a status set. */
  readonly isSet: boolean

  constructor(opts: IndexOptions<Obj, string>, isSet: boolean) {
    super(opts)
    this.isSet = isSet
  }

  /** The objects with status `kind` (for a status set: of the reconciler `name`). */
  kind(kind: StatusKind, name?: string): Query<Obj> {
    if (this.isSet) {
      if (name === undefined) throw new UsageError(`status index "${this.name}" covers a status set: give the reconciler name`)
      return this.query(name + KIND_SEPARATOR + kind)
    }
    return this.query(kind)
  }
}

/** The status index of a table whose objects carry one status. Default index name: "status". */
export function newStatusIndex<Obj>(getStatus: (obj: Obj) => Status, name = 'status'): StatusIndex<Obj> {
  return new StatusIndex<Obj>({ name, key: (obj) => getStatus(obj).kind }, false)
}

/** The status index of a table whose objects carry a StatusSet. Default index name: "status". */
export function newStatusSetIndex<Obj>(getSet: (obj: Obj) => StatusSet, name = 'status'): StatusIndex<Obj> {
  return new StatusIndex<Obj>(
    {
      name,
      keys: (obj) => {
        const set = getSet(obj)
        return set.names().map((n) => n + KIND_SEPARATOR + set.get(n).kind)
      },
    },
    true,
  )
}
