// PrimaryController with in-memory primaries and an in-memory secondary target whose observed
// table is written as the target changes (as a reflector would): stamps, ownership, repair,
// garbage collection, threadiness, requeue, resync, status write-back, stop (fixtures.ts).
// Kumori's controllerruntime scenarios (joins, enqueue, delete hook, re-put, timeouts,
// GC against the store) are in kumori.test.ts.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, Table, defineIndex, rememberCause } from '@statewright/statedb'
import { ownerKeyLabelValue, ownerStampKeys } from '@statewright/primary'
import { setup, idle } from './fixtures.ts'
import type { SpanLike, SpanOptionsLike, TracerLike } from '@statewright/statedb'

test('owner stamps: labels and annotations, prefix statewright.io or kumori; the label hashes keys that are not label values', async () => {
  assert.equal(ownerStampKeys(), { key: 'statewright.io/ownerkey', kind: 'statewright.io/ownerkind' })
  assert.equal(ownerStampKeys('kumori'), { key: 'kumori/ownerkey', kind: 'kumori/ownerkind' })
  assert.is(ownerKeyLabelValue('web-1'), 'web-1')
  const long = 'k'.repeat(100)
  for (const k of ['a.b/c', long, '-x', 'x_', 'sp ace']) {
    const v = ownerKeyLabelValue(k)
    assert.match(v, /^h-[0-9a-f]{40}$/, k)
    assert.is(ownerKeyLabelValue(k), v, 'stable')
  }
  const s = setup({ stampPrefix: 'kumori' })
  await s.initialize()
  await s.c.start()
  await s.put('a.b/c', 1)
  await s.put(long, 2)
  await idle(s.c)
  const objs = [...s.target.store.values()]
  assert.is(objs.length, 2)
  const byKey = new Map(objs.map((o) => [o.metadata.annotations!['kumori/ownerkey'], o]))
  assert.ok(byKey.has('a.b/c') && byKey.has(long), 'the annotation holds the exact key')
  assert.is(byKey.get('a.b/c')!.metadata.labels!['kumori/ownerkey'], ownerKeyLabelValue('a.b/c'))
  assert.is(byKey.get(long)!.metadata.annotations!['kumori/ownerkind'], 'App')
  assert.is(byKey.get(long)!.metadata.labels!['kumori/ownerkind'], 'App')
  assert.equal(s.statuses.get('a.b/c'), { seen: 1 })
  const synced = s.events.list
    .filter((e) => e.reason === 'Synced')
    .map((e) => e.message)
    .sort()
  assert.equal(
    synced,
    [
      `"default/thing-${ownerKeyLabelValue('a.b/c')}" synced successfully (created)`,
      `"default/thing-${ownerKeyLabelValue(long)}" synced successfully (created)`,
    ].sort(),
  )
  assert.ok(
    s.events.list.every((e) => e.namespace === 'apps'),
    'a pseudo-object in the configured namespace',
  )
  await s.c.stop()
})

