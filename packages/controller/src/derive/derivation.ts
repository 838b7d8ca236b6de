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
//   backoff (a TerminalError is not retried: the input runs again when it or what it read changes).
//   The derivation never stops on an error.
// - fn is told why it runs (ctx.reason); a deleted input's last state goes to onDeleted, once.
// - `fn` runs only once every `from` and `joins` table is initialized (listed): a read of a table not
//   listed yet would look like "absent" (controller-runtime waits for its caches the same way); until
//   then nothing is derived and health names the tables waited for.
// - An input whose fn fails before any success in this process is unsettled (`unsettled()`): what
//   it produced before (in another process or term) is unknown, and a consumer that deletes what is
//   not derived (the Manager's prune) must keep it.
// - `to` is initialized once every `from` and `joins` table is initialized and a round has derived
//   from them.
// - With `hold` (the Manager's expectations), an input whose stored outputs are still being written
//   does not run until those writes are answered (the hook's watch fires): its run would read the
//   world from before its own writes. Only outputs of this term's runs hold: what an earlier term
//   left may be stale, and the new term's run must replace it before it is applied. While an input
//   is held, the derivation is not settled.
// - Dependencies are recorded by the queries `fn` makes: (table, index=key) and the primary keys of
//   what the query returned, so an object that moves out of a query's key re-derives its readers too.
// This file: the Derivation itself (its loop, a round's write, one input's run, its outputs); the
// bookkeeping it keeps is beside it (deps.ts, failures.ts, journal.ts, keys.ts).
import { nextProgress } from '../progress.ts'
import { ConfigError, InvalidObjectError, StoppedError, UsageError } from '../errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { isDeepStrictEqual } from 'node:util'
import { type ChangeIterator, type Key, type ReadTxn, type Table, type Watch, type WriteTxn, waitAny } from '@statewright/statedb'
import type { Lifecycle, Logger } from '@statewright/statedb'
import { nullLogger } from '../logging.ts'
import { Dependencies } from './deps.ts'
import { Failures, derivationErrors, type DerivationError } from './failures.ts'
import { Journal } from './journal.ts'
import { describeInput, inputId, keyString, type InputRef } from './keys.ts'
import type { DeriveContext, DeriveOptions, DerivationHealth, RunReason } from './options.ts'
import { TerminalError } from '../errors.ts'

/** An input to derive in a round: where it is, why, and (deleted) its last state. */
interface Dirty extends InputRef {
  reason: RunReason
  last?: unknown
}

/**
 * @internal Fresh changes first: with `enabled`, a round derives the fresh inputs and at most `chunk`
 * inputs of the backlog (resync, requeue, a new term, the initial list). Off: the whole backlog in one
 * round, as before (the storm bench compares both in one run).
 */
export const FRESH_FIRST = { enabled: true, chunk: 256 }

// Key order is not meaning: an output rebuilt with its keys in another order is the same output.
const deepEquals = (a: unknown, b: unknown) => a === b || isDeepStrictEqual(a, b)

export class Derivation<In, Out> implements Lifecycle {
  readonly name: string
  /** How many times fn ran (for tests and metrics). */
  runs = 0
  readonly errors: Table<DerivationError>
  private readonly options: DeriveOptions<In, Out>
  /** The input tables. */
  readonly from: ReadonlyArray<Table<In>>
  /** The tables fn reads through its context. */
  readonly joins: ReadonlyArray<Table<any>>
  /** The output table. */
  readonly to: Table<Out>
  private readonly equals: (a: Out, b: Out) => boolean
  private readonly log: Logger
  /** input id -> the output keys it produced. */
  private readonly outputs = new Map<string, Key[]>()
  /** input id -> where the input is (table, primary key), for inputs seen and not deleted. */
  private readonly refs = new Map<string, InputRef>()
  /** output key -> the inputs producing it. */
  private readonly producers = new Map<string, Set<string>>()
  private readonly deps: Dependencies
  private readonly failing: Failures
  private iters: ChangeIterator<any>[] = []
  private markInitialized: ((txn: WriteTxn) => void) | undefined
  private initialized = false
  private ctrl = new AbortController()
  private loop: Promise<void> | undefined
  /** Tables not listed yet (fn waits for them), by name; empty once every input and join is listed. */
  private unlisted: string[] = []
  /** Revision of each input and join table up to which changes are derived. */
  private readonly consumed = new Map<Table<any>, number>()
  private progress: Array<() => void> = []
  /** Inputs to derive again in the next round (they share an output another input gave up). */
  private readonly again = new Set<string>()
  /** Undo steps of the bookkeeping while a write transaction is open. */
  private readonly journal = new Journal()
  /** rederive() asked for every input to be derived again. */
  private everything = false
  /** rederive(filter) calls not yet derived: resolved once a round derived their inputs (or on stop). */
  private requests: Array<{ filter: ((input: In) => boolean) | undefined; reason: RunReason; done: () => void }> = []
  private wake = new AbortController()
  /** Low-priority inputs (a resync, a requeue, a new term, the initial list), derived after fresh changes. */
  private readonly backlog = new Map<string, Dirty>()
  /** rederive() calls whose inputs are in the backlog: resolved once it is empty. */
  private readonly backlogDone: Array<{ done: () => void }> = []
  /** The next round reads the iterators' first batch (every object: the initial list). */
  private listing = true
  /** Inputs held back (`hold`): each runs in the round after its watch fires. */
  private readonly held = new Map<string, { dirty: Dirty; watch: Watch }>()
  /**
   * Inputs that ran in this term (since start): only their outputs can be held for. Outputs left
   * from an earlier term may be stale (another leader wrote since); the new term's run replaces them.
   */
  private readonly ranThisTerm = new Set<string>()

