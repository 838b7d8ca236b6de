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
 * The statuses of one object for several named reconcilers (cilium's StatusSet). Immutable: `set`
 * and `pending` return a new set. A set has an id of its own: a name it does not hold reads as
 * pending with that id, so a reconciler added later picks up every object, and a reconciler whose
 * write-back lost a race to another reconciler's can still tell "the same version, another
 * reconciler wrote" (the id unchanged) from "a newer version" (a writer made a new set or called
 * `pending`, which give a new id).
 */
export class StatusSet {
  private constructor(
    private readonly statuses: Readonly<Record<string, Status>>,
    /**
     * The status of a name the set lacks: pending, with the set's own id (the id of every name it
     * marks pending too) and the time the set was made pending. One per set, shared by its copies.
     */
    private readonly absent: Status,
  ) {
    Object.freeze(this)
  }

  /** A set that holds no name yet: every reconciler reads it as pending (cilium's NewStatusSet). */
  static empty(): StatusSet {
    return new StatusSet(EMPTY, statusPending())
  }

  /** A set with every name pending, under one fresh id. */
  static pending(names: readonly string[]): StatusSet {
    const s = statusPending()
    const out: Record<string, Status> = {}
    for (const n of names) out[n] = s
    return new StatusSet(out, s)
  }

  /**
   * A set from its JSON (`toJSON`: name -> status, as cilium's StatusSet marshals). It gets a fresh
   * id: ids only tell versions apart within one process.
   */
  static fromJSON(json: unknown): StatusSet {
    if (json === null || typeof json !== 'object' || Array.isArray(json))
      throw new UsageError(`StatusSet.fromJSON: want an object of name -> status, got ${Array.isArray(json) ? 'an array' : typeof json}`)
    const out: Record<string, Status> = {}
    for (const [name, v] of Object.entries(json as Record<string, unknown>)) out[name] = statusFromJSON(v, `StatusSet.fromJSON: "${name}"`)
    return new StatusSet(out, statusPending())
  }

  /** The status for `name` (pending, with the set's id, when the set lacks the name). */
  get(name: string): Status {
    return this.statuses[name] ?? this.absent
  }

  /** Whether the set holds a status for `name`. */
  has(name: string): boolean {
    return Object.hasOwn(this.statuses, name)
  }

  /** A copy with `name` set to `status` (the set keeps its id). */
  set(name: string, status: Status): StatusSet {
    return new StatusSet({ ...this.statuses, [name]: status }, this.absent)
  }

  /** A copy with every name marked pending again under a new id (a writer's change to the object). */
  pending(): StatusSet {
    return StatusSet.pending(Object.keys(this.statuses))
  }

  /** The names the set holds, sorted. */
  names(): string[] {
    return Object.keys(this.statuses).sort()
  }

  /** @internal The names the set holds, in no particular order (the index's key function). */
  heldNames(): string[] {
    return Object.keys(this.statuses)
  }

  toJSON(): Record<string, Status> {
    return this.statuses
  }

  toString(): string {
    const names = this.names()
    if (names.length === 0) return 'pending'
    return names.map((n) => `${n}: ${showStatus(this.statuses[n]!)}`).join(', ')
  }
}

const EMPTY: Readonly<Record<string, Status>> = Object.freeze({})
const KINDS: readonly StatusKind[] = ['pending', 'refreshing', 'done', 'error']

