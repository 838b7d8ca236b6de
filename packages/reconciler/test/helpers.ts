// Test helpers: a table of small objects and an in-memory target whose faults tests control.
import { DB, Table, defineIndex } from '@statewright/statedb'
import { Reconciler, newStatusIndex, statusPending, type Operations, type ReconcilerConfig, type Status } from '@statewright/reconciler'

export interface Obj {
  readonly id: string
  readonly value: number
  readonly status: Status
  /** Set by the target's update on the clone: what reconciliation produced. */
  readonly realizedAt?: number
}

export const byId = defineIndex<Obj, string>({ name: 'id', key: (o) => o.id, unique: true })

export interface TargetEvent {
  op: 'update' | 'delete' | 'prune'
  id: string
  value?: number
  ok: boolean
}

/** An in-memory target: a map id -> value, with faults the test sets. */
export class FakeTarget {
  readonly state = new Map<string, number>()
  readonly log: TargetEvent[] = []
  failUpdate: (o: Obj) => unknown = () => undefined
  failDelete: (o: Obj) => unknown = () => undefined
  failPrune: () => unknown = () => undefined
  delay: (o: Obj) => number = () => 0
  /** Called first in update and delete; the operation waits for the promise it returns. */
  hold: (op: 'update' | 'delete', o: Obj) => Promise<void> | undefined = () => undefined
  pruned: string[] = []

  count(op: TargetEvent['op'], id?: string, ok?: boolean): number {
    return this.log.filter((e) => e.op === op && (id === undefined || e.id === id) && (ok === undefined || e.ok === ok)).length
  }

  readonly ops: Operations<Obj> = {
    update: async (o, ctx) => {
      await this.hold('update', o)
      const d = this.delay(o)
      if (d > 0) await sleep(d, ctx.signal)
      const err = this.failUpdate(o)
      if (err) {
        this.log.push({ op: 'update', id: o.id, value: o.value, ok: false })
        throw err instanceof Error ? err : new Error(String(err))
      }
      const changed = this.state.get(o.id) !== o.value
      this.state.set(o.id, o.value)
      ;(o as { realizedAt?: number }).realizedAt = o.value
      this.log.push({ op: 'update', id: o.id, value: o.value, ok: true })
      return changed
    },
    delete: async (o, ctx) => {
      await this.hold('delete', o)
      const d = this.delay(o)
      if (d > 0) await sleep(d, ctx.signal)
      const err = this.failDelete(o)
      if (err) {
        this.log.push({ op: 'delete', id: o.id, ok: false })
        throw err instanceof Error ? err : new Error(String(err))
      }
      this.state.delete(o.id)
      this.log.push({ op: 'delete', id: o.id, ok: true })
    },
    prune: (desired) => {
      const err = this.failPrune()
      if (err) {
        this.log.push({ op: 'prune', id: '', ok: false })
        throw err instanceof Error ? err : new Error(String(err))
      }
      const want = new Set<string>()
      for (const o of desired) want.add(o.id)
      for (const id of [...this.state.keys()]) {
        if (!want.has(id)) {
          this.state.delete(id)
          this.pruned.push(id)
        }
      }
      this.log.push({ op: 'prune', id: '', ok: true })
    },
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(t)
      reject(signal!.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

export function makeTable(name = 'objs') {
  const statusIndex = newStatusIndex<Obj>((o) => o.status)
  const table = new Table<Obj>({ name, primary: byId, indexes: [statusIndex] })
  const db = new DB({ tables: [table] })
  return { db, table, statusIndex }
}

export type Setup = ReturnType<typeof makeTable> & {
  target: FakeTarget
  rec: Reconciler<Obj>
  insert(id: string, value: number): Promise<number>
  remove(id: string): Promise<number>
}

/** A table, a target and a (not yet started) reconciler with small backoffs. */
export function setup(over: Partial<ReconcilerConfig<Obj>> = {}, target = new FakeTarget()): Setup {
  const t = makeTable()
  const rec = new Reconciler<Obj>({
    db: t.db,
    table: t.table,
    statusIndex: t.statusIndex,
    getObjectStatus: (o) => o.status,
    setObjectStatus: (o, status) => {
      ;(o as { status: Status }).status = status
      return o
    },
    operations: target.ops,
    retry: { minMs: 5, maxMs: 40, jitter: 0 },
    ...over,
  })
  const insert = async (id: string, value: number) => {
    const txn = await t.db.writeTxn(t.table)
    t.table.insert(txn, { id, value, status: statusPending() })
    return t.table.revision(txn.commit())
  }
  const remove = async (id: string) => {
    const txn = await t.db.writeTxn(t.table)
    t.table.delete(txn, { id } as Obj)
    return t.table.revision(txn.commit())
  }
  return { ...t, target, rec, insert, remove }
}

/** A signal that aborts after ms (bounded waits in tests). */
export function within(ms: number): AbortSignal {
  return AbortSignal.timeout(ms)
}

/** Polls cond every few ms until true, or throws after ms. For conditions no watch covers. */
export async function until(cond: () => boolean, ms = 3000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(2)
  }
}

export interface Deferred<T = void> {
  promise: Promise<T>
  resolve: (v: T) => void
  reject: (e: unknown) => void
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((a, b) => {
    resolve = a
    reject = b
  })
  return { promise, resolve, reject }
}
