// Storms (issue 40).
// - Storm_ChangeLatency_Resync<N>: a derivation of N objects (a ConfigMap-like output per input) is
//   asked to derive everything again (a resync: rederive()); on the turn after the resync's first
//   run one object changes. The figure is the time from that change (made at the resync's first run,
//   written on the next turn of the event loop, as a watch event would arrive) to its fn run, median
//   of the runs; baseline: the same with fresh changes first turned off (FRESH_FIRST.enabled = false,
//   the whole resync in one round, as before issue 40), runs alternating off/on in one process.
// - Storm_RunsBeforeChange_Resync<N>: how many of the resync's fn runs came before the change's run
//   (median), with the same baseline.
// - Storm_ResyncDuration_<N>: the whole resync (rederive() to its promise), chunked against one round.
// - FullRound_ChangeLatency_<N>: an embedded reconciler's full reconciliation of N done objects on a
//   target whose update takes a turn of the event loop; at the round's first update one object
//   changes; the figure is the time from that change's commit to its Update, median of the runs;
//   baseline: the full round run whole before the incremental round (FULL_FRESH_FIRST off, as before
//   issue 40), runs alternating. FullRound_UpdatesBeforeChange_<N>: the full round's updates before it.
// - Standby_*: warm standby takeover (bench/lib/standby.ts): kill the leader without releasing its
//   Lease, then one change; kill to the new leader's first write, split into the wait for the Lease
//   and acquire-to-first-write.
import { DB, Table, defineIndex } from '@statewright/statedb'
import { Reconciler, newStatusIndex, statusPending, type Status } from '@statewright/reconciler'
import { FULL_FRESH_FIRST } from '../packages/reconciler/src/full.ts'
import { derive } from '@statewright/controller/parts'
import { FRESH_FIRST } from '../packages/controller/src/derive/derivation.ts'
import { median, type Result, type RunOptions } from './lib/index.ts'
import { standbyTakeover } from './lib/standby.ts'

interface Item {
  name: string
  namespace: string
  v: number
  labels: Record<string, string>
}
interface Cm {
  name: string
  namespace: string
  data: Record<string, string>
}
const byName = <T extends { name: string; namespace: string }>() =>
  defineIndex<T, string>({ name: 'name', key: (o) => `${o.namespace}/${o.name}`, unique: true })

async function stormOnce(n: number, fresh: boolean): Promise<{ latencyMs: number; before: number; resyncMs: number }> {
  const items = new Table<Item>({ name: 'items', primary: byName<Item>() })
  const out = new Table<Cm>({ name: 'configmaps', primary: byName<Cm>() })
  const db = new DB({ tables: [items, out] })
  const w = await db.writeTxn(items)
  const done = items.registerInitializer(w, 'bench')
  for (let i = 0; i < n; i++)
    items.insert(w, { name: `item-${i}`, namespace: 'default', v: 0, labels: { app: 'storm', shard: String(i % 7) } })
  done(w)
  w.commit()
  const target = `item-${Math.floor(n / 2)}`
  let resyncRuns = 0
  let before = -1
  let changedAt = 0
  let ranAt = 0
  let changed: Promise<void> | undefined
  let ran!: () => void
  const ranP = new Promise<void>((r) => (ran = r))
  const d = await derive<Item, Cm>({
    db,
    from: items,
    to: out,
    fn: (o, ctx) => {
      if (ctx.reason === 'resync') {
        resyncRuns++
        if (!changed) {
          // the change happens now (as on the server); it reaches the derivation as a write on the
          // next turn of the event loop, as a watch event would
          changedAt = performance.now()
          changed = new Promise<void>((resolve) =>
            setImmediate(() => void db.write(items, (w) => items.insert(w, { ...o, name: target, v: 1 })).then(() => resolve())),
          )
        }
      }
      if (o.name === target && o.v === 1 && ctx.reason === 'updated') {
        ranAt = performance.now()
        before = resyncRuns
        ran()
      }
      return {
        name: `cm-${o.name}`,
        namespace: o.namespace,
        data: { v: String(o.v), ...Object.fromEntries(Object.entries(o.labels).map(([k, v]) => [`label.${k}`, v])) },
      }
    },
  })
  await d.settled()
  let resyncMs = 0
  const was = FRESH_FIRST.enabled
  FRESH_FIRST.enabled = fresh
  try {
    const t0 = performance.now()
    await d.rederive()
    resyncMs = performance.now() - t0
    await changed
    await ranP
  } finally {
    FRESH_FIRST.enabled = was
    await d.stop()
  }
  return { latencyMs: ranAt - changedAt, before, resyncMs }
}

