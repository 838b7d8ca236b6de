// Derivations: an incremental function from tables to a table (cilium's "derive", with joins).
// Invariants:
// - `fn` runs only for inputs a change touches: an input written or deleted in a `from` table, an
//   input whose earlier run read (through ctx) an object of a `joins` table that changed, and an input
//   whose retry is due. Cost is proportional to the change.
// - Each input owns the outputs its last successful run produced; outputs it no longer produces are
//   deleted, and a deleted input's outputs go (an output two inputs produce stays while one does, and
//   is derived again from the one left).
//   An output equal to the stored one is not written again (no churn downstream).
// - A throwing `fn` (or an output `validate` refuses) is a per-object error: the input's previous
//   outputs stay, the error is in the errors table and in health, and the input is retried with
//   backoff. The derivation never stops on an error.
// - `to` is initialized once every `from` table is initialized and a round has derived from them.
// - Dependencies are recorded by the queries `fn` makes: (table, index=key) and the primary keys of
//   what the query returned, so an object that moves out of a query's key re-derives its readers too.
import { nextProgress } from './progress.ts'
import { ConfigError, InvalidObjectError, StoppedError, UsageError } from './errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  DB,
  Table,
  defineIndex,
  type ChangeIterator,
  type Key,
  type Query,
  type ReadTxn,
  type Txn,
  type Watch,
  type WriteTxn,
  waitAny,
} from '@statewright/statedb'
import type { Logger } from './logging.ts'
import { nullLogger } from './logging.ts'

export interface DeriveContext {
  /** The snapshot the derivation reads. Read joined tables through get/list so changes re-derive. */
  readonly txn: Txn
  /** One object of a joined table; the input is derived again when what this returns changes. */
  get<T>(table: Table<T>, q: Query<T>): T | undefined
  /** Objects of a joined table; the input is derived again when the result changes. */
  list<T>(table: Table<T>, q: Query<T>): T[]
}

export interface DeriveOptions<In, Out> {
  /** Names the derivation in health, errors, logs and `to`'s initializer (default "<from>-><to>"). */
  name?: string
  db: DB
  /** Input tables; `fn` runs once per input object. */
  from: Table<In> | ReadonlyArray<Table<In>>
  /** Tables `fn` reads through ctx.get/ctx.list (joins); their changes re-derive the readers. */
  joins?: ReadonlyArray<Table<any>>
  to: Table<Out>
  fn: (input: In, ctx: DeriveContext) => Out | readonly Out[] | undefined | null
  /** Refuses an output with a message (a per-object error naming the input), e.g. a missing name. */
  validate?: (out: Out, input: In) => string | undefined
  /** Whether a stored output needs no rewrite (default: equal JSON). */
  equals?: (stored: Out, next: Out) => boolean
  /** Backoff of failing inputs (default 100 ms doubling up to 30 s). */
  retry?: { minMs?: number; maxMs?: number }
  logger?: Logger
}

/** A failing input: a row of the derivation's errors table. */
export interface DerivationError {
  /** "<derivation>\u001f<input>" (unique; `derivation` and `input` are the readable parts) */
  readonly id: string
  readonly derivation: string
  /** The input: "<table> <primary key>". */
  readonly input: string
  readonly error: string
  readonly attempts: number
  /** Unix ms of the next try. */
  readonly retryAt: number
}

export interface DerivationHealth {
  level: 'ok' | 'degraded' | 'stopped'
  message: string
  /** `to` is initialized (every input table initialized and derived from) and the loop runs. */
  ready: boolean
  errors: number
  failing: DerivationError[]
}

const errorId = defineIndex<DerivationError, string>({ name: 'id', key: (e) => e.id, unique: true })
const errorTables = new WeakMap<DB, Table<DerivationError>>()
/** The errors table of a database's derivations (registered on first use; one per DB). */
export function derivationErrors(db: DB): Table<DerivationError> {
  let t = errorTables.get(db)
  if (!t) {
    t = new Table<DerivationError>({ name: 'derivation-errors', primary: errorId })
    db.register(t)
    errorTables.set(db, t)
  }
  return t
}

interface InputRef {
  table: number
  key: Key
}
/** Between a derivation's name and an input in an error row's id (names may contain "/"). */
const SEP = '\u001f'
const jsonEquals = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b)

