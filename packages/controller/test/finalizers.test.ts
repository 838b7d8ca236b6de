// Finalizer end to end on the test server: the finalizer is added on first sight; a deletion runs the
// cleanup, which fails twice (visible as a FinalizerCleanup=False condition and in health, retried
// with backoff that our own condition writes do not cut short), then succeeds: the finalizer is
// removed and the object is gone. Another controller's finalizer is kept throughout.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB } from '@statewright/statedb'
import { Reflector, type KubeObject } from '@statewright/k8s'
import { findCondition, conditionsOf } from '@statewright/controller'
import { Finalizer, type FinalizerHealth } from '@statewright/controller/parts'
import { env, gadget, createGadget, objectTable, waitTable, GADGET, type Env } from './helpers.ts'

const NAME = 'example.com/cleanup'
const deferred = () => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/** Bounded poll of something no table or watch covers (the finalizer's health). */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.stop()
})

test('delete during cleanup failures: condition and health show them, backoff holds, then the object is gone', async () => {
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const calls: { name: string; at: number; attempt: number }[] = []
  const third = deferred(),
    release = deferred()
  const fin = new Finalizer({
    cluster: e.cluster,
    db,
    table,
    name: NAME,
    kind: GADGET,
    retry: { minMs: 300, maxMs: 5000, jitter: 0 },
    cleanup: async (obj, ctx) => {
      const mine = calls.filter((c) => c.name === obj.metadata.name).length + 1
      calls.push({ name: String(obj.metadata.name), at: Date.now(), attempt: ctx.attempt })
      if (mine <= 2) throw new Error(`bucket busy (${mine})`)
      third.resolve()
      await release.promise
    },
  })
  const reflector = new Reflector({ cluster: e.cluster, db, table, kind: GADGET, namespace: 'default' })
  const before = await createGadget(e.cluster, gadget('early', {}, { finalizers: ['other.example.com/keep'] }))
  fin.start()
  await reflector.start()
  try {
    await createGadget(e.cluster, gadget('g1'))
    const get = (name: string) => table.get(db.readTxn(), table.primary.query(`default/${name}`))
    const finalizers = (o: KubeObject | undefined) => (o?.metadata.finalizers ?? []) as string[]
    await waitTable(
      db,
      [table],
      () => finalizers(get('g1')).includes(NAME) && finalizers(get('early')).includes(NAME),
      'our finalizer on both objects',
    )
    assert.equal(finalizers(get('early')), ['other.example.com/keep', NAME], "another controller's finalizer is kept")
    assert.is(before.metadata.uid, get('early')!.metadata.uid)

    await e.cluster.request({ method: 'DELETE', path: '/apis/example.com/v1/namespaces/default/gadgets/g1' })
    // between attempts, health has the key, error, attempts and when the next one is due
    let seen: FinalizerHealth | undefined
    await until(() => {
      const h = fin.health()
      if (h.failing[0]?.nextRetryAt !== undefined) seen = h
      return seen !== undefined
    }, 'a failing key with its next retry')
    assert.is(seen!.level, 'degraded')
    assert.is(seen!.failing[0]!.key, 'default/g1')
    assert.match(seen!.failing[0]!.error, /^bucket busy \([12]\)$/)
    assert.ok(seen!.failing[0]!.nextRetryAt! > calls[0]!.at)
    assert.match(seen!.message, 'default/g1: bucket busy')

    await third.promise // the third attempt runs, and is held
    await waitTable(
      db,
      [table],
      () => /attempt 2: bucket busy \(2\)/.test(findCondition(conditionsOf(get('g1')!), 'FinalizerCleanup')?.message ?? ''),
      'the failure condition',
    )
    const cond = findCondition(conditionsOf(get('g1')!), 'FinalizerCleanup')!
    assert.is(cond.status, 'False')
    assert.is(cond.reason, 'CleanupFailed')
    assert.ok(get('g1')!.metadata.deletionTimestamp, 'still terminating, held by our finalizer')
    const h = fin.health()
    assert.equal(
      h.failing.map((f) => [f.key, f.attempts, f.error]),
      [['default/g1', 2, 'bucket busy (2)']],
    )
    assert.equal(
      calls.map((c) => c.attempt),
      [1, 2, 3],
    )
    // backoff: 300 ms, then 600 ms; the condition writes (object changes) did not trigger early retries
    assert.ok(calls[1]!.at - calls[0]!.at >= 280, `second attempt after ${calls[1]!.at - calls[0]!.at} ms`)
    assert.ok(calls[2]!.at - calls[1]!.at >= 580, `third attempt after ${calls[2]!.at - calls[1]!.at} ms`)

    release.resolve()
    await waitTable(db, [table], () => get('g1') === undefined, 'g1 to be gone')
    assert.is(e.server.control.get(GADGET, 'g1', 'default'), undefined)
    await until(() => fin.health().failing.length === 0, 'health to clear')
    assert.is(fin.health().level, 'ok')
    assert.is(calls.length, 3, 'no cleanup after success')
  } finally {
    release.resolve()
    await reflector.stop()
    await fin.stop()
  }
})