  constructor(o: DeriveOptions<In, Out>) {
    this.options = o
    this.from = Array.isArray(o.from) ? o.from : [o.from as Table<In>]
    if (this.from.length === 0) throw new ConfigError('derive: `from` needs at least one table')
    this.joins = o.joins ?? []
    this.to = o.to
    this.name = o.name ?? `${this.from.map((t) => t.name).join('+')}->${o.to.name}`
    this.equals = o.equals ?? deepEquals
    this.log = (o.logger ?? nullLogger).child({ derivation: this.name })
    this.errors = derivationErrors(o.db)
    this.deps = new Dependencies(this.name, this.joins, this.journal)
    this.failing = new Failures(this.name, this.errors, this.from, o, this.journal, this.log)
  }

  /**
   * Registers `to`'s initializer (once) and starts deriving. A stopped derivation may start again (a
   * new leadership term): it then derives every input again, and drops the outputs of inputs deleted
   * while it was stopped (a new change iterator does not see deletions from before it).
   */
  async start(): Promise<void> {
    if (this.running) return
    if (this.loop) throw new UsageError(`derivation "${this.name}" is stopping: await stop() before start()`)
    const { db, to } = this.options
    if (this.ctrl.signal.aborted) {
      this.ctrl = new AbortController()
      this.everything = true
      this.consumed.clear() // settled() and waitFor() wait for the new term's first complete round
    }
    if (!this.markInitialized) {
      const w = await db.writeTxn(to)
      this.markInitialized = to.registerInitializer(w, `derive:${this.name}`)
      w.commit()
    }
    const txn = db.readTxn()
    this.iters = [...this.from, ...this.joins].map((t) => t.changes(txn))
    this.listing = true
    this.loop = this.run().finally(() => {
      for (const it of this.iters) it.close()
    })
  }

  async stop(): Promise<void> {
    this.ctrl.abort()
    await this.loop
    this.loop = undefined
    this.wakeWaiters()
    for (const r of this.requests.splice(0)) r.done()
    for (const r of this.backlogDone.splice(0)) r.done()
    this.backlog.clear() // a new term derives everything again
    this.held.clear()
    this.ranThisTerm.clear()
  }

  get running(): boolean {
    return this.loop !== undefined && !this.ctrl.signal.aborted
  }