export class Derivation<In, Out> {
  readonly name: string
  /** How many times fn ran (for tests and metrics). */
  runs = 0
  readonly errors: Table<DerivationError>
  private readonly o: DeriveOptions<In, Out>
  private readonly from: ReadonlyArray<Table<In>>
  private readonly joins: ReadonlyArray<Table<any>>
  private readonly equals: (a: Out, b: Out) => boolean
  private readonly log: Logger
  /** input id -> the output keys it produced. */
  private readonly outputs = new Map<string, Key[]>()
  /** input id -> where the input is (table, primary key), for inputs seen and not deleted. */
  private readonly refs = new Map<string, InputRef>()
  /** output key -> the inputs producing it. */
  private readonly producers = new Map<string, Set<string>>()
  /** "<join table>|<index>=<key>" or "<join table>|#<primary>" -> inputs that read it. */
  private readonly readers = new Map<string, Set<string>>()
  /** input id -> the dependency keys its last run recorded. */
  private readonly reads = new Map<string, string[]>()
  private readonly retries = new Map<string, { attempts: number; at: number }>()
  /** Indexes of each join table that some run queried. */
  private readonly queried = new Map<Table<any>, Set<string>>()
  private iters: ChangeIterator<any>[] = []
  private markInitialized: ((txn: WriteTxn) => void) | undefined
  private initialized = false
  private ctrl = new AbortController()
  private loop: Promise<void> | undefined
  /** Revision of each input and join table up to which changes are derived. */
  private readonly consumed = new Map<Table<any>, number>()
  private progress: Array<() => void> = []
  /** Inputs to derive again in the next round (they share an output another input gave up). */
  private readonly again = new Set<string>()
  /** Undo steps of the bookkeeping while a write transaction is open (see journaled). */
  private journal: Array<() => void> | undefined
  /** rederive() asked for every input to be derived again. */
  private everything = false
  private wake = new AbortController()

  constructor(o: DeriveOptions<In, Out>) {
    this.o = o
    this.from = Array.isArray(o.from) ? o.from : [o.from as Table<In>]
    if (this.from.length === 0) throw new ConfigError('derive: `from` needs at least one table')
    this.joins = o.joins ?? []
    this.name = o.name ?? `${this.from.map((t) => t.name).join('+')}->${o.to.name}`
    this.equals = o.equals ?? jsonEquals
    this.log = (o.logger ?? nullLogger).child({ derivation: this.name })
    this.errors = derivationErrors(o.db)
  }

  /**
   * Registers `to`'s initializer (once) and starts deriving. A stopped derivation may start again (a
   * new leadership term): it then derives every input again, and drops the outputs of inputs deleted
   * while it was stopped (a new change iterator does not see deletions from before it).
   */
  async start(): Promise<this> {
    if (this.loop) throw new UsageError(`derivation "${this.name}": already started`)
    const { db, to } = this.o
    if (this.ctrl.signal.aborted) {
      this.ctrl = new AbortController()
      this.everything = true
    }
    if (!this.markInitialized) {
      const w = await db.writeTxn(to)
      this.markInitialized = to.registerInitializer(w, `derive:${this.name}`)
      w.commit()
    }
    const txn = db.readTxn()
    this.iters = [...this.from, ...this.joins].map((t) => t.changes(txn))
    this.loop = this.run().finally(() => {
      for (const it of this.iters) it.close()
    })
    return this
  }

  async stop(): Promise<void> {
    this.ctrl.abort()
    await this.loop
    this.loop = undefined
    this.wakeWaiters()
  }

  get running(): boolean {
    return this.loop !== undefined && !this.ctrl.signal.aborted
  }

  /** Resolves once changes up to `txn` in every input and join table are derived (or rejects on stop/abort). */
  async waitFor(txn: ReadTxn, signal?: AbortSignal): Promise<void> {
    const want = [...this.from, ...this.joins].map((t) => [t, t.revision(txn)] as const)
    while (!want.every(([t, r]) => (this.consumed.get(t) ?? -1) >= r)) {
      if (!this.running) throw new StoppedError(`derivation "${this.name}" is not running`)
      signal?.throwIfAborted()
      await nextProgress(this.progress, signal)
    }
  }

  /** Derives every input again (what fn decides changed outside the tables: a shard acquired or released). */
  rederive(): void {
    this.everything = true
    this.wake.abort()
  }

