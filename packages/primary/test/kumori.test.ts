// Kumori controllerruntime's primary/secondary scenarios that production drove (issue 29 items 2-5):
// joins declared, awaited and followed; a slow sync bounded; Enqueue/EnqueueAfter; a delete
// hook; a primary re-put with the same spec; GarbageSecondaries consulting the store itself; the
// annotation as the authoritative owner stamp.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Table, defineIndex } from '@statewright/statedb'
import { UsageError } from '@statewright/primary'
import { setup, idle } from './fixtures.ts'
import { waitFor as waitUntil } from '../../../test/lib/wait.ts'

interface Cfg {
  name: string
  v: number
}
const cfgTable = (name = 'cfg') =>
  new Table<Cfg>({ name, primary: defineIndex<Cfg, string>({ name: 'name', key: (o) => o.name, unique: true }) })

test('joins: no sync before they are loaded; a change of what a sync read syncs its readers again, and only them', async () => {
  const cfg = cfgTable()
  const seen = new Map<string, number>()
  const s = setup({
    joins: [cfg],
    sync: (p, ctx) => {
      // primary "a" reads cfg "x", "b" reads cfg "y", "all" lists the table
      const v = p.key === 'all' ? ctx.list(cfg).reduce((n, c) => n + c.v, 0) : (ctx.get(cfg, p.key === 'a' ? 'x' : 'y')?.v ?? -1)
      seen.set(p.key, v)
      return { secondaries: [] }
    },
  })
  s.db.register(cfg)
  const t0 = s.db.tryWriteTxn(cfg)!
  const loaded = cfg.registerInitializer(t0, 'cfg-reflector')
  t0.commit()
  await s.initialize()
  await s.c.start()
  for (const k of ['a', 'b', 'all']) await s.put(k, 1)
  await new Promise((r) => setTimeout(r, 150))
  assert.is(s.c.stats.syncs, 0, 'nothing synced while the joined table loads')
  await s.db.write(cfg, (t) => {
    cfg.insert(t, { name: 'x', v: 10 })
    cfg.insert(t, { name: 'y', v: 20 })
    loaded(t)
  })
  await idle(s.c)
  assert.equal(Object.fromEntries(seen), { a: 10, b: 20, all: 30 }, 'every sync saw the loaded table')
  const n = s.c.stats.syncs
  await s.db.write(cfg, (t) => cfg.insert(t, { name: 'x', v: 11 }))
  await idle(s.c)
  assert.equal(Object.fromEntries(seen), { a: 11, b: 20, all: 31 })
  assert.is(s.c.stats.syncs, n + 2, 'a and all, not b')
  // a read of an undeclared table is refused: its changes would go unseen
  const other = cfgTable('other')
  s.db.register(other)
  const bad = setup({ sync: (_p, ctx) => (ctx.get(other, 'x'), { secondaries: [] }) })
  await bad.initialize()
  await bad.c.start()
  await bad.put('k', 1)
  const errors = await idle(bad.c)
  assert.match(errors[0]?.error ?? '', /not a declared join/)
  await bad.c.stop()
  await s.c.stop()
  assert.ok(UsageError)
})

test('a sync that hangs is aborted at syncTimeoutMs, fails and is retried; the other keys are not held longer than that', async () => {
  let hang = true
  const s = setup({
    syncTimeoutMs: 300,
    concurrency: 4,
    sync: async (p, ctx) => {
      if (p.key === 'slow' && hang) {
        hang = false
        // a request that ignores its signal for 1.5 s: far past the timeout
        await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => setTimeout(r, 1500), { once: true }))
      }
      return { secondaries: [], status: { ok: ctx.signal.aborted ? 'late' : 'yes' } }
    },
  })
  await s.initialize()
  await s.c.start()
  const t0 = performance.now()
  await s.put('slow', 1)
  for (let i = 0; i < 10; i++) await s.put(`k${i}`, 1)
  await waitUntil(() => [...Array(10).keys()].every((i) => s.statuses.has(`k${i}`)), 'the other keys synced', 10_000)
  const took = performance.now() - t0
  assert.ok(took < 5000, `the other keys synced in ${Math.round(took)} ms, not after the hanging request`)
  await waitUntil(() => (s.statuses.get('slow') as { ok?: string } | undefined)?.ok === 'yes', 'slow retried after its timeout', 10_000)
  assert.ok(s.c.stats.syncErrors >= 1)
  assert.equal(await idle(s.c), [])
  await s.c.stop()
})

test('a slow secondary write is bounded by syncTimeoutMs: the other keys of the round are not held by it (issue 36, bug 9)', async () => {
  const s = setup({ syncTimeoutMs: 300, concurrency: 4 })
  // the target's write of one key ignores its signal for 5 s, once
  const apply = s.target.apply.bind(s.target)
  let slow = true
  s.target.apply = async (o, owned) => {
    if (o.name === 'thing-slow' && slow) {
      slow = false
      await new Promise((r) => setTimeout(r, 5000))
    }
    return apply(o, owned)
  }
  await s.initialize()
  await s.c.start()
  const t0 = performance.now()
  await s.put('slow', 1)
  for (let i = 0; i < 10; i++) await s.put(`k${i}`, 1)
  await waitUntil(() => [...Array(10).keys()].every((i) => s.target.store.has(`thing-k${i}`)), 'the other keys written', 10_000)
  const took = performance.now() - t0
  // the slow write holds its round for at most the timeout (300 ms), not its 5 s
  assert.ok(took < 4000, `the other keys were written after ${Math.round(took)} ms, held by the slow write`)
  await waitUntil(() => s.target.store.has('thing-slow'), 'the slow key retried and written', 10_000)
  assert.ok(s.c.stats.syncErrors >= 1, 'the timed-out write failed the sync (retried)')
  await s.c.stop()
})

