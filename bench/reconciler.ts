// Reconciler benchmarks, in the shape of cilium's reconciler benchmark: a writer inserts N pending
// objects in write transactions of 1000 while the reconciler runs with a no-op Update, until the
// last object is done. Reported: objects/s end to end, bytes allocated per object (everything the
// run allocated: from the GC profiler, before-minus-after of every GC plus the growth left at the
// end), bytes retained per object (heap growth after a full GC with the table still alive).
//
// Side by side in the same process: a classic workqueue controller (a Map cache filled by the
// writer, a deduplicating work queue with dirty/processing sets, a per-item exponential rate limiter
// for failures, a worker calling the same no-op reconcile). Like the reconciler it keeps a status per
// object: a success replaces the cached object by a copy carrying a done status (one shared per 1000,
// as the reconciler shares one per round), a failure by a copy carrying an error status; so bytes per
// object compare like with like. The ratio says what an indexed, snapshotted table costs on top.
//
// Variants: every Update succeeds; 10% of the objects fail once (retried after a 10 ms backoff).
// Plus the status write-back on its own (compare-and-swap of 1000 objects per transaction) against
// plain inserts of the same objects.
//
// The floor: the statedb work of the reconciler's rounds done by hand and nothing else (change
// iterator, a clone of each pending object, compare-and-swap of a shared done status, 1000 per write
// transaction, the same yield between full rounds), with the same writer. Floor / reconciler is what
// the reconciler's own machinery (operations, retries, health, waits) costs on top of statedb.

import v8 from 'node:v8'
import { DB, defineIndex, Table } from '@statewright/statedb'
import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import { newStatusIndex, Reconciler, statusDone, statusError, statusPending, type Operations, type Status } from '@statewright/reconciler'
import { forceGc, heapAfterGc, median, rng, shuffle, type Result, type RunOptions } from './lib/index.ts'

interface BenchObject {
  readonly id: number
  readonly status: Status
}

const BATCH = 1000
const BACKOFF_MS = 10
const idIndex = defineIndex<BenchObject, number>({ name: 'id', key: (o) => o.id, unique: true })

interface Figures {
  rate: number
  allocated: number
  retained: number
}

const failsOnce = (failFraction: number) => {
  const every = failFraction > 0 ? Math.round(1 / failFraction) : 0
  const failed = new Set<number>()
  return (id: number): boolean => {
    if (every === 0 || id % every !== 0 || failed.has(id)) return false
    failed.add(id)
    return true
  }
}

/** Runs `work` with the GC profiler on; returns its result and bytes allocated and retained per object. */
async function profiled<T>(n: number, work: () => Promise<T>): Promise<{ value: T; allocated: number; retained: number; seconds: number }> {
  const heap0 = heapAfterGc()
  const profiler = new v8.GCProfiler()
  profiler.start()
  const t0 = performance.now()
  const value = await work()
  const seconds = (performance.now() - t0) / 1000
  const heapEnd = process.memoryUsage().heapUsed
  const stats = profiler.stop()
  let collected = 0
  for (const s of stats.statistics) collected += Math.max(0, s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize)
  const allocated = (collected + heapEnd - heap0) / n
  const retained = (heapAfterGc() - heap0) / n
  return { value, allocated, retained, seconds }
}

/**
 * The reconciler's workload: n pending objects inserted 1000 per transaction while a Reconciler with
 * a no-op update (failing `failFraction` of the objects once) runs, until every one is done.
 * Returns the database, whose table holds the n objects. Also run by scripts/profile-allocations.ts.
 */