  /** Inputs failing now (the rows of the errors table for this derivation). */
  failures(txn: ReadTxn = this.o.db.readTxn()): DerivationError[] {
    return this.errors.prefix(txn, errorId.query(`${this.name}${SEP}`)).toArray()
  }

  health(): DerivationHealth {
    const failing = this.failures()
    const ready = this.initialized && this.running
    const level = !this.running && this.loop === undefined && this.ctrl.signal.aborted ? 'stopped' : failing.length ? 'degraded' : 'ok'
    const message = failing.length
      ? `${failing.length} inputs failing: ${failing
          .slice(0, 3)
          .map((f) => `${f.input}: ${f.error}`)
          .join('; ')}`
      : `${this.outputs.size} inputs derived`
    return { level, message, ready, errors: failing.length, failing: failing.slice(0, 3) }
  }

  // ---- the loop ----

  private async run(): Promise<void> {
    const { db } = this.o
    const signal = this.ctrl.signal
    while (!signal.aborted) {
      if (this.wake.signal.aborted) this.wake = new AbortController()
      const txn = db.readTxn()
      const dirty = new Map<string, InputRef>()
      const watches: Watch[] = []
      if (this.everything) {
        this.everything = false
        this.from.forEach((t, i) => {
          for (const o of t.all(txn)) {
            const key = t.primary.keyOf(o)
            dirty.set(inputId(i, key), { table: i, key })
          }
        })
        for (const [id, ref] of this.refs) dirty.set(id, ref) // inputs already gone stay dirty too
      }
      this.iters.forEach((it, i) => {
        const [changes, w] = it.next(txn)
        watches.push(w)
        if (i < this.from.length) {
          const t = this.from[i]!
          for (const c of changes) {
            const key = t.primary.keyOf(c.object)
            dirty.set(inputId(i, key), { table: i, key })
          }
        } else {
          const t = this.joins[i - this.from.length]!
          for (const c of changes)
            for (const dep of this.depKeysOf(t, c.object))
              for (const id of this.readers.get(dep) ?? []) {
                const ref = this.refs.get(id)
                if (ref) dirty.set(id, ref)
              }
        }
      })
      for (const id of this.again) {
        const ref = this.refs.get(id)
        if (ref) dirty.set(id, ref)
      }
      this.again.clear()
      const now = Date.now()
      let nextRetry = Infinity
      for (const [id, r] of this.retries) {
        if (r.at <= now) {
          const ref = this.refs.get(id)
          if (ref) dirty.set(id, ref)
          else this.retries.delete(id)
        } else nextRetry = Math.min(nextRetry, r.at)
      }
      const inputsReady = this.from.every((t) => t.initialized(txn)[0])
      if (!inputsReady)
        for (const t of this.from) {
          const [ok, w] = t.initialized(txn)
          if (!ok) watches.push(w)
        }
      if (dirty.size || (inputsReady && !this.initialized)) {
        try {
          await this.derive(dirty, inputsReady)
        } catch (err) {
          // a statedb failure (not fn's): log, back off, and go on
          this.log.error({ err }, 'derivation round failed')
          await sleep(1000, undefined, { signal }).catch(() => {})
          continue
        }
      }
      // derived up to this snapshot, unless inputs sharing a given-up output still have to run again
      if (this.again.size === 0) {
        for (const t of [...this.from, ...this.joins]) this.consumed.set(t, t.revision(txn))
        this.wakeWaiters()
      }
      if (dirty.size) continue // writes of this round may have changed joined tables: look again
      // a pending retry keeps the process alive, as a timer would (AbortSignal.timeout's does not)
      const tick = new AbortController()
      const timer =
        nextRetry === Infinity ? undefined : setTimeout(() => tick.abort(), Math.max(1, Math.min(nextRetry - Date.now(), 2 ** 31 - 1)))
      try {
        await waitAny(watches, AbortSignal.any([signal, tick.signal, this.wake.signal]))
      } catch {
        if (signal.aborted) return
      } finally {
        clearTimeout(timer)
      }
    }
  }

  private wakeWaiters(): void {
    const p = this.progress
    this.progress = []
    for (const f of p) f()
  }