test("tracer: every sync is a span primary.sync with the primary's key and kind, ended; a failed sync its error", async () => {
  const spans: Array<{
    name: string
    attributes: Record<string, unknown>
    status?: { code: number; message?: string }
    ended: boolean
    links?: unknown
  }> = []
  const tracer = {
    startActiveSpan: (name: string, ...rest: unknown[]) => {
      const fn = rest[rest.length - 1] as (span: SpanLike) => unknown
      const rec: (typeof spans)[number] = { name, attributes: {}, ended: false }
      if (rest.length > 1) rec.links = (rest[0] as SpanOptionsLike).links
      spans.push(rec)
      const span: SpanLike = {
        setAttribute: (k, v) => void (rec.attributes[k] = v),
        recordException: () => undefined,
        setStatus: (st) => void (rec.status = st),
        isRecording: () => !rec.ended,
        end: () => void (rec.ended = true),
      }
      return fn(span)
    },
  } as TracerLike
  let fail = false
  const s = setup({ tracer, retry: { minMs: 10, maxMs: 20 } })
  const sync = (s.c as any).options.sync
  ;(s.c as any).options.sync = (p: unknown, ctx: unknown) => {
    if (fail) throw new Error('boom')
    return sync(p, ctx)
  }
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.equal(
    spans.map((x) => [x.name, x.attributes, x.ended]),
    [['primary.sync', { 'statewright.function': 'test', 'k8s.object.key': 'a', 'k8s.object.kind': 'App' }, true]],
  )
  // a primary that remembers its cause (a traced watch event's receipt): the sync links to it
  const cause = { traceId: 'e'.repeat(32), spanId: 'f'.repeat(16), traceFlags: 1 }
  await s.db.write(s.prims, (t) => {
    const cur = s.prims.get(t, s.prims.primary.query('a'))!
    const next = { ...cur, revision: cur.revision + 1, value: { ...cur.value, spec: { n: 5 } } }
    rememberCause(next, cause)
    s.prims.insert(t, next)
  })
  await idle(s.c)
  assert.equal(spans.at(-1)?.links, [{ context: cause, attributes: { 'statewright.link': 'cause' } }])
  fail = true
  await s.put('a', 2)
  const deadline = Date.now() + 5000
  while (!spans.some((x) => x.status?.code === 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
  assert.match(spans.find((x) => x.status?.code === 2)?.status?.message ?? '', /sync of App "a" failed: boom/)
  fail = false
  await s.c.stop()
})

test('a status-only change never triggers a sync; a spec change syncs once', async () => {
  const s = setup()
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.equal(s.calls, ['a'], 'the status write-back changed the primary and did not sync it again')
  await s.put('a', 2)
  await idle(s.c)
  assert.equal(s.calls, ['a', 'a'])
  assert.is(s.target.store.get('thing-a')!.data && (s.target.store.get('thing-a')!.data as any).n, 2)
  assert.ok(s.events.list.some((e) => e.message === '"default/thing-a" synced successfully (updated)'))
  await s.c.stop()
})

test('a deleted or edited secondary is repaired (HandleSecondary); our own writes re-mark nothing', async () => {
  const s = setup()
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  const n0 = s.calls.length
  await s.target.drop('thing-a')
  await idle(s.c)
  assert.ok(s.target.store.has('thing-a'), 'recreated')
  const cur = s.target.store.get('thing-a')!
  await s.target.set({ ...cur, data: { n: 666 } })
  await idle(s.c)
  assert.equal(s.target.store.get('thing-a')!.data, { n: 1 }, 'the edit is undone')
  assert.is(s.calls.length, n0 + 2, 'one sync per vandalism')
  assert.is(s.c.stats.repairs, 2)
  await s.c.stop()
})

test('a secondary the observed table never held, deleted by a deletion that names no owner (a KV key deleted in the batch of its put), is made again', async () => {
  const s = setup()
  await s.initialize()
  // the first write is not mirrored into the observed table: its creation and deletion come in one batch
  const mirrored = s.target.set.bind(s.target)
  let first = true
  s.target.set = async (o) => {
    if (!first) return mirrored(o)
    first = false
    const v = { ...o, version: 1000 }
    s.target.store.set(o.name, v)
    return v
  }
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.ok(s.target.store.has('thing-a'))
  assert.is(s.observed.count(s.db.readTxn()), 0, 'the observed table never held it')
  // deleted: the table's change is a tombstone without our stamps (what a KV reflector can say of a DEL)
  s.target.store.delete('thing-a')
  await s.db.write(s.observed, (t) => {
    const stub = { kind: 'Thing', name: 'thing-a', version: 1001, metadata: {}, data: null }
    s.observed.insert(t, stub)
    s.observed.delete(t, stub)
  })
  await idle(s.c)
  assert.equal(s.target.store.get('thing-a')?.data, { n: 1 }, 'made again for the key our write was for')
  assert.is(s.c.stats.repairs, 1)
  await s.c.stop()
})

test('ErrResourceExists: a foreign object is never adopted; Warning event, error status, retried; created once it is gone', async () => {
  const s = setup()
  await s.initialize()
  await s.target.set({ kind: 'Thing', name: 'thing-a', version: 0, metadata: { labels: { app: 'theirs' } }, data: 'foreign' })
  await s.c.start()
  await s.put('a', 1)
  const errs = await idle(s.c)
  assert.is(errs.length, 1)
  assert.match(errs[0]!.error, 'Resource "default/thing-a" already exists and is not managed by this controller')
  assert.is(s.target.store.get('thing-a')!.data, 'foreign', 'untouched')
  const w = s.events.list.filter((e) => e.type === 'Warning')
  assert.ok(w.length >= 1)
  assert.equal(
    { reason: w[0]!.reason, message: w[0]!.message },
    { reason: 'ErrResourceExists', message: 'Resource "default/thing-a" already exists and is not managed by this controller' },
  )
  assert.match(String((s.statuses.get('a') as any)?.error), 'already exists')
  // retried with backoff: more than one attempt, still untouched
  const t0 = Date.now()
  while (s.c.stats.foreign < 3 && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 20))
  assert.ok(s.c.stats.foreign >= 3, 'retried')
  assert.is(s.target.store.get('thing-a')!.data, 'foreign')
  await s.target.drop('thing-a')
  assert.equal(await idle(s.c), [])
  assert.equal(s.target.store.get('thing-a')!.data, { n: 1 }, 'created once the foreign object is gone')
  assert.equal(s.statuses.get('a'), { seen: 1 })
  await s.c.stop()
})

test('GarbageSecondaries at start, after every table is initialized: orphans with our kind go, objects without our stamps stay; a deleted primary deletes its secondaries', async () => {
  const s = setup()
  const { key, kind } = ownerStampKeys()
  await s.target.set({ kind: 'Thing', name: 'orphan', version: 0, metadata: { annotations: { [key]: 'ghost', [kind]: 'App' } }, data: 1 })
  await s.target.set({
    kind: 'Thing',
    name: 'other-kind',
    version: 0,
    metadata: { annotations: { [key]: 'ghost', [kind]: 'Other' } },
    data: 1,
  })
  await s.target.set({ kind: 'Thing', name: 'plain', version: 0, metadata: {}, data: 1 })
  await s.c.start()
  await s.put('a', 1) // not initialized yet: no GC may run
  await new Promise((r) => setTimeout(r, 100))
  assert.ok(s.target.store.has('orphan'), 'no GC before every table is initialized')
  await s.initialize()
  await idle(s.c)
  assert.equal([...s.target.store.keys()].sort(), ['other-kind', 'plain', 'thing-a'])
  assert.is(s.c.stats.garbage, 1)
  await s.del('a')
  await idle(s.c)
  assert.equal([...s.target.store.keys()].sort(), ['other-kind', 'plain'])
  assert.ok(s.events.list.some((e) => e.message === '"default/thing-a" synced successfully (deleted)'))
  await s.c.stop()
})

test('threadiness: at most `concurrency` syncs at once, never two for one key; stop waits for syncs in flight', async () => {
  let running = 0
  let max = 0
  const perKey = new Set<string>()
  let overlap = 0
  let finished = 0
  const s = setup({
    concurrency: 3,
    sync: async (p) => {
      if (perKey.has(p.key)) overlap++
      perKey.add(p.key)
      running++
      max = Math.max(max, running)
      await new Promise((r) => setTimeout(r, 30))
      running--
      perKey.delete(p.key)
      finished++
      return { secondaries: [] }
    },
  })
  await s.initialize()
  await s.c.start()
  for (let i = 0; i < 12; i++) await s.put(`k${i}`, 1)
  for (let i = 0; i < 12; i++) await s.put(`k${i}`, 2) // changes while syncing
  await idle(s.c)
  assert.is(max, 3)
  assert.is(overlap, 0)
  // stop while syncs are in flight: stop resolves after they finish
  for (let i = 0; i < 6; i++) await s.put(`k${i}`, 3)
  await new Promise((r) => setTimeout(r, 10))
  const before = finished
  await s.c.stop()
  assert.is(running, 0, 'no sync running after stop')
  assert.ok(finished > before, 'the syncs in flight finished before stop resolved')
})

test('requeueAfterMs runs the key again later without an error; resync syncs every primary and runs GC', async () => {
  const times: number[] = []
  const s = setup({
    resyncIntervalMs: 300,
    sync: (p) => {
      if (p.key === 'r') times.push(Date.now())
      return { secondaries: [], requeueAfterMs: p.key === 'r' && times.length < 3 ? 60 : undefined }
    },
  })
  await s.initialize()
  await s.c.start()
  await s.put('r', 1)
  await s.put('q', 1)
  const t0 = Date.now()
  while (times.length < 3 && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 10))
  assert.is(times.length, 3)
  assert.ok(times[1]! - times[0]! >= 55 && times[2]! - times[1]! >= 55, `requeued after 60 ms: ${times.map((t) => t - times[0]!)}`)
  assert.is(s.c.stats.syncErrors, 0)
  assert.is(s.c.stats.requeues, 2)
  // an orphan appears; the resync deletes it and syncs q again
  const { key, kind } = ownerStampKeys()
  await s.target.set({
    kind: 'Thing',
    name: 'late-orphan',
    version: 0,
    metadata: { annotations: { [key]: 'gone', [kind]: 'App' } },
    data: 1,
  })
  const syncsBefore = s.c.stats.syncs
  const t1 = Date.now()
  while ((s.target.store.has('late-orphan') || s.c.stats.syncs < syncsBefore + 2) && Date.now() - t1 < 3000)
    await new Promise((r) => setTimeout(r, 10))
  assert.ok(!s.target.store.has('late-orphan'), 'GC at resync')
  assert.ok(s.c.stats.syncs >= syncsBefore + 2, 'every primary synced again')
  await s.c.stop()
})