export async function reconcilerWorkload(n: number, failFraction: number): Promise<DB> {
  const statusIndex = newStatusIndex<BenchObject>((o) => o.status)
  const table = new Table<BenchObject>({ name: 'bench', primary: idIndex, indexes: [statusIndex] })
  const db = new DB({ tables: [table] })
  const fail = failsOnce(failFraction)
  const rec = new Reconciler<BenchObject>({
    db,
    table,
    statusIndex,
    primaryKey: (o) => o.id,
    getObjectStatus: (o) => o.status,
    setObjectStatus: (o, status) => {
      ;(o as { status: Status }).status = status
      return o
    },
    cloneObject: (o) => ({ id: o.id, status: o.status }),
    operations: {
      update: (o) => {
        if (fail(o.id)) throw new Error('fails once')
      },
      delete: () => {},
    },
    retry: { minMs: BACKOFF_MS, maxMs: 1000 },
  })
  await rec.start()
  let rev = 0
  for (let b = 0; b < n; b += BATCH) {
    const txn = await db.writeTxn(table)
    const end = Math.min(n, b + BATCH)
    for (let i = b; i < end; i++) table.insert(txn, { id: i, status: statusPending() })
    rev = table.revision(txn.commit())
  }
  await rec.waitForRevision(rev)
  // Until the last one is done: nothing pending, nothing in error.
  for (;;) {
    const txn = db.readTxn()
    const [pending, pw] = table.listWatch(txn, statusIndex.kind('pending'))
    const [errors, ew] = table.listWatch(txn, statusIndex.kind('error'))
    if (pending.first() === undefined && errors.first() === undefined) break
    await Promise.race([pw.wait(), ew.wait()])
  }
  const done = table.list(db.readTxn(), statusIndex.kind('done')).count()
  if (done !== n) throw new Error(`reconciler bench: ${done} of ${n} done`)
  await rec.stop()
  return db
}

async function reconcilerRun(n: number, failFraction: number): Promise<Figures> {
  let keep: unknown
  const r = await profiled(n, async () => {
    keep = await reconcilerWorkload(n, failFraction) // retained: the table with its n objects stays alive for the measurement
  })
  void keep
  return { rate: n / r.seconds, allocated: r.allocated, retained: r.retained }
}

/**
 * The floor's workload: the reconciler's statedb work by hand (a change iterator, a clone per pending
 * object, compare-and-swap of a shared done status, 1000 per transaction) with the same writer.
 * Returns the database. Also run by scripts/profile-allocations.ts.
 */
export async function floorWorkload(n: number): Promise<DB> {
  const statusIndex = newStatusIndex<BenchObject>((o) => o.status)
  const table = new Table<BenchObject>({ name: 'bench', primary: idIndex, indexes: [statusIndex] })
  const db = new DB({ tables: [table] })
  const iter = table.changes(db.readTxn())
  let reconciled = 0
  const loop = (async () => {
    while (reconciled < n) {
      const [changes, watch] = iter.next(db.readTxn())
      const objects: Array<{ id: number; status: Status }> = []
      const revisions: number[] = []
      for (const c of changes) {
        if (c.deleted || c.object.status.kind !== 'pending') continue
        objects.push({ id: c.object.id, status: c.object.status })
        revisions.push(c.revision)
        if (objects.length >= BATCH) break
      }
      if (objects.length > 0) {
        const txn = db.tryWriteTxn(table) ?? (await db.writeTxn(table))
        const done = statusDone()
        const batch = table.batch(txn) // as the reconciler's write-back (a boolean per swap, no result object)
        for (let i = 0; i < objects.length; i++) {
          objects[i]!.status = done
          if (batch.compareAndSwap(revisions[i]!, objects[i]!)) reconciled++
        }
        txn.commit()
      }
      if (objects.length >= BATCH) await yieldToEventLoop()
      else if (reconciled < n) await watch.wait()
    }
  })()
  for (let b = 0; b < n; b += BATCH) {
    const txn = await db.writeTxn(table)
    const end = Math.min(n, b + BATCH)
    for (let i = b; i < end; i++) table.insert(txn, { id: i, status: statusPending() })
    txn.commit()
  }
  await loop
  iter.close()
  const done = table.list(db.readTxn(), statusIndex.kind('done')).count()
  if (done !== n) throw new Error(`floor bench: ${done} of ${n} done`)
  return db
}

async function floorRun(n: number): Promise<Figures> {
  let keep: unknown
  const r = await profiled(n, async () => {
    keep = await floorWorkload(n)
  })
  void keep
  return { rate: n / r.seconds, allocated: r.allocated, retained: r.retained }
}

// ---- the classic workqueue controller ----

class WorkQueue {
  private queue: number[] = []
  private head = 0
  private readonly dirty = new Set<number>()
  private readonly processing = new Set<number>()
  private waiter: (() => void) | undefined