test('another finalizer keeps the object: ours is removed and a past failure is marked resolved', async () => {
  const table = objectTable()
  const db = new DB({ tables: [table] })
  let n = 0
  const fin = new Finalizer({
    cluster: e.cluster,
    db,
    table,
    name: NAME,
    kind: GADGET,
    retry: { minMs: 10, maxMs: 50 },
    cleanup: () => {
      if (++n === 1) throw new Error('once')
    },
  })
  await fin.start()
  const reflector = new Reflector({ cluster: e.cluster, db, table, kind: GADGET, namespace: 'default' })
  await reflector.start()
  try {
    const get = () => table.get(db.readTxn(), table.primary.query('default/early'))
    await waitTable(db, [table], () => ((get()?.metadata.finalizers ?? []) as string[]).includes(NAME), 'our finalizer')
    await e.cluster.request({ method: 'DELETE', path: '/apis/example.com/v1/namespaces/default/gadgets/early' })
    await waitTable(
      db,
      [table],
      () => {
        const o = get()
        return !!o && !((o.metadata.finalizers ?? []) as string[]).includes(NAME)
      },
      'our finalizer removed',
    )
    const o = get()!
    assert.equal(o.metadata.finalizers, ['other.example.com/keep'])
    const cond = findCondition(conditionsOf(o), 'FinalizerCleanup')!
    assert.equal([cond.status, cond.reason], ['True', 'CleanupSucceeded'])
    assert.is(n, 2, 'a successful cleanup is not run again, even when removing the finalizer needed a second try')
  } finally {
    await reflector.stop()
    await fin.stop()
  }
})

test('a cleanup past cleanupTimeoutMs fails (its signal aborts with a CleanupError), is let go and retried (controller-runtime ReconciliationTimeout)', async () => {
  const table = objectTable()
  const db = new DB({ tables: [table] })
  const signals: AbortSignal[] = []
  const fin = new Finalizer({
    cluster: e.cluster,
    db,
    table,
    name: NAME,
    kind: GADGET,
    retry: { minMs: 10, maxMs: 50 },
    cleanupTimeoutMs: 200,
    cleanup: (_obj, ctx) => {
      signals.push(ctx.signal)
      if (ctx.attempt === 1) return new Promise<void>(() => {}) // hangs and ignores its signal
    },
  })
  await fin.start()
  const reflector = new Reflector({ cluster: e.cluster, db, table, kind: GADGET, namespace: 'default' })
  await reflector.start()
  try {
    await createGadget(e.cluster, gadget('slow'))
    const get = () => table.get(db.readTxn(), table.primary.query('default/slow'))
    await waitTable(db, [table], () => ((get()?.metadata.finalizers ?? []) as string[]).includes(NAME), 'our finalizer')
    await e.cluster.request({ method: 'DELETE', path: '/apis/example.com/v1/namespaces/default/gadgets/slow' })
    await waitTable(db, [table], () => signals.length >= 2 && get() === undefined, 'the object gone after a second attempt')
    assert.is(signals[0]!.aborted, true, 'the hung attempt was told')
    assert.match(String((signals[0]!.reason as Error).message), /cleanup of default\/slow timed out after 200 ms/)
    assert.is(signals[1]!.aborted, false, 'the second attempt finished in time')
  } finally {
    await reflector.stop()
    await fin.stop()
  }
})

test('bad options are refused with a clear message', () => {
  const table = objectTable()
  const db = new DB({ tables: [table] })
  assert.throws(
    () => new Finalizer({ cluster: e.cluster, db, table, name: 'example.com/c', cleanup: () => undefined, cleanupTimeoutMs: -1 }),
    /finalizer "example.com\/c": cleanupTimeoutMs must be a number of ms, 0 or more \(got -1\)/,
  )
  assert.throws(
    () => new Finalizer({ cluster: e.cluster, db, table, name: 'cleanup', cleanup: () => undefined }),
    /finalizer "cleanup": must be a domain-qualified name such as "example.com\/cleanup"/,
  )
  assert.throws(
    () => new Finalizer({ cluster: e.cluster, db, table, name: NAME, cleanup: undefined as never }),
    /finalizer "example.com\/cleanup": cleanup must be a function/,
  )
})

test.run()
