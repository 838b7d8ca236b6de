// The reflector core (src/reflector/) with a fake source (an in-memory key-value store with a
// history, sessions that can end, fail, be refused or go silent): the Lifecycle contract, the
// inactivity bound (issue 40), and a seeded model test in which every round of changes, under
// random faults, ends with the table equal to the store. The Batcher it writes events with is
// tested alone. The real sources are tested in packages/k8s/test and packages/nats/test.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  DB,
  ReflectorCore,
  StoppedError,
  Table,
  UsageError,
  defineIndex,
  type PendingEvent,
  type ReflectorSource,
  type RowWriter,
  type SessionContext,
  type SourceEvent,
  type WriteTxn,
} from '@statewright/statedb'
import { Batcher } from '../src/reflector/batch.ts'
import { rng } from '../../../bench/lib/rng.ts'
import { waitFor, waitTable } from '../../../test/lib/wait.ts'
import { collectingLogger, type LogEntry } from '../../../test/lib/logger.ts'

interface Row {
  key: string
  value: number
  rev: number
}
type Ev = SourceEvent<Row, number>

/** The store a fake source reflects: values by key, and a history of every change. */
class Store {
  rev = 0
  readonly data = new Map<string, Row>()
  readonly history: Array<{ type: 'upsert' | 'delete'; row: Row }> = []
  /** Resuming from a revision below this is refused (history compacted). */
  compactedTo = 0
  readonly listeners = new Set<(e: { type: 'upsert' | 'delete'; row: Row }) => void>()

  put(key: string, value: number): void {
    const row = { key, value, rev: ++this.rev }
    this.data.set(key, row)
    this.emit({ type: 'upsert', row })
  }
  delete(key: string): void {
    if (!this.data.has(key)) return
    this.data.delete(key)
    this.emit({ type: 'delete', row: { key, value: 0, rev: ++this.rev } })
  }
  private emit(e: { type: 'upsert' | 'delete'; row: Row }): void {
    this.history.push(e)
    for (const l of this.listeners) l(e)
  }
}

interface Open {
  /** Delivers nothing more (a connection that died quietly); what comes is lost. */
  dead: boolean
  end: () => void
}

/** A source of the store: list + watch, resume from a revision, bookmarks while alive. */
class FakeSource implements ReflectorSource<Row, number> {
  readonly sessions: Array<number | undefined> = []
  readonly open = new Set<Open>()
  /** Sessions to fail before they connect. */
  failNext = 0
  /** Sessions that connect and then say nothing. */
  silentNext = 0
  /** ms between bookmarks of a live watch (0: none). */
  bookmarkMs = 0

  constructor(private readonly store: Store) {}

  async *session(from: number | undefined, ctx: SessionContext): AsyncGenerator<Ev> {
    this.sessions.push(from)
    await new Promise((r) => setImmediate(r))
    if (this.failNext > 0) {
      this.failNext--
      throw new Error('the server refused the connection')
    }
    if (from !== undefined && from < this.store.compactedTo) return ctx.listNext(`revision ${from} is compacted`)
    // the starting point and the subscription in one turn: nothing lost, nothing twice
    const queue: Ev[] = []
    let wake: (() => void) | undefined
    const o: Open = { dead: this.silentNext > 0, end: () => {} }
    if (o.dead) this.silentNext--
    let ended = false
    o.end = () => {
      ended = true
      wake?.()
    }
    const listen = (e: { type: 'upsert' | 'delete'; row: Row }) => {
      if (o.dead) return
      queue.push({ type: e.type, key: e.row.key, item: e.row, position: e.row.rev })
      wake?.()
    }
    const at = this.store.rev
    const list = from === undefined ? [...this.store.data.values()] : undefined
    const missed = from === undefined ? [] : this.store.history.filter((e) => e.row.rev > from)
    this.store.listeners.add(listen)
    this.open.add(o)
    const timer = this.bookmarkMs ? setInterval(() => !o.dead && (queue.push({ type: 'bookmark' }), wake?.()), this.bookmarkMs) : undefined
    const onAbort = () => wake?.()
    ctx.signal.addEventListener('abort', onAbort)
    try {
      if (list) yield { type: 'list', items: list, position: at }
      yield { type: 'watch' }
      yield { type: 'connected' }
      if (!o.dead) for (const e of missed) yield { type: e.type, key: e.row.key, item: e.row, position: e.row.rev }
      while (!ctx.signal.aborted && !ended) {
        const ev = queue.shift()
        if (ev) yield ev
        else await new Promise<void>((r) => (wake = r))
      }
    } finally {
      clearInterval(timer)
      ctx.signal.removeEventListener('abort', onAbort)
      this.store.listeners.delete(listen)
      this.open.delete(o)
    }
  }