  add(k: number): void {
    if (this.dirty.has(k)) return
    this.dirty.add(k)
    if (this.processing.has(k)) return
    this.queue.push(k)
    const w = this.waiter
    this.waiter = undefined
    w?.()
  }

  /** The next key, or undefined when empty (then `wait()`). */
  get(): number | undefined {
    if (this.head >= this.queue.length) return undefined
    const k = this.queue[this.head++]!
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
    this.processing.add(k)
    this.dirty.delete(k)
    return k
  }

  wait(): Promise<void> {
    return new Promise((r) => (this.waiter = r))
  }

  done(k: number): void {
    this.processing.delete(k)
    if (this.dirty.has(k)) {
      this.queue.push(k)
      const w = this.waiter
      this.waiter = undefined
      w?.()
    }
  }
}

/** client-go's ItemExponentialFailureRateLimiter plus a delaying queue (one timer, FIFO by due time). */
class RateLimitedQueue {
  private readonly failures = new Map<number, number>()
  private delayed: Array<{ k: number; at: number }> = []
  private timer: NodeJS.Timeout | undefined
  constructor(
    private readonly q: WorkQueue,
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {}
  addRateLimited(k: number): void {
    const f = this.failures.get(k) ?? 0
    this.failures.set(k, f + 1)
    const at = Date.now() + Math.min(this.baseMs * 2 ** f, this.maxMs)
    this.delayed.push({ k, at }) // every first failure has the same delay: FIFO is in due order
    this.arm()
  }
  forget(k: number): void {
    if (this.failures.size > 0) this.failures.delete(k)
  }
  private arm(): void {
    if (this.timer !== undefined || this.delayed.length === 0) return
    this.timer = setTimeout(
      () => {
        this.timer = undefined
        const now = Date.now()
        let i = 0
        while (i < this.delayed.length && this.delayed[i]!.at <= now) this.q.add(this.delayed[i++]!.k)
        this.delayed = this.delayed.slice(i)
        this.arm()
      },
      Math.max(0, this.delayed[0]!.at - Date.now()),
    )
  }
}

async function workqueueRun(n: number, failFraction: number): Promise<Figures> {
  const r = await profiled(n, async () => {
    const cache = new Map<number, BenchObject>()
    const queue = new WorkQueue()
    const limiter = new RateLimitedQueue(queue, BACKOFF_MS, 1000)
    const fail = failsOnce(failFraction)
    const reconcile = (o: BenchObject) => {
      if (fail(o.id)) throw new Error('fails once')
    }
    let succeeded = 0
    let done = statusDone()
    const worker = (async () => {
      while (succeeded < n) {
        const k = queue.get()
        if (k === undefined) {
          await queue.wait()
          continue
        }
        const obj = cache.get(k)
        if (obj !== undefined) {
          try {
            reconcile(obj)
            limiter.forget(k)
            if ((succeeded & 1023) === 0) done = statusDone()
            cache.set(k, { id: obj.id, status: done })
            succeeded++
          } catch (err) {
            cache.set(k, { id: obj.id, status: statusError(err) })
            limiter.addRateLimited(k)
          }
        }
        queue.done(k)
        if ((succeeded & 1023) === 0) await Promise.resolve() // let the writer in, as an informer would
      }
    })()
    for (let b = 0; b < n; b += BATCH) {
      await Promise.resolve() // the reconciler's writer awaits its write transaction once per batch
      const end = Math.min(n, b + BATCH)
      for (let i = b; i < end; i++) {
        cache.set(i, { id: i, status: statusPending() })
        queue.add(i)
      }
    }
    await worker
    return cache
  })
  return { rate: n / r.seconds, allocated: r.allocated, retained: r.retained }
}

// ---- status write-back on its own ----

function writeBack(n: number): { cas: number; batch: number; insert: number } {
  const statusIndex = newStatusIndex<BenchObject>((o) => o.status)
  const table = new Table<BenchObject>({ name: 'wb', primary: idIndex, indexes: [statusIndex] })
  const db = new DB({ tables: [table] })
  const fill = db.tryWriteTxn(table)!
  for (let i = 0; i < n; i++) table.insert(fill, { id: i, status: statusPending() })
  fill.commit()
  const entries = [...table.all(db.readTxn()).entries()]
  forceGc()
  let t0 = performance.now()
  const done: Status = { kind: 'done', updatedAt: Date.now(), id: 1 }
  for (let b = 0; b < n; b += BATCH) {
    const txn = db.tryWriteTxn(table)!
    for (let i = b; i < Math.min(n, b + BATCH); i++) {
      const e = entries[i]!
      if (!table.compareAndSwap(txn, e.revision, { id: e.object.id, status: done }).ok) throw new Error('cas failed')
    }
    txn.commit()
  }
  const cas = n / ((performance.now() - t0) / 1000)
  // The same through one TableBatch per transaction (what the reconciler's write-back uses).
  const entries2 = [...table.all(db.readTxn()).entries()]
  forceGc()
  t0 = performance.now()
  const done1: Status = { kind: 'done', updatedAt: Date.now(), id: 3 }
  for (let b = 0; b < n; b += BATCH) {
    const txn = db.tryWriteTxn(table)!
    const wb = table.batch(txn)
    for (let i = b; i < Math.min(n, b + BATCH); i++) {
      const e = entries2[i]!
      if (!wb.compareAndSwap(e.revision, { id: e.object.id, status: done1 })) throw new Error('cas failed')
    }
    txn.commit()
  }
  const batch = n / ((performance.now() - t0) / 1000)
  forceGc()
  t0 = performance.now()
  const done2: Status = { kind: 'done', updatedAt: Date.now(), id: 2 }
  for (let b = 0; b < n; b += BATCH) {
    const txn = db.tryWriteTxn(table)!
    for (let i = b; i < Math.min(n, b + BATCH); i++) table.insert(txn, { id: i, status: done2 })
    txn.commit()
  }
  const insert = n / ((performance.now() - t0) / 1000)
  return { cas, batch, insert }
}

// ---- full reconciliation against a slow device ----
//
// 200 rules on a device whose every call takes 5 ms (a timer: the latency of a round trip). The
// device holds rules id -> value and answers get, put, del, list, and putMany/delMany (one call for
// up to 50 rules). Before each measured full reconciliation the device drifts: 10% of the rules
// changed, 10% removed, 20 extra rules added. Measured: the time of `triggerFullReconciliation()`
// and the device calls it made. Variants:
// - PerObject: Update per rule (get, then put when it differs: an Update must say whether the target
//   changed), prune lists the device and deletes the extras one by one;
// - UserCache: the same, but prune keeps the listing and Update consults it (the user's own cache);
// - Batch: `batchOperations` (putMany of every rule, 50 per call) and a prune that deletes the
//   extras with delMany: no diff, every rule written;
// - Listing: the reconciler's listing hook (`operations.list` + `inSync`) with single operations
//   (Update only puts: it is called only for what the listing lacks or has otherwise);
// - ListingBatch: the listing hook and `batchOperations`.

const RULES = 200
const DEVICE_MS = 5
/** The most rules one putMany or delMany call takes. */
const DEVICE_BATCH = 50

interface Rule {
  readonly id: number
  readonly value: number
  readonly status: Status
}

class Device {
  readonly rules = new Map<number, number>()
  calls = 0
  private call(): Promise<void> {
    this.calls++
    return new Promise((r) => setTimeout(r, DEVICE_MS))
  }
  async get(id: number): Promise<number | undefined> {
    await this.call()
    return this.rules.get(id)
  }
  async put(r: Rule): Promise<void> {
    await this.call()
    this.rules.set(r.id, r.value)
  }
  async del(id: number): Promise<void> {
    await this.call()
    this.rules.delete(id)
  }
  async list(): Promise<Array<[number, number]>> {
    await this.call()
    return [...this.rules]
  }
  /** Puts the rules, DEVICE_BATCH per call. */
  async putMany(rs: readonly Rule[]): Promise<void> {
    for (let i = 0; i < rs.length; i += DEVICE_BATCH) {
      await this.call()
      for (const r of rs.slice(i, i + DEVICE_BATCH)) this.rules.set(r.id, r.value)
    }
  }
  /** Deletes the rules, DEVICE_BATCH per call. */
  async delMany(ids: readonly number[]): Promise<void> {
    for (let i = 0; i < ids.length; i += DEVICE_BATCH) {
      await this.call()
      for (const id of ids.slice(i, i + DEVICE_BATCH)) this.rules.delete(id)
    }
  }
}

type DeviceVariant = 'PerObject' | 'UserCache' | 'Batch' | 'Listing' | 'ListingBatch'

/** One measured full reconciliation of RULES rules after a drift; returns ms and device calls. */
async function deviceFull(variant: DeviceVariant, seed: number): Promise<{ ms: number; calls: number }> {
  const dev = new Device()
  const ruleIndex = defineIndex<Rule, number>({ name: 'id', key: (r) => r.id, unique: true })
  const statusIndex = newStatusIndex<Rule>((r) => r.status)
  const table = new Table<Rule>({ name: 'rules', primary: ruleIndex, indexes: [statusIndex] })
  const db = new DB({ tables: [table] })
  let cache: Map<number, number> | undefined // UserCache: the listing prune took
  const listed = (obj: [number, number]): Rule => ({ id: obj[0], value: obj[1], status: LISTED_STATUS })
  const listing = variant === 'Listing' || variant === 'ListingBatch'
  const operations: Operations<Rule> = {
    update: listing
      ? (r) => dev.put(r)
      : async (r, ctx) => {
          // UserCache: during a full reconciliation, the listing its prune took says what the device holds
          const cur = cache !== undefined && ctx.full ? cache.get(r.id) : await dev.get(r.id)
          if (cur === r.value) return false
          await dev.put(r)
          return true
        },
    delete: async (r) => dev.del(r.id),
    ...(!listing
      ? {
          prune: async (desired: Iterable<Rule>) => {
            const want = new Set<number>()
            for (const r of desired) want.add(r.id)
            const all = await dev.list()
            if (variant === 'UserCache') cache = new Map(all)
            const extras = all.filter(([id]) => !want.has(id)).map(([id]) => id)
            if (variant === 'Batch') await dev.delMany(extras)
            else for (const id of extras) await dev.del(id)
          },
        }
      : {
          list: async () => (await dev.list()).map(listed),
          inSync: (d: Rule, l: Rule) => d.value === l.value,
        }),
  }
  const rec = new Reconciler<Rule>({
    db,
    table,
    statusIndex,
    getObjectStatus: (r) => r.status,
    setObjectStatus: (r, status) => ({ ...r, status }),
    operations,
    ...(variant === 'ListingBatch' || variant === 'Batch'
      ? {
          batchOperations: {
            updateBatch: async (entries) => dev.putMany(entries.map((e) => e.object)),
            deleteBatch: async (entries) => dev.delMany(entries.map((e) => e.object.id)),
          },
        }
      : {}),
  })
  await rec.start()
  try {
    const txn = await db.writeTxn(table)
    for (let i = 0; i < RULES; i++) table.insert(txn, { id: i, value: i, status: statusPending() })
    await rec.waitForRevision(table.revision(txn.commit()))
    // The drift (the same for every variant with the same seed).
    const ids = shuffle([...dev.rules.keys()], rng(seed))
    for (let i = 0; i < RULES / 10; i++) dev.rules.set(ids[i]!, -1)
    for (let i = RULES / 10; i < RULES / 5; i++) dev.rules.delete(ids[i]!)
    for (let i = 0; i < 20; i++) dev.rules.set(10_000 + i, 1)
    cache = undefined
    dev.calls = 0
    const t0 = performance.now()
    const report = await rec.triggerFullReconciliation()
    const ms = performance.now() - t0
    if (report.errors > 0) throw new Error(`device bench ${variant}: ${report.errors} errors`)
    const want = [...table.all(db.readTxn())].map((r) => `${r.id}=${r.value}`).join()
    const got = [...dev.rules]
      .sort((a, b) => a[0] - b[0])
      .map(([id, v]) => `${id}=${v}`)
      .join()
    if (got !== want) throw new Error(`device bench ${variant}: the device does not hold the rules after the full reconciliation`)
    return { ms, calls: dev.calls }
  } finally {
    await rec.stop()
  }
}

const LISTED_STATUS = statusDone()

async function deviceResults(runs: number): Promise<Result[]> {
  const out: Result[] = []
  const figures = new Map<DeviceVariant, { ms: number; calls: number }>()
  for (const variant of ['PerObject', 'UserCache', 'Batch', 'Listing', 'ListingBatch'] as const) {
    const rs: Array<{ ms: number; calls: number }> = []
    for (let i = 0; i < runs; i++) rs.push(await deviceFull(variant, 7 + i))
    figures.set(variant, { ms: median(rs.map((r) => r.ms)), calls: median(rs.map((r) => r.calls)) })
  }
  const base = figures.get('PerObject')!
  for (const [variant, f] of figures) {
    const name = `Full_200Rules_5msDevice_${variant}`
    const vs = variant === 'PerObject' ? {} : { baseline: 'PerObject', baselineValue: base.ms }
    out.push({ name, unit: 'ms', value: f.ms, ...vs, note: 'full reconciliation after a drift: 20 rules changed, 20 removed, 20 extras' })
    out.push({
      name: `${name}_Calls`,
      unit: 'calls',
      value: f.calls,
      ...(variant === 'PerObject' ? {} : { baseline: 'PerObject', baselineValue: base.calls }),
    })
  }
  return out
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const n = opts.quick ? 100_000 : 1_000_000
  const label = opts.quick ? '100k' : '1M'
  const runs = opts.quick ? 1 : 3
  // Warm-up (JIT) at a small size, both sides.
  await reconcilerRun(20_000, 0.1)
  await workqueueRun(20_000, 0.1)
  await floorRun(20_000)

  const results: Result[] = []
  for (const [variant, frac] of [
    ['', 0],
    ['_Fail10pctOnce', 0.1],
  ] as const) {
    const rec: Figures[] = []
    const wq: Figures[] = []
    for (let i = 0; i < runs; i++) {
      rec.push(await reconcilerRun(n, frac))
      wq.push(await workqueueRun(n, frac))
    }
    const m = (fs: Figures[], f: keyof Figures) => median(fs.map((x) => x[f]))
    const name = `Reconciler_${label}${variant}`
    results.push({
      name,
      unit: 'objects/s',
      value: m(rec, 'rate'),
      baseline: 'workqueue',
      baselineValue: m(wq, 'rate'),
      note: 'end to end: insert pending, until the last is done',
    })
    results.push({
      name: `${name}_Allocated`,
      unit: 'bytes/object',
      value: m(rec, 'allocated'),
      baseline: 'workqueue',
      baselineValue: m(wq, 'allocated'),
    })
    results.push({
      name: `${name}_Retained`,
      unit: 'bytes/object',
      value: m(rec, 'retained'),
      baseline: 'workqueue',
      baselineValue: m(wq, 'retained'),
      note: 'table (objects, 3 indexes) or Map cache alive; both keep a status per object',
    })
  }
  // The floor, against the reconciler's figures of the first variant.
  const floor: Figures[] = []
  for (let i = 0; i < runs; i++) floor.push(await floorRun(n))
  const recRate = results[0]!.value
  const recAllocated = results[1]!.value
  results.push({
    name: `Floor_${label}`,
    unit: 'objects/s',
    value: median(floor.map((f) => f.rate)),
    baseline: 'reconciler',
    baselineValue: recRate,
    note: 'the same statedb work by hand (changes, clone, CAS done)',
  })
  results.push({
    name: `Floor_${label}_Allocated`,
    unit: 'bytes/object',
    value: median(floor.map((f) => f.allocated)),
    baseline: 'reconciler',
    baselineValue: recAllocated,
  })
  results.push({
    name: `Floor_${label}_Retained`,
    unit: 'bytes/object',
    value: median(floor.map((f) => f.retained)),
    baseline: 'reconciler',
    baselineValue: results[2]!.value,
    note: 'the table alone (objects, statuses, 3 indexes): what the reconciler retains too',
  })
  const wb = writeBack(opts.quick ? 100_000 : 300_000)
  results.push({
    name: 'StatusWriteBack_CAS_1000',
    unit: 'objects/s',
    value: wb.cas,
    baseline: 'Insert_1000',
    baselineValue: wb.insert,
    note: 'compare-and-swap of a done status, 1000 per txn',
  })
  results.push({
    name: 'StatusWriteBack_Batch_1000',
    unit: 'objects/s',
    value: wb.batch,
    baseline: 'Insert_1000',
    baselineValue: wb.insert,
    note: 'the same through table.batch(txn)',
  })
  results.push(...(await deviceResults(opts.quick ? 1 : 3)))
  return results
}