/** A status from its JSON; a bad one is a UsageError naming `where` and the field. */
export function statusFromJSON(v: unknown, where = 'status'): Status {
  const o = v as Partial<Status> | null
  if (o === null || typeof o !== 'object') throw new UsageError(`${where}: want a status object, got ${o === null ? 'null' : typeof o}`)
  if (!KINDS.includes(o.kind as StatusKind))
    throw new UsageError(`${where}: kind must be one of ${KINDS.join(', ')}, got ${JSON.stringify(o.kind)}`)
  if (typeof o.updatedAt !== 'number' || !Number.isFinite(o.updatedAt))
    throw new UsageError(`${where}: updatedAt must be epoch ms (a number), got ${JSON.stringify(o.updatedAt)}`)
  if (o.error !== undefined && typeof o.error !== 'string') throw new UsageError(`${where}: error must be a string`)
  // A fresh id: an id read back from elsewhere could collide with one this process handed out.
  const s: Status = { kind: o.kind!, updatedAt: o.updatedAt, id: nextStatusId() }
  return o.error === undefined ? s : { ...s, error: o.error }
}

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
  /**
   * For a status set: the reconciler names the index keys every object under, whether its set
   * holds them or not (a name a set lacks reads as pending). Undefined: only the names a set holds.
   */
  readonly names: readonly string[] | undefined
  /** For a status set: how to read an object's set (for names the index does not key). */
  readonly getSet: ((obj: Obj) => StatusSet) | undefined
  /** For a single status: how to read it. */
  readonly getStatus: ((obj: Obj) => Status) | undefined

  constructor(
    opts: IndexOptions<Obj, string>,
    isSet: boolean,
    read: { getStatus: (obj: Obj) => Status } | { names?: readonly string[]; getSet: (obj: Obj) => StatusSet },
  ) {
    super(opts)
    this.isSet = isSet
    this.names = 'getSet' in read ? read.names : undefined
    this.getSet = 'getSet' in read ? read.getSet : undefined
    this.getStatus = 'getStatus' in read ? read.getStatus : undefined
  }

  /** The status of `obj` this index keys (for a status set: of the reconciler `name`). */
  statusOf(obj: Obj, name?: string): Status {
    return this.getSet !== undefined ? this.getSet(obj).get(name!) : this.getStatus!(obj)
  }

  /** The objects with status `kind` (for a status set: of the reconciler `name`). */
  kind(kind: StatusKind, name?: string): Query<Obj> {
    if (this.isSet) {
      if (name === undefined) throw new UsageError(`status index "${this.name}" covers a status set: give the reconciler name`)
      return this.query(name + KIND_SEPARATOR + kind)
    }
    return this.query(kind)
  }

  /** Whether `kind(k, name)` finds every object whose status for `name` is k (see `names`). */
  covers(name: string | undefined): boolean {
    return !this.isSet || (this.names !== undefined && this.names.includes(name!))
  }
}

/** The status index of a table whose objects carry one status. Default index name: "status". */
export function newStatusIndex<Obj>(getStatus: (obj: Obj) => Status, name = 'status'): StatusIndex<Obj> {
  return new StatusIndex<Obj>({ name, key: (obj) => getStatus(obj).kind }, false, { getStatus })
}

export interface StatusSetIndexOptions {
  /** Index name (default "status"). */
  name?: string
  /**
   * The reconcilers on the table. Every object is keyed under each of them, held in its set or not
   * (a lacking name reads as pending), so waiting on one reconciler is one query. Without it, an
   * object whose set lacks a name is found by a scan (waitForReconciliation still sees it).
   */
  names?: readonly string[]
}

/** The status index of a table whose objects carry a StatusSet. */
export function newStatusSetIndex<Obj>(getSet: (obj: Obj) => StatusSet, opts: string | StatusSetIndexOptions = {}): StatusIndex<Obj> {
  const { name = 'status', names } = typeof opts === 'string' ? { name: opts } : opts
  if (names !== undefined) {
    for (const n of names)
      if (typeof n !== 'string' || n === '')
        throw new UsageError(`newStatusSetIndex "${name}": names must be non-empty strings, got ${JSON.stringify(n)}`)
  }
  const declared = names === undefined ? undefined : [...new Set(names)]
  return new StatusIndex<Obj>(
    {
      name,
      keys: (obj) => {
        const set = getSet(obj)
        const held = set.heldNames()
        const keys = held.map((n) => n + KIND_SEPARATOR + set.get(n).kind)
        if (declared !== undefined) for (const n of declared) if (!set.has(n)) keys.push(n + KIND_SEPARATOR + set.get(n).kind)
        return keys
      },
    },
    true,
    { names: declared, getSet },
  )
}