test('stop waits for a resync whose GC is deleting; nothing is deleted after stop returns', async () => {
  const s = setup({ resyncIntervalMs: 50, sync: () => ({ secondaries: [] }) })
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  let deleting!: () => void
  const started = new Promise<void>((r) => (deleting = r))
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  const remove = s.target.delete.bind(s.target)
  let calls = 0
  s.target.delete = async (o, owned) => {
    // The first attempt (GC on seeing the orphan, inside the follow loop) fails; the next one is
    // the periodic resync's GC, which is held.
    if (++calls === 1) throw new Error('transient')
    deleting()
    await gate
    return remove(o, owned)
  }
  const { key, kind } = ownerStampKeys()
  await s.target.set({ kind: 'Thing', name: 'orphan', version: 0, metadata: { annotations: { [key]: 'gone', [kind]: 'App' } }, data: 1 })
  await started // the resync's GC is deleting the orphan now
  const stopping = s.c.stop().then(() => 'stopped')
  // A bound for a negative: stop must not return while the delete is held (it did within a few ms).
  const first = await Promise.race([stopping, new Promise((r) => setTimeout(() => r('still stopping'), 300))])
  assert.is(first, 'still stopping')
  release()
  assert.is(await stopping, 'stopped')
  assert.ok(!s.target.store.has('orphan'), 'the delete finished before stop returned')
})