test('a deleted primary whose onDelete hook keeps failing keeps its secondaries through periodic GC (issue 36, bug 9)', async () => {
  let hooks = 0
  const s = setup({
    gcIntervalMs: 100,
    onDelete: () => {
      hooks++
      throw new Error('cleanup fails')
    },
  })
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.ok(s.target.store.has('thing-a'))
  const gcBefore = s.c.stats.garbage
  await s.del('a')
  // several GC passes and hook retries: the secondary stays while the hook fails
  // (the hook's backoff reaches 200 ms: eight tries span several 100 ms GC passes)
  await waitUntil(() => hooks >= 8, 'the hook retried', 10_000)
  assert.ok(s.target.store.has('thing-a'), 'kept while the delete hook fails')
  assert.is(s.c.stats.garbage, gcBefore, 'GC deleted nothing')
  await s.c.stop()
})

test('enqueue(key) syncs again now, enqueue(key, ms) later; an unknown key is skipped', async () => {
  const s = setup()
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.equal(s.calls, ['a'])
  s.c.enqueue('a')
  s.c.enqueue('nobody')
  await new Promise((r) => setTimeout(r, 30))
  await idle(s.c)
  assert.equal(s.calls, ['a', 'a'])
  const t0 = Date.now()
  s.c.enqueue('a', 200)
  await idle(s.c) // waits for the requeue too
  assert.equal(s.calls, ['a', 'a', 'a'])
  assert.ok(Date.now() - t0 >= 190)
  await s.c.stop()
  assert.throws(() => s.c.enqueue('a'), /before start/)
})

test('delete hook: runs before the secondaries are deleted; a failing hook is retried and keeps them until it succeeds', async () => {
  let fail = 2
  const hooks: string[] = []
  const s = setup({
    onDelete: (key) => {
      hooks.push(`${key}:${s.target.store.has(`thing-${key}`) ? 'before' : 'after'}`)
      if (fail-- > 0) throw new Error('cleanup not yet')
    },
  })
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.ok(s.target.store.has('thing-a'))
  await s.del('a')
  await s.c.settled(AbortSignal.timeout(5000))
  const t0 = Date.now()
  while (s.target.store.has('thing-a') && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20))
  assert.not.ok(s.target.store.has('thing-a'))
  assert.equal(hooks, ['a:before', 'a:before', 'a:before'], 'called until it succeeded, the secondaries kept meanwhile')
  await s.c.stop()
})

test('a primary re-put with the same spec is synced again (it gets a status); our own status write-back is not', async () => {
  const s = setup()
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.equal(s.calls, ['a'])
  // re-put by its owner: same spec, no status
  await s.db.write(s.prims, (t) => {
    const cur = s.prims.get(t, s.prims.primary.query('a'))!
    s.prims.insert(t, { key: 'a', revision: cur.revision + 1, value: { spec: { n: 1 } } })
  })
  await idle(s.c)
  assert.equal(s.calls, ['a', 'a'], 'synced again, once: the status it wrote back did not sync it a third time')
  assert.equal(s.statuses.get('a'), { seen: 1 })
  await s.c.stop()
})

test('GarbageSecondaries consults the store: a primary whose delete the table missed loses its secondaries and is not synced again', async () => {
  const store = new Set<string>()
  let gate: Promise<void> | undefined
  const s = setup({
    gcIntervalMs: 100,
    primaryKeys: async () => {
      const snapshot = new Set(store) // what the store holds when it is asked
      if (gate) await gate
      return snapshot
    },
  })
  await s.initialize()
  await s.c.start()
  for (const k of ['a', 'b']) {
    store.add(k)
    await s.put(k, 1)
  }
  await idle(s.c)
  assert.ok(s.target.store.has('thing-a') && s.target.store.has('thing-b'))
  // "a" is deleted in the store; the table never hears of it (its delete marker was lost)
  store.delete('a')
  await waitUntil(() => !s.target.store.has('thing-a'), 'the periodic GC to collect it', 5000)
  assert.ok(s.target.store.has('thing-b'))
  const calls = s.calls.length
  s.c.enqueue('a')
  await new Promise((r) => setTimeout(r, 100))
  await idle(s.c)
  assert.not.ok(s.target.store.has('thing-a'), 'not made again while the store lacks it')
  assert.is(s.calls.length, calls)
  // a primary created while the store was being read (the answer predates it) keeps its secondaries
  let open!: () => void
  gate = new Promise((r) => (open = r))
  const gc = s.c.gc()
  store.add('c')
  await s.put('c', 1)
  await waitUntil(() => s.target.store.has('thing-c'), 'c synced', 5000)
  open()
  gate = undefined
  await gc
  assert.ok(s.target.store.has('thing-c'), 'kept: newer than the store read')
  await s.c.stop()
})

test('the owner-key annotation is authoritative: an object with our labels but no annotation is not ours and never touched', async () => {
  const s = setup()
  await s.initialize()
  await s.c.start()
  await s.target.set({
    kind: 'Thing',
    name: 'labelled-only',
    version: 0,
    metadata: { labels: { 'statewright.io/ownerkey': 'gone', 'statewright.io/ownerkind': 'App' } },
    data: {},
  })
  await s.c.gc()
  await idle(s.c)
  assert.ok(s.target.store.has('labelled-only'))
  await s.c.stop()
})

test.run()