  /** Resolves once every input and join table as it is now is derived (or rejects on stop/abort). */
  async settled(signal?: AbortSignal): Promise<void> {
    if (!this.running) throw new StoppedError(`derivation "${this.name}" is not running`)
    await this.waitFor(this.options.db.readTxn(), signal)
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

  /**
   * Derives again every input, or those `filter` picks (what fn decides changed outside the tables: a
   * shard acquired or released). Resolves once a round has derived them and written its outputs (or
   * when the derivation stops): fn runs for the picked inputs only.
   */
  rederive(filter?: (input: In) => boolean, reason: RunReason = filter ? 'requeue' : 'resync'): Promise<void> {
    return new Promise<void>((done) => {
      if (!this.running) return done()
      this.requests.push({ filter, reason, done })
      this.wake.abort()
    })
  }

  /**
   * Inputs whose fn failed and has not succeeded since this process started (or since a success that
   * produced nothing): whatever they produced before is unknown, so a consumer that deletes what is
   * not derived must keep what may be theirs (the Manager's prune keeps their children).
   */
  unsettled(txn: ReadTxn = this.options.db.readTxn()): Array<{ input: In | undefined; name: string }> {
    const out: Array<{ input: In | undefined; name: string }> = []
    for (const row of this.failing.list(txn)) {
      if (row.outputsKept) continue // its outputs of the last success stand in `to`
      const ref = this.refs.get(this.failing.inputIdOf(row))
      const table = ref && this.from[ref.table]
      out.push({ input: table?.get(txn, table.primary.query(ref!.key)), name: row.input })
    }
    return out
  }

  /** Inputs failing now (the rows of the errors table for this derivation). */
  failures(txn: ReadTxn = this.options.db.readTxn()): DerivationError[] {
    return this.failing.list(txn)
  }

  health(): DerivationHealth {
    const failing = this.failures()
    const ready = this.initialized && this.running
    const level = !this.running && this.loop === undefined && this.ctrl.signal.aborted ? 'stopped' : failing.length ? 'degraded' : 'ok'
    const message = this.unlisted.length
      ? `waiting for ${this.unlisted.map((n) => `"${n}"`).join(', ')} to be listed`
      : failing.length
        ? `${failing.length} inputs failing: ${failing
            .slice(0, 3)
            .map((f) => `${f.input}: ${f.error}`)
            .join('; ')}`
        : `${this.outputs.size} inputs derived`
    return {
      level,
      message,
      ready,
      errors: failing.length,
      failing: failing.slice(0, 3),
      ...(this.unlisted.length ? { waitingFor: [...this.unlisted] } : {}),
    }
  }

  // ---- the loop ----

  private async run(): Promise<void> {
    const { db } = this.options
    const signal = this.ctrl.signal
    while (!signal.aborted) {
      if (this.wake.signal.aborted) this.wake = new AbortController()
      const txn = db.readTxn()
      // nothing runs on an input or join not listed yet: its changes wait in the iterators
      const unlisted = [...this.from, ...this.joins].filter((t) => !t.initialized(txn)[0])
      this.unlisted = unlisted.map((t) => t.name)
      if (unlisted.length) {
        this.log.debug({ waitingFor: this.unlisted }, 'waiting for tables to be listed')
        try {
          await waitAny(
            unlisted.map((t) => t.initialized(txn)[1]),
            signal,
          )
        } catch {
          if (signal.aborted) return
        }
        continue
      }
      // Fresh changes first (controller-runtime's priority queue, kubernetes-sigs/controller-runtime#3290):
      // an input's own change, a change of what it read, a due retry and `again` are derived in the
      // next round; a resync, a requeue, a new term's "everything" and the initial list go to the
      // backlog, derived FRESH_FIRST.chunk at a time after the fresh ones, yielding to I/O between
      // chunks so a change that arrives meanwhile is taken before the rest of the backlog.
      const fresh = new Map<string, Dirty>()
      const backlog = this.backlog
      // the first reason an input is found dirty for stands, but for its own change (set below)
      const mark = (id: string, ref: InputRef, reason: RunReason) => {
        if (!fresh.has(id)) fresh.set(id, { table: ref.table, key: ref.key, reason })
      }
      const markLow = (id: string, ref: InputRef, reason: RunReason) => {
        if (!backlog.has(id)) backlog.set(id, { table: ref.table, key: ref.key, reason })
      }
      const watches: Watch[] = []
      const requests = this.requests.splice(0)
      const everything = requests.find((r) => r.filter === undefined)
      if (everything) this.everything = true
      if (this.everything) {
        this.everything = false
        const reason = everything?.reason ?? 'resync'
        this.from.forEach((t, i) => {
          for (const o of t.all(txn)) {
            const key = t.primary.keyOf(o)
            markLow(inputId(i, key), { table: i, key }, reason)
          }
        })
        for (const [id, ref] of this.refs) markLow(id, ref, reason) // inputs already gone stay dirty too
      } else if (requests.length) {
        this.from.forEach((t, i) => {
          for (const o of t.all(txn)) {
            const r = requests.find((q) => q.filter!(o as In))
            if (!r) continue
            const key = t.primary.keyOf(o)
            markLow(inputId(i, key), { table: i, key }, r.reason)
          }
        })
      }
      this.backlogDone.push(...requests)
      const listing = this.listing // the iterators' first batch is the initial list: low priority
      this.listing = false
      this.iters.forEach((it, i) => {
        const [changes, w] = it.next(txn)
        watches.push(w)
        if (i < this.from.length) {
          const t = this.from[i]!
          for (const c of changes) {
            const key = t.primary.keyOf(c.object)
            const id = inputId(i, key)
            const reason = this.refs.has(id) ? 'updated' : 'created'
            const d: Dirty = c.deleted ? { table: i, key, reason, last: c.object } : { table: i, key, reason }
            if (listing) backlog.set(id, d)
            else fresh.set(id, d)
          }
        } else {
          const t = this.joins[i - this.from.length]!
          for (const c of changes)
            for (const dep of this.deps.depKeysOf(t, c.object))
              for (const id of this.deps.readersOf(dep)) {
                const ref = this.refs.get(id)
                if (ref) mark(id, ref, 'dependency')
              }
        }
      })
      for (const id of this.again) {
        const ref = this.refs.get(id)
        if (ref) mark(id, ref, 'dependency')
      }
      this.again.clear()
      // held inputs whose outputs' writes were answered run now (with the reason they were dirty for)
      for (const [id, h] of this.held) {
        if (!h.watch.closed) continue
        this.held.delete(id)
        if (!fresh.has(id) && !backlog.has(id)) fresh.set(id, h.dirty)
      }
      const nextRetry = this.failing.due(Date.now(), this.refs, (id, ref) => mark(id, ref, 'retry'))
      // this round: the fresh inputs, then a chunk of the backlog (all of it with the priority off)
      const dirty = fresh
      for (const id of fresh.keys()) backlog.delete(id)
      const take = FRESH_FIRST.enabled ? FRESH_FIRST.chunk : Infinity
      let taken = 0
      for (const [id, d] of backlog) {
        if (taken++ >= take) break
        dirty.set(id, d)
        backlog.delete(id)
      }
      const complete = backlog.size === 0
      const heldBefore = this.held.size // what this round holds is what it adds
      if (dirty.size || (!this.initialized && complete)) {
        try {
          await this.derive(dirty, complete)
        } catch (err) {
          // a statedb failure (not fn's): log, back off, and go on (the round waits for the next one)
          for (const [id, d] of dirty) if (!backlog.has(id)) backlog.set(id, d)
          this.log.error({ err }, 'derivation round failed')
          await sleep(1000, undefined, { signal }).catch(() => {})
          continue
        }
      }
      if (backlog.size) {
        // yield to I/O (a watch event, a reflector's write) before the next chunk
        await new Promise<void>((r) => setImmediate(r))
        continue
      }
      for (const r of this.backlogDone.splice(0)) r.done()
      // derived up to this snapshot, unless inputs sharing a given-up output still have to run
      // again, or an input is held until its outputs' writes are answered
      if (this.again.size === 0 && this.held.size === 0) {
        for (const t of [...this.from, ...this.joins]) this.consumed.set(t, t.revision(txn))
        this.wakeWaiters()
      }
      for (const h of this.held.values()) watches.push(h.watch) // held in this round
      // writes of this round may have changed joined tables: look again (a round that only held waits)
      if (dirty.size > this.held.size - heldBefore) continue
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

  /** Holds the input back when `hold` says its last outputs are still being written; true if held. */
  private hold(w: WriteTxn, id: string, ref: Dirty): boolean {
    const keys = this.outputs.get(id)
    if (keys === undefined || keys.length === 0 || !this.ranThisTerm.has(id)) return false
    const watch = this.options.hold!(keys, w)
    if (watch === undefined) return false
    this.journal.mapSet(this.held, id, { dirty: ref, watch })
    return true
  }

  private wakeWaiters(): void {
    const p = this.progress
    this.progress = []
    for (const f of p) f()
  }

  /** Derives `dirty` in one write; `complete`: nothing is left in the backlog, so `to` may be initialized. */
  private async derive(dirty: Map<string, Dirty>, complete: boolean): Promise<void> {
    const { db, to } = this.options
    const initialize = (w: WriteTxn) => {
      if (this.initialized || !complete) return
      this.markInitialized?.(w)
      this.initialized = true
      this.journal.note(() => {
        this.initialized = false
      })
    }
    try {
      await this.journal.run(() =>
        db.write([to, this.errors], (w) => {
          for (const [id, ref] of dirty) this.deriveOne(w, id, ref)
          initialize(w)
        }),
      )
      if (this.initialized) this.log.debug({ inputs: this.outputs.size }, 'round derived')
    } catch (err) {
      // statedb refused a write (a unique index of `to`, say): the whole transaction is gone, and so
      // is our bookkeeping of it. Derive each input alone, so the one that fails is the one in error.
      this.log.warn(
        { err: (err as Error)?.message, inputs: dirty.size },
        'a derived write was refused; deriving the round one input at a time',
      )
      for (const [id, ref] of dirty) {
        try {
          await this.journal.run(() => db.write([to, this.errors], (w) => this.deriveOne(w, id, ref)))
        } catch (e) {
          this.refs.set(id, ref) // kept for the retry
          await db.write(this.errors, (w) => this.failing.failed(w, id, e, this.outputs.has(id), e instanceof TerminalError))
        }
      }
      await db.write(to, (w) => initialize(w))
    }
  }

  private deriveOne(w: WriteTxn, id: string, ref: Dirty): void {
    const { to, fn, validate } = this.options
    const table = this.from[ref.table]!
    const input = table.get(w, table.primary.query(ref.key))
    if (input !== undefined && this.options.hold !== undefined && this.hold(w, id, ref)) return
    this.deps.forget(id)
    if (input === undefined) {
      this.setOutputs(w, id, [], [])
      this.failing.clear(w, id)
      this.journal.mapDel(this.refs, id)
      this.ranThisTerm.delete(id)
      if (ref.last !== undefined && this.options.onDeleted) {
        try {
          this.options.onDeleted(ref.last as In)
        } catch (err) {
          this.log.warn(
            { input: describeInput(this.from, id), err: (err as Error)?.message ?? String(err) },
            'onDeleted failed (not retried)',
          )
        }
      }
      return
    }
    this.journal.mapSet(this.refs, id, { table: ref.table, key: ref.key })
    const reads: string[] = []
    const ctx: DeriveContext = {
      reason: ref.reason,
      txn: w,
      get: (t, q) => {
        const obj = t.get(w, q)
        reads.push(...this.deps.recordRead(t, q, obj === undefined ? [] : [obj]))
        return obj
      },
      list: (t, q) => {
        const objs = t.list(w, q).toArray()
        reads.push(...this.deps.recordRead(t, q, objs))
        return objs
      },
    }
    let outs: Out[]
    const t0 = this.options.observe ? performance.now() : 0
    try {
      this.runs++
      const r = fn(input, ctx)
      outs = r === undefined || r === null ? [] : Array.isArray(r) ? [...(r as readonly Out[])] : [r as Out]
      for (const out of outs) {
        const why = validate?.(out, input)
        if (why) throw new InvalidObjectError(`output refused: ${why}`)
      }
    } catch (err) {
      this.options.observe?.('error', (performance.now() - t0) / 1000)
      this.deps.remember(id, reads)
      this.failing.failed(w, id, err, this.outputs.has(id), err instanceof TerminalError)
      return
    }
    this.options.observe?.('success', (performance.now() - t0) / 1000)
    if (this.options.hold) this.ranThisTerm.add(id) // its outputs are this term's (an aborted round adds at most a harmless hold)
    this.deps.remember(id, reads)
    this.setOutputs(
      w,
      id,
      outs.map((o) => to.primary.keyOf(o)),
      outs,
    )
    this.failing.clear(w, id)
  }

  private setOutputs(w: WriteTxn, id: string, keys: Key[], outs: Out[]): void {
    const { to } = this.options
    const before = this.outputs.get(id) ?? []
    const now = new Set<string>()
    keys.forEach((k, i) => {
      const ks = keyString(k)
      now.add(ks)
      const cur = to.get(w, to.primary.query(k))
      if (cur === undefined || !this.equals(cur, outs[i]!)) to.insert(w, outs[i]!)
      let p = this.producers.get(ks)
      if (!p) this.journal.mapSet(this.producers, ks, (p = new Set()))
      this.journal.setAdd(p, id)
    })
    for (const k of before) {
      const ks = keyString(k)
      if (now.has(ks)) continue
      const p = this.producers.get(ks)
      if (p) this.journal.setDel(p, id)
      if (p && p.size > 0) {
        // another input still produces it: derive that one again, so the stored output is its version
        for (const other of p) this.again.add(other)
        continue
      }
      this.journal.mapDel(this.producers, ks)
      const cur = to.get(w, to.primary.query(k))
      if (cur !== undefined) to.delete(w, cur)
    }
    if (keys.length) this.journal.mapSet(this.outputs, id, keys)
    else this.journal.mapDel(this.outputs, id)
  }
}

/** Starts an incremental derivation (see Derivation). */
export async function derive<In, Out>(o: DeriveOptions<In, Out>): Promise<Derivation<In, Out>> {
  const d = new Derivation(o)
  await d.start()
  return d
}