  private async derive(dirty: Map<string, InputRef>, inputsReady: boolean): Promise<void> {
    const { db, to } = this.o
    const initialize = (w: WriteTxn) => {
      if (!inputsReady || this.initialized) return
      this.markInitialized?.(w)
      this.initialized = true
      this.note(() => {
        this.initialized = false
      })
    }
    try {
      await this.journaled(() =>
        db.write([to, this.errors], (w) => {
          for (const [id, ref] of dirty) this.deriveOne(w, id, ref)
          initialize(w)
        }),
      )
      if (this.initialized && inputsReady) this.log.debug({ inputs: this.outputs.size }, 'round derived')
    } catch (err) {
      // statedb refused a write (a unique index of `to`, say): the whole transaction is gone, and so
      // is our bookkeeping of it. Derive each input alone, so the one that fails is the one in error.
      this.log.warn(
        { err: (err as Error)?.message, inputs: dirty.size },
        'a derived write was refused; deriving the round one input at a time',
      )
      for (const [id, ref] of dirty) {
        try {
          await this.journaled(() => db.write([to, this.errors], (w) => this.deriveOne(w, id, ref)))
        } catch (e) {
          this.refs.set(id, ref) // kept for the retry
          await db.write(this.errors, (w) => this.failed(w, id, e))
        }
      }
      await db.write(to, (w) => initialize(w))
    }
  }

  /** Runs fn with an undo journal of the bookkeeping: if it throws, the bookkeeping is as before. */
  private async journaled<T>(fn: () => Promise<T>): Promise<T> {
    const journal: Array<() => void> = []
    this.journal = journal
    try {
      return await fn()
    } catch (err) {
      for (let i = journal.length - 1; i >= 0; i--) journal[i]!()
      throw err
    } finally {
      this.journal = undefined
    }
  }
  private note(undo: () => void): void {
    this.journal?.push(undo)
  }
  private mapSet<K, V>(m: Map<K, V>, k: K, v: V): void {
    const had = m.has(k)
    const old = m.get(k)
    this.note(() => {
      if (had) m.set(k, old as V)
      else m.delete(k)
    })
    m.set(k, v)
  }
  private mapDel<K, V>(m: Map<K, V>, k: K): void {
    if (!m.has(k)) return
    const old = m.get(k) as V
    this.note(() => {
      m.set(k, old)
    })
    m.delete(k)
  }
  private setAdd<T>(set: Set<T>, v: T): void {
    if (set.has(v)) return
    this.note(() => {
      set.delete(v)
    })
    set.add(v)
  }
  private setDel<T>(set: Set<T>, v: T): void {
    if (!set.has(v)) return
    this.note(() => {
      set.add(v)
    })
    set.delete(v)
  }

  private deriveOne(w: WriteTxn, id: string, ref: InputRef): void {
    const { to, fn, validate } = this.o
    const table = this.from[ref.table]!
    const input = table.get(w, table.primary.query(ref.key))
    this.forgetReads(id)
    if (input === undefined) {
      this.setOutputs(w, id, [], [])
      this.clearError(w, id)
      this.mapDel(this.refs, id)
      return
    }
    this.mapSet(this.refs, id, ref)
    const reads: string[] = []
    const ctx: DeriveContext = {
      txn: w,
      get: (t, q) => {
        const obj = t.get(w, q)
        reads.push(...this.recordRead(t, q, obj === undefined ? [] : [obj]))
        return obj
      },
      list: (t, q) => {
        const objs = t.list(w, q).toArray()
        reads.push(...this.recordRead(t, q, objs))
        return objs
      },
    }
    let outs: Out[]
    try {
      this.runs++
      const r = fn(input, ctx)
      outs = r === undefined || r === null ? [] : Array.isArray(r) ? [...(r as readonly Out[])] : [r as Out]
      for (const out of outs) {
        const why = validate?.(out, input)
        if (why) throw new InvalidObjectError(`output refused: ${why}`)
      }
    } catch (err) {
      this.remember(id, reads)
      this.failed(w, id, err)
      return
    }
    this.remember(id, reads)
    this.setOutputs(
      w,
      id,
      outs.map((o) => to.primary.keyOf(o)),
      outs,
    )
    this.clearError(w, id)
  }

