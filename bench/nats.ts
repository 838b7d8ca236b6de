// NATS JetStream KV benchmarks against a real nats-server (started here; `apt-get install -y
// nats-server`), side by side in the same process with hand-written baselines:
//
// - PutToSecondary: primaries put into a bucket, one at a time as fast as the server takes them;
//   the clock stops when the secondary of the last one (a key in a second bucket, written by CAS
//   through KvSecondaries) is there. Ours: NatsKvReflector -> PrimaryController (work table,
//   reconciler, concurrency 8) -> KvSecondaries, with a second reflector observing the secondaries.
//   Baseline: a Kumori-style controller: a KV watch into a Map cache, a dedup work queue (a queued
//   set and a processing set), 8 workers, per-item exponential rate-limited retries, the same sync
//   and the same KvSecondaries writes. primaries/s.
// - InitialSync: a bucket of N keys into a table (NatsKvReflector: one watch, one transaction) vs
//   the raw loop a client writes by hand: kv.keys() then kv.get() per key into a Map. keys/s.
// - BytesPerPrimary: heap growth per key of the reflector's table (KvRow objects, statedb's index
//   entries) vs the raw loop's Map of decoded values, both after full GCs.
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { Kvm, type KV } from '@nats-io/kv'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { PrimaryController } from '@statewright/primary'
import { KvSecondaries, NatsKvReflector, startNatsServer, type KvObject, type KvRow } from '@statewright/nats'
import { heapAfterGc, type Result, type RunOptions } from './lib/index.ts'

const CONCURRENCY = 8

const rowTable = (name: string) =>
  new Table<KvRow<any>>({ name, primary: defineIndex<KvRow<any>, string>({ name: 'key', key: (r) => r.key, unique: true }) })

/** f(primary): its secondary. */
const secondaryOf = (key: string, value: any): KvObject => ({ key: `sec.${key}`, value: { metadata: {}, data: value?.spec ?? null } })

/** Resolves when `n` distinct secondaries have been written (counted by the target wrapper). */
class Counting extends KvSecondaries {
  written = new Set<string>()
  want = 0
  done: () => void = () => {}
  override async apply(s: KvObject, owned: (e: KvObject) => boolean) {
    const r = await super.apply(s, owned)
    if (r.result !== 'foreign') {
      this.written.add(s.key)
      if (this.written.size >= this.want) this.done()
    }
    return r
  }
}

async function fill(kv: KV, n: number, prefix: string, value: (i: number) => string): Promise<void> {
  for (let i = 0; i < n; i += 500) {
    const ps: Promise<number>[] = []
    for (let j = i; j < Math.min(n, i + 500); j++) ps.push(kv.put(`${prefix}${j}`, value(j)))
    await Promise.all(ps)
  }
}

async function ours(nc: NatsConnection, n: number, run: number): Promise<number> {
  const kvm = new Kvm(nc)
  const prim = await kvm.create(`p${run}`, { history: 1 })
  const secKv = await kvm.create(`s${run}`, { history: 1 })
  const primaries = rowTable('prims')
  const observed = rowTable('secs')
  const db = new DB({ tables: [primaries, observed] })
  const target = new Counting({ kv: secKv, kind: 'Sec' })
  const r1 = await new NatsKvReflector({ nc, bucket: `p${run}`, db, table: primaries }).start()
  const r2 = await new NatsKvReflector({ nc, bucket: `s${run}`, db, table: observed }).start()
  const c = new PrimaryController<KvRow<any>>({
    name: 'bench',
    kind: 'Bench',
    db,
    primaries,
    concurrency: CONCURRENCY,
    secondaries: [{ kinds: ['Sec'], target, observed }],
    sync: (p) => ({ secondaries: [secondaryOf(p.key, p.value)] }),
  })
  await c.start()
  await r1.waitSynced()
  await r2.waitSynced()
  target.want = n
  const all = new Promise<void>((r) => (target.done = r))
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await prim.put(`k${i}`, JSON.stringify({ spec: { i } }))
  await all
  const secs = (performance.now() - t0) / 1000
  await c.stop()
  await r1.stop()
  await r2.stop()
  await prim.destroy()
  await secKv.destroy()
  return n / secs
}