test('a table read through ctx.txn without declaring it (not a join) triggers nothing when it changes', async () => {
  const ter = new Table<{ name: string; v: number }>({
    name: 'ter',
    primary: defineIndex<{ name: string; v: number }, string>({ name: 'name', key: (o) => o.name, unique: true }),
  })
  let seen = -1
  const s = setup({
    sync: (p, ctx) => {
      seen = ter.get(ctx.txn, ter.primary.query('cfg'))?.v ?? -1
      return { secondaries: [] }
    },
  })
  s.db.register(ter)
  await s.db.write(ter, (t) => ter.insert(t, { name: 'cfg', v: 7 }))
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  await idle(s.c)
  assert.is(seen, 7)
  const n = s.c.stats.syncs
  await s.db.write(ter, (t) => ter.insert(t, { name: 'cfg', v: 8 }))
  await new Promise((r) => setTimeout(r, 100))
  await idle(s.c)
  assert.is(s.c.stats.syncs, n, 'no sync for an undeclared table (declare it in options.joins: kumori.test.ts)')
  await s.c.stop()
})

test('a sync that throws is an error status, retried with backoff, and never drops the key', async () => {
  let fail = 2
  const s = setup({
    sync: (p) => {
      if (fail-- > 0) throw new Error('boom')
      return { secondaries: [], status: { ok: true } }
    },
  })
  await s.initialize()
  await s.c.start()
  await s.put('a', 1)
  const t0 = Date.now()
  while (fail >= 0 && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 10))
  assert.equal(await idle(s.c), [])
  assert.equal(s.statuses.get('a'), { ok: true })
  assert.is(s.c.stats.syncErrors, 2)
  await s.c.stop()
})

test.run()
