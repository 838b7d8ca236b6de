// Fresh changes first (issue 40): a derivation derives an input's own change, a change of what it
// read and a due retry before the resync, requeue, new-term or initial-list work queued when both are
// pending (controller-runtime's priority queue, kubernetes-sigs/controller-runtime#3290). Each test
// names the controller-runtime test it follows (pkg/controller/priorityqueue/priorityqueue_test.go,
// and the bugs #3330 and #3540); every ordering assertion counts fn runs, never time, and fails with
// FRESH_FIRST.enabled = false (the whole backlog in one round, the behaviour before).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { derive, type Derivation } from '@statewright/controller/parts'
import type { RunReason } from '../src/derive/options.ts'
import { FRESH_FIRST } from '../src/derive/derivation.ts'

interface Item {
  name: string
  v: number
}
interface Out {
  name: string
  v: number
}
const byName = <T extends { name: string }>() => defineIndex<T, string>({ name: 'name', key: (o) => o.name, unique: true })
const N = 2000
/** Of N inputs derived in the backlog, at most this many may run before a fresh change (the chunk is 256: one chunk, and a second taken on a slow turn). */
const BOUND = N / 4

interface Run {
  name: string
  reason: RunReason
}

async function setup(
  opts: { n?: number; seed?: boolean; onRun?: (r: Run, i: number) => void; fail?: (o: Item, reason: RunReason) => boolean } = {},
) {
  const items = new Table<Item>({ name: 'items', primary: byName<Item>() })
  const out = new Table<Out>({ name: 'out', primary: byName<Out>() })
  const db = new DB({ tables: [items, out] })
  const log: Run[] = []
  const w = await db.writeTxn(items)
  const done = items.registerInitializer(w, 'test')
  if (opts.seed !== false) for (let i = 0; i < (opts.n ?? N); i++) items.insert(w, { name: `i-${i}`, v: 0 })
  done(w)
  w.commit()
  const start = () =>
    derive<Item, Out>({
      db,
      from: items,
      to: out,
      retry: { minMs: 1, maxMs: 5 },
      fn: (o, ctx) => {
        const r = { name: o.name, reason: ctx.reason }
        log.push(r)
        opts.onRun?.(r, log.length - 1)
        if (opts.fail?.(o, ctx.reason)) throw new Error('fails')
        return { name: o.name, v: o.v }
      },
    })
  const change = (name: string, v: number) => db.write(items, (w) => items.insert(w, { name, v }))
  return { db, items, out, log, start, change }
}

/** The index in `log` of the first run of `name` for `reason`. */
const runOf = (log: Run[], name: string, reason: RunReason) => log.findIndex((r) => r.name === name && r.reason === reason)

async function resyncWithChangeMidway(): Promise<{ before: number; log: Run[] }> {
  let changed: Promise<void> | undefined
  let base = 0
  const s = await setup({
    onRun: (r) => {
      // the change arrives while the resync is under way: after its first run, on the next turn
      if (r.reason === 'resync' && !changed)
        changed = new Promise<void>((resolve) => setImmediate(() => void s.change('i-1500', 1).then(() => resolve())))
    },
  })
  const d = await s.start()
  await d.settled()
  base = s.log.length
  await d.rederive()
  await changed
  await d.settled()
  await d.stop()
  const log = s.log.slice(base)
  const at = runOf(log, 'i-1500', 'updated')
  assert.ok(at >= 0, 'the changed input ran for its change')
  return { before: log.slice(0, at).filter((r) => r.reason === 'resync').length, log }
}

test('a change during a resync of 2,000 is derived before most of the resync (follows "gets pushed to the front if the priority increases")', async () => {
  const { before, log } = await resyncWithChangeMidway()
  assert.ok(before < BOUND, `${before} resync runs came before the change's run (bound ${BOUND})`)
  // "de-duplicates items": the changed input is not derived again for the resync after its change
  assert.is(log.filter((r) => r.name === 'i-1500').length, 1)
  assert.is(log.length, N)
})

test('with the priority off, the same change waits for the whole resync (the test above fails without the change)', async () => {
  const was = FRESH_FIRST.enabled
  FRESH_FIRST.enabled = false
  try {
    const { before } = await resyncWithChangeMidway()
    assert.ok(before >= BOUND, `${before} resync runs came first`)
  } finally {
    FRESH_FIRST.enabled = was
  }
})