async function storm(n: number, runs: number): Promise<Result[]> {
  const on: Array<{ latencyMs: number; before: number; resyncMs: number }> = []
  const off: Array<{ latencyMs: number; before: number; resyncMs: number }> = []
  await stormOnce(n, true) // warm-up
  for (let i = 0; i < runs; i++) {
    off.push(await stormOnce(n, false))
    on.push(await stormOnce(n, true))
  }
  const m = (xs: typeof on, f: (x: (typeof on)[number]) => number) => median(xs.map(f))
  return [
    {
      name: `Storm_ChangeLatency_Resync${n}`,
      unit: 'ms',
      value: m(on, (x) => x.latencyMs),
      baseline: 'fresh changes first off (one round)',
      baselineValue: m(off, (x) => x.latencyMs),
      note: `median of ${runs}, change to its fn run during a resync of ${n}`,
    },
    {
      name: `Storm_RunsBeforeChange_Resync${n}`,
      unit: 'runs',
      value: m(on, (x) => x.before),
      baseline: 'fresh changes first off (one round)',
      baselineValue: m(off, (x) => x.before),
      note: `resync fn runs before the change's run (chunk ${FRESH_FIRST.chunk})`,
    },
    {
      name: `Storm_ResyncDuration_${n}`,
      unit: 'ms',
      value: m(on, (x) => x.resyncMs),
      baseline: 'fresh changes first off (one round)',
      baselineValue: m(off, (x) => x.resyncMs),
      note: 'rederive() to its promise: the cost of chunking the resync',
    },
  ]
}

interface Row {
  id: string
  v: number
  status: Status
}

async function fullRoundOnce(n: number, fresh: boolean): Promise<{ latencyMs: number; before: number }> {
  const statusIndex = newStatusIndex<Row>((r) => r.status)
  const table = new Table<Row>({
    name: 'rows',
    primary: defineIndex<Row, string>({ name: 'id', key: (r) => r.id, unique: true }),
    indexes: [statusIndex],
  })
  const db = new DB({ tables: [table] })
  let fullUpdates = 0
  let before = -1
  let changedAt = 0
  let ranAt = 0
  let ran!: () => void
  const ranP = new Promise<void>((r) => (ran = r))
  let changed: Promise<unknown> | undefined
  const target = `row-${n - 1}` // the last of the round's walk
  const rec = new Reconciler<Row>({
    db,
    table,
    statusIndex,
    getObjectStatus: (r) => r.status,
    setObjectStatus: (r, status) => ({ ...r, status }),
    fullReconciliationIntervalMs: 0,
    operations: {
      update: async (r, ctx) => {
        if (ctx.full) {
          fullUpdates++
          if (!changed) {
            changedAt = performance.now()
            changed = db.write(table, (w) => void table.insert(w, { id: target, v: 1, status: statusPending() }))
          }
        } else if (r.id === target && r.v === 1) {
          ranAt = performance.now()
          before = fullUpdates
          ran()
        }
        await new Promise<void>((resolve) => setImmediate(resolve)) // a device's answer: a turn of the event loop
        return false
      },
      delete: async () => {},
    },
  })
  await db.write(table, (w) => {
    for (let i = 0; i < n; i++) table.insert(w, { id: `row-${i}`, v: 0, status: statusPending() })
  })
  rec.start()
  await rec.waitForRevision(table.revision(db.readTxn()))
  const was = FULL_FRESH_FIRST.enabled
  FULL_FRESH_FIRST.enabled = fresh
  try {
    await rec.triggerFullReconciliation()
    await changed
    await ranP
  } finally {
    FULL_FRESH_FIRST.enabled = was
    await rec.stop()
  }
  return { latencyMs: ranAt - changedAt, before }
}

async function fullRound(n: number, runs: number): Promise<Result[]> {
  const on: Array<{ latencyMs: number; before: number }> = []
  const off: Array<{ latencyMs: number; before: number }> = []
  await fullRoundOnce(n, true) // warm-up
  for (let i = 0; i < runs; i++) {
    off.push(await fullRoundOnce(n, false))
    on.push(await fullRoundOnce(n, true))
  }
  const m = (xs: typeof on, f: (x: (typeof on)[number]) => number) => median(xs.map(f))
  const baseline = 'the full round whole first (as before)'
  return [
    {
      name: `FullRound_ChangeLatency_${n}`,
      unit: 'ms',
      value: m(on, (x) => x.latencyMs),
      baseline,
      baselineValue: m(off, (x) => x.latencyMs),
      note: `median of ${runs}, a change's commit to its Update during a full reconciliation of ${n} (roundSize 1000)`,
    },
    {
      name: `FullRound_UpdatesBeforeChange_${n}`,
      unit: 'updates',
      value: m(on, (x) => x.before),
      baseline,
      baselineValue: m(off, (x) => x.before),
      note: "the full round's updates before the change's",
    },
  ]
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const q = opts.quick
  return [...(await storm(5000, q ? 5 : 15)), ...(await fullRound(5000, q ? 5 : 15)), ...(await standbyTakeover(q ? 2 : 5))]
}