  private setOutputs(w: WriteTxn, id: string, keys: Key[], outs: Out[]): void {
    const { to } = this.o
    const before = this.outputs.get(id) ?? []
    const now = new Set<string>()
    keys.forEach((k, i) => {
      const ks = keyString(k)
      now.add(ks)
      const cur = to.get(w, to.primary.query(k))
      if (cur === undefined || !this.equals(cur, outs[i]!)) to.insert(w, outs[i]!)
      let p = this.producers.get(ks)
      if (!p) this.mapSet(this.producers, ks, (p = new Set()))
      this.setAdd(p, id)
    })
    for (const k of before) {
      const ks = keyString(k)
      if (now.has(ks)) continue
      const p = this.producers.get(ks)
      if (p) this.setDel(p, id)
      if (p && p.size > 0) {
        // another input still produces it: derive that one again, so the stored output is its version
        for (const other of p) this.again.add(other)
        continue
      }
      this.mapDel(this.producers, ks)
      const cur = to.get(w, to.primary.query(k))
      if (cur !== undefined) to.delete(w, cur)
    }
    if (keys.length) this.mapSet(this.outputs, id, keys)
    else this.mapDel(this.outputs, id)
  }

  private failed(w: WriteTxn, id: string, err: unknown): void {
    const prev = this.retries.get(id)
    const attempts = (prev?.attempts ?? 0) + 1
    const min = this.o.retry?.minMs ?? 100
    const max = this.o.retry?.maxMs ?? 30_000
    const delay = Math.min(max, min * 2 ** (attempts - 1)) * (0.8 + Math.random() * 0.4)
    const at = Date.now() + delay
    this.mapSet(this.retries, id, { attempts, at })
    const message = (err as Error)?.message ?? String(err)
    const input = describeInput(this.from, id)
    this.errors.insert(w, { id: `${this.name}${SEP}${id}`, derivation: this.name, input, error: message, attempts, retryAt: at })
    this.log.warn({ input, attempts, retryInMs: Math.round(delay), err: message }, 'derivation failed; will retry')
  }

  private clearError(w: WriteTxn, id: string): void {
    if (!this.retries.has(id)) return
    this.mapDel(this.retries, id)
    const cur = this.errors.get(w, errorId.query(`${this.name}${SEP}${id}`))
    if (cur) this.errors.delete(w, cur)
    this.log.info({ input: describeInput(this.from, id) }, 'derivation recovered')
  }

  // ---- dependencies ----

  private recordRead<T>(t: Table<T>, q: Query<T>, found: T[]): string[] {
    if (!this.joins.includes(t)) {
      throw new ConfigError(
        `derivation "${this.name}": fn read table "${t.name}", which is not in \`joins\` (add it so its changes re-derive this input)`,
      )
    }
    let idx = this.queried.get(t)
    if (!idx) this.queried.set(t, (idx = new Set()))
    idx.add(q.index)
    return [`${t.name}|${q.toString()}`, ...found.map((o) => `${t.name}|#${keyString(t.primary.keyOf(o))}`)]
  }

  private depKeysOf<T>(t: Table<T>, obj: T): string[] {
    const out = [`${t.name}|#${keyString(t.primary.keyOf(obj))}`]
    for (const name of this.queried.get(t) ?? []) {
      const index = t.primary.name === name ? t.primary : t.indexNamed(name)
      if (!index) continue
      for (const k of index.keysOf(obj)) out.push(`${t.name}|${index.query(k).toString()}`)
    }
    return out
  }

  private remember(id: string, reads: string[]): void {
    if (reads.length === 0) return
    this.mapSet(this.reads, id, reads)
    for (const r of reads) {
      let s = this.readers.get(r)
      if (!s) this.mapSet(this.readers, r, (s = new Set()))
      this.setAdd(s, id)
    }
  }

  private forgetReads(id: string): void {
    for (const r of this.reads.get(id) ?? []) {
      const s = this.readers.get(r)
      if (s) this.setDel(s, id)
      if (s?.size === 0) this.mapDel(this.readers, r)
    }
    this.mapDel(this.reads, id)
  }
}

/** Starts an incremental derivation (see Derivation). */
export async function derive<In, Out>(o: DeriveOptions<In, Out>): Promise<Derivation<In, Out>> {
  return new Derivation(o).start()
}

const keyString = (k: Key): string => (typeof k === 'string' ? k : JSON.stringify(k))
const inputId = (table: number, key: Key) => `${table}:${keyString(key)}`
function describeInput(from: ReadonlyArray<Table<any>>, id: string): string {
  const i = id.indexOf(':')
  return `${from[Number(id.slice(0, i))]?.name ?? '?'} ${id.slice(i + 1)}`
}