test('a change during the initial list is derived before most of it; `to` is initialized only once all of it is derived (follows "returns high priority item ..." for the initial list)', async () => {
  let changed = false
  const s = await setup({
    onRun: (r) => {
      if (!changed) {
        changed = true
        setImmediate(() => void s.change('new', 1))
      }
    },
  })
  const d = await s.start()
  // `to` initialized means every input of the list is derived
  await new Promise<void>((resolve) => {
    const check = () => (s.out.initialized(s.db.readTxn())[0] ? resolve() : void s.out.initialized(s.db.readTxn())[1].wait().then(check))
    check()
  })
  assert.ok(s.out.count(s.db.readTxn()) >= N, `${s.out.count(s.db.readTxn())} outputs when "to" was initialized`)
  const at = runOf(s.log, 'new', 'created')
  assert.ok(at >= 0 && at < BOUND, `the new input ran as run ${at} of ${s.log.length}`)
  await d.stop()
})

test('a retry that became due during a resync runs before the rest of it (follows #3330, "returns high priority item that became ready before low priority item")', async () => {
  let changed = false
  let failedOnce = false
  let retried!: () => void
  const retriedP = new Promise<void>((r) => (retried = r))
  const s = await setup({
    fail: (o, reason) => {
      if (o.name !== 'i-7' || reason !== 'updated' || failedOnce) return false
      failedOnce = true
      return true
    },
    onRun: (r) => {
      if (r.name === 'i-7' && r.reason === 'retry') retried()
      if (r.reason === 'resync' && !changed) {
        changed = true
        setImmediate(() => void s.change('i-7', 1))
      }
      // a resync run takes a little work, so the backlog outlasts the retry's backoff (1-5 ms)
      if (r.reason === 'resync') for (let x = 0, t = performance.now(); performance.now() - t < 0.02; x++);
    },
  })
  const d = await s.start()
  await d.settled()
  const base = s.log.length
  await d.rederive()
  await retriedP
  await d.stop()
  const log = s.log.slice(base)
  const retry = runOf(log, 'i-7', 'retry')
  assert.ok(retry >= 0, 'the failed input was retried')
  const after = log.slice(retry).filter((r) => r.reason === 'resync').length
  assert.ok(after > 0, 'the retry ran before the last of the resync')
})

test('two resyncs asked together derive each input once; the promise resolves once all are derived (follows "de-duplicates items", "returns many items")', async () => {
  const s = await setup({ n: 600 })
  const d = await s.start()
  await d.settled()
  const base = s.log.length
  await Promise.all([d.rederive(), d.rederive()])
  assert.is(s.log.length - base, 600)
  await d.stop()
})

test('a change and a resync asked in the same turn: the input runs once, for its change (follows "will not decrease the priority")', async () => {
  const s = await setup({ n: 600 })
  const d: Derivation<Item, Out> = await s.start()
  await d.settled()
  const base = s.log.length
  const w = s.change('i-5', 1)
  const r = d.rederive()
  await Promise.all([w, r])
  await d.settled()
  const runs = s.log.slice(base).filter((x) => x.name === 'i-5')
  assert.equal(runs, [{ name: 'i-5', reason: 'updated' }])
  await d.stop()
})

test('stop during a resync resolves its rederive() and stops; a new term derives everything (follows #3540 and #3239: no hang on shutdown)', async () => {
  let stopping: Promise<void> | undefined
  let d!: Derivation<Item, Out>
  const s = await setup({
    onRun: (r) => {
      if (r.reason === 'resync' && !stopping) stopping = Promise.resolve().then(() => d.stop())
    },
  })
  d = await s.start()
  await d.settled()
  const base = s.log.length
  await d.rederive() // resolves although the backlog is dropped by stop
  await stopping
  assert.ok(s.log.length - base < N, 'the stop came before the end of the resync')
  assert.is(d.running, false)
  await d.rederive() // a stopped derivation does not hang a caller
  const before = s.log.length
  await d.start()
  await d.settled()
  const names = new Set(s.log.slice(before).map((r) => r.name))
  assert.is(names.size, N, 'the new term derived every input')
  await d.stop()
})

test.run()