  /** Ends every live session cleanly (a server closing its watches); dead ones see nothing. */
  endLive(): void {
    for (const o of this.open) if (!o.dead) o.end()
  }
  /** Every open session goes dead: nothing more reaches the reflector on it. */
  killQuietly(): void {
    for (const o of this.open) o.dead = true
  }
}

class Rows implements RowWriter<Row> {
  constructor(private readonly table: Table<Row>) {}
  replace(txn: WriteTxn, items: Iterable<Row>): void {
    const keep = new Set<string>()
    for (const r of items) {
      keep.add(r.key)
      this.table.insert(txn, r)
    }
    for (const r of this.table.all(txn).toArray()) if (!keep.has(r.key)) this.table.delete(txn, r)
  }
  apply(txn: WriteTxn, batch: ReadonlyMap<string, PendingEvent<Row>>): void {
    for (const p of batch.values()) {
      if (p.type === 'delete') this.table.delete(txn, p.object)
      else this.table.insert(txn, p.object)
    }
  }
}

function setup(opts: { inactivityTimeoutMs?: number; logs?: LogEntry[] } = {}) {
  const store = new Store()
  const source = new FakeSource(store)
  const table = new Table<Row>({ name: 'rows', primary: defineIndex<Row, string>({ name: 'key', key: (r) => r.key, unique: true }) })
  const db = new DB({ tables: [table] })
  const core = new ReflectorCore<Row, number>({
    name: 'fake',
    db,
    table,
    source,
    rows: new Rows(table),
    retry: { minMs: 5, maxMs: 20 },
    inactivityTimeoutMs: opts.inactivityTimeoutMs,
    logger: opts.logs ? collectingLogger((e) => opts.logs!.push(e)) : undefined,
    logFields: { store: 'fake' },
    error: (m) => new UsageError(m),
  })
  const same = () => {
    const rows = table.all(db.readTxn()).toArray()
    return rows.length === store.data.size && rows.every((r) => store.data.get(r.key)?.rev === r.rev)
  }
  return { store, source, table, db, core, same }
}

test('Lifecycle: start twice is one start, start after stop is a UsageError, settled waits for the list and the events received, then rejects once stopped', async () => {
  const t = setup()
  t.store.put('a', 1)
  const settled = t.core.settled(AbortSignal.timeout(10_000)) // before start: waits for the first list
  await Promise.all([t.core.start(), t.core.start()]) // both resolve once it runs
  assert.is(t.source.sessions.length, 1)
  await t.core.start()
  await settled
  assert.ok(t.same())
  assert.is(t.source.sessions.length, 1, 'one start, one session')
  assert.is(t.core.health().state, 'watching')
  await waitFor(() => t.source.open.size === 1, 'the watch')
  t.store.put('b', 2)
  await waitFor(() => t.core.health().events === 1, 'the event received')
  await t.core.settled(AbortSignal.timeout(10_000)) // written, not only received
  assert.ok(t.same())
  await t.core.stop()
  await t.core.stop()
  assert.is(t.core.health().level, 'stopped')
  assert.ok(
    await t.core.settled().then(
      () => false,
      (err) => err instanceof StoppedError,
    ),
  )
  assert.ok(
    await t.core.start().then(
      () => false,
      (err) => err instanceof UsageError,
    ),
  )
})