/** The Kumori-style baseline: watch -> Map cache -> dedup queue -> workers with rate-limited retries. */
async function baseline(nc: NatsConnection, n: number, run: number): Promise<number> {
  const kvm = new Kvm(nc)
  const prim = await kvm.create(`bp${run}`, { history: 1 })
  const secKv = await kvm.create(`bs${run}`, { history: 1 })
  const target = new Counting({ kv: secKv, kind: 'Sec' })
  const cache = new Map<string, unknown>()
  const queued = new Set<string>()
  const processing = new Set<string>()
  const dirty = new Set<string>()
  const failures = new Map<string, number>()
  const queue: string[] = []
  let wake: (() => void) | undefined
  let stopped = false
  const add = (k: string) => {
    if (processing.has(k)) {
      dirty.add(k)
      return
    }
    if (queued.has(k)) return
    queued.add(k)
    queue.push(k)
    wake?.()
  }
  const owned = (e: KvObject) => (e.value as any)?.metadata?.annotations?.['kumori/ownerkey'] !== undefined
  const worker = async () => {
    while (!stopped) {
      const k = queue.shift()
      if (k === undefined) {
        await new Promise<void>((r) => (wake = r))
        continue
      }
      queued.delete(k)
      processing.add(k)
      try {
        const v = cache.get(k)
        const s = secondaryOf(k, v)
        await target.apply(
          {
            key: s.key,
            value: { ...(s.value as object), metadata: { annotations: { 'kumori/ownerkey': k, 'kumori/ownerkind': 'Bench' } } },
          },
          owned,
        )
        failures.delete(k)
      } catch {
        const f = (failures.get(k) ?? 0) + 1
        failures.set(k, f)
        setTimeout(() => add(k), Math.min(1000, 5 * 2 ** f))
      } finally {
        processing.delete(k)
        if (dirty.delete(k)) add(k)
      }
    }
  }
  const w = await prim.watch({})
  void (async () => {
    for await (const e of w) {
      if (e.operation === 'PUT') cache.set(e.key, e.json())
      else cache.delete(e.key)
      add(e.key)
    }
  })()
  const workers = Array.from({ length: CONCURRENCY }, worker)
  target.want = n
  const all = new Promise<void>((r) => (target.done = r))
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await prim.put(`k${i}`, JSON.stringify({ spec: { i } }))
  await all
  const secs = (performance.now() - t0) / 1000
  stopped = true
  w.stop()
  for (let i = 0; i < CONCURRENCY; i++) {
    const f = wake
    wake = undefined
    f?.()
    queue.push(undefined as never)
  }
  await Promise.race([Promise.all(workers), new Promise((r) => setTimeout(r, 100))])
  await prim.destroy()
  await secKv.destroy()
  return n / secs
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const server = await startNatsServer({ maxMemoryStore: '256MB', maxFileStore: '1GB' })
  const nc = await connect({ servers: server.url })
  const results: Result[] = []
  try {
    // -- KV put -> secondary applied
    const puts = opts.quick ? 500 : 3000
    const mine: number[] = []
    const base: number[] = []
    for (let i = 0; i < 3; i++) {
      base.push(await baseline(nc, puts, i))
      mine.push(await ours(nc, puts, i))
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    results.push({
      name: `PutToSecondary_${puts}`,
      unit: 'primaries/s',
      value: med(mine),
      baseline: 'Kumori-style watch + Map + dedup queue',
      baselineValue: med(base),
    })

    // -- initial sync of N keys, and bytes per primary
    const n = opts.quick ? 5000 : 50_000
    const kv = await new Kvm(nc).create('sync', { history: 1, max_bytes: 512 * 1024 * 1024 })
    await fill(kv, n, 'app.', (i) =>
      JSON.stringify({
        metadata: { name: `app-${i}`, labels: { team: `t${i % 20}` } },
        spec: { replicas: i % 5, image: `registry.example/app:${i % 100}` },
      }),
    )

    // raw loop: keys() then get() per key into a Map
    let heap0 = heapAfterGc()
    let t0 = performance.now()
    const map = new Map<string, unknown>()
    const keys: string[] = []
    for await (const k of await kv.keys()) keys.push(k)
    for (const k of keys) {
      const e = await kv.get(k)
      if (e && e.operation === 'PUT') map.set(k, e.json())
    }
    const rawRate = n / ((performance.now() - t0) / 1000)
    const rawBytes = (heapAfterGc() - heap0) / n
    if (map.size !== n) throw new Error(`raw loop read ${map.size} of ${n}`)
    keys.length = 0
    map.clear()

    heap0 = heapAfterGc()
    t0 = performance.now()
    const table = rowTable('sync')
    const db = new DB({ tables: [table] })
    const r = await new NatsKvReflector({ nc, bucket: 'sync', db, table }).start()
    await r.waitSynced()
    const rate = n / ((performance.now() - t0) / 1000)
    await r.stop()
    const bytes = (heapAfterGc() - heap0) / n
    if (table.count(db.readTxn()) !== n) throw new Error(`reflector read ${table.count(db.readTxn())} of ${n}`)
    results.push({
      name: `InitialSync_${n / 1000}k`,
      unit: 'keys/s',
      value: rate,
      baseline: 'kv.keys() + get loop',
      baselineValue: rawRate,
    })
    results.push({
      name: `BytesPerPrimary_${n / 1000}k`,
      unit: 'bytes/object',
      value: bytes,
      baseline: 'kv.keys() + get loop into a Map',
      baselineValue: rawBytes,
    })
    await kv.destroy()
  } finally {
    await nc.close()
    await server.stop()
  }
  return results
}