test('inactivity: a silent session is restarted from the last position (no relist), logged and counted', async () => {
  const logs: LogEntry[] = []
  const t = setup({ inactivityTimeoutMs: 200, logs })
  t.source.bookmarkMs = 10 // a live watch speaks twenty times per bound
  t.store.put('a', 1)
  await t.core.start()
  await t.core.waitSynced(AbortSignal.timeout(10_000))
  await waitFor(() => t.core.health().lastEventAt !== undefined, 'a bookmark')
  t.source.killQuietly()
  t.store.put('b', 2) // lost on the dead session
  await waitTable(t.db, t.table, () => t.same(), 'the change made after the session died', 30_000)
  const h = t.core.health()
  assert.ok(h.inactivityRestarts >= 1)
  assert.is(h.lists, 1)
  assert.is(h.relists, 0)
  assert.equal(t.source.sessions.slice(0, 2), [undefined, 1], 'resumed from the revision of the list')
  const line = logs.find((e) => /watch silent/.test(e.msg ?? ''))!
  assert.ok(line)
  assert.equal([line.fields.reflector, line.fields.store, line.fields.resumeFrom], ['fake', 'fake', 1])
  await t.core.stop()
})

test('model: seeded rounds of changes under random faults (ends, failures, compaction, silent and dying sessions); after each the table equals the store', async () => {
  for (const seed of [1, 2, 3]) {
    const r = rng(seed)
    const t = setup({ inactivityTimeoutMs: 100 })
    t.source.bookmarkMs = 10
    const faults = { end: 0, fail: 0, compact: 0, silent: 0, die: 0 }
    await t.core.start()
    try {
      await t.core.waitSynced(AbortSignal.timeout(10_000))
      for (let round = 0; round < 25; round++) {
        const fault = (['none', 'end', 'fail', 'compact', 'silent', 'die'] as const)[r.int(6)]!
        if (fault === 'end') t.source.endLive()
        if (fault === 'fail') {
          t.source.failNext = 1 + r.int(2)
          t.source.endLive()
        }
        if (fault === 'compact') {
          t.store.compactedTo = t.store.rev + 1
          t.source.endLive()
        }
        if (fault === 'silent') {
          t.source.silentNext = 1
          t.source.endLive()
        }
        if (fault === 'die') t.source.killQuietly()
        if (fault !== 'none') faults[fault]++
        for (let i = 1 + r.int(5); i > 0; i--) {
          const key = `k${r.int(8)}`
          if (r.int(4) === 0) t.store.delete(key)
          else t.store.put(key, r.int(100))
        }
        if (r.int(5) === 0) await t.core.refresh(AbortSignal.timeout(30_000))
        await waitTable(t.db, t.table, () => t.same(), `seed ${seed} round ${round} (${fault}) to converge`, 30_000)
        await t.core.settled(AbortSignal.timeout(30_000))
      }
      const h = t.core.health()
      if (faults.silent + faults.die > 0) assert.ok(h.inactivityRestarts >= 1, `seed ${seed}: ${JSON.stringify({ faults, h })}`)
      assert.ok(h.relists <= faults.compact, `seed ${seed}: a relist only for a refused resume`)
      assert.ok(h.ready, `seed ${seed}: ready at the end`)
    } finally {
      await t.core.stop()
    }
  }
})

test('Batcher coalesces by key, flushes by size and by delay, in order', async () => {
  const batches: Array<Array<[string, string]>> = []
  const b = new Batcher<number>(3, 20, async (m) => {
    batches.push([...m].map(([k, p]) => [k, `${p.type}:${p.object}`]))
  })
  b.add('a', { type: 'upsert', object: 1 })
  b.add('a', { type: 'delete', object: 2 })
  b.add('b', { type: 'upsert', object: 3 })
  assert.is(b.length, 2)
  await b.add('c', { type: 'upsert', object: 4 })
  assert.equal(batches, [
    [
      ['a', 'delete:2'],
      ['b', 'upsert:3'],
      ['c', 'upsert:4'],
    ],
  ])
  b.add('d', { type: 'upsert', object: 5 })
  await new Promise((r) => setTimeout(r, 60))
  assert.equal(batches[1], [['d', 'upsert:5']])
  b.add('e', { type: 'upsert', object: 6 })
  await b.discard()
  await b.flush()
  assert.is(batches.length, 2)
})

test.run()
