// Writes fenced by a lease term: refused once the term is over (nothing reaches the server), cut off
// when the term ends mid-request, never awaited past the term's deadline; the cluster's write fence
// covers writes that name none (GETs and `fence: null` excepted); and a Target's precondition makes
// a late write fail instead of overwriting a newer value.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { FencedError, NOT_LEADING, Target, desired, type KubeObject, type WriteFence } from '@statewright/k8s'
import { wallNow } from '../src/lease.ts'
import { clusterFor, startServer } from './helpers.ts'

/** A term the test controls: valid until `end()` or its deadline. */
function term(deadlineMs = 60_000): WriteFence & { end(): void } {
  const ctrl = new AbortController()
  const until = wallNow() + deadlineMs
  let over = false
  return {
    lease: 'test-lease',
    transitions: 7,
    signal: ctrl.signal,
    valid: () => !over && wallNow() < until,
    validUntil: () => until,
    end: () => {
      over = true
      ctrl.abort(new Error('term ended'))
    },
  }
}

const CM = (name: string, v: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
  data: { v },
})
const cmPath = '/api/v1/namespaces/default/configmaps'
const writes = (server: Awaited<ReturnType<typeof startServer>>) =>
  server.control.requestLog().filter((e) => e.method !== 'GET' && e.path.startsWith(cmPath))

test('a write whose term is over is refused before anything is sent; a valid one goes', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    const t = term()
    await cluster.request({ method: 'POST', path: cmPath, body: CM('a', '1'), fence: t })
    t.end()
    server.control.clearRequestLog()
    await cluster.request({ method: 'POST', path: cmPath, body: CM('b', '1'), fence: t }).then(
      () => assert.unreachable('sent after the term ended'),
      (err) => {
        assert.instance(err, FencedError)
        assert.match((err as Error).message, /not sent: the term of lease test-lease \(7\) is over/)
      },
    )
    await cluster
      .request({ method: 'POST', path: cmPath, body: CM('c', '1'), fence: NOT_LEADING })
      .catch((e) => assert.instance(e, FencedError))
    assert.equal(writes(server), [], 'nothing reached the server')
    assert.is(cluster.stats.fenced, 2)
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test('a term that ends while its write waits for an answer cuts it off; the timeout ends at the term deadline', async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    const off = server.control.delay({ method: 'POST', path: cmPath, ms: 5000 })
    const t = term()
    const pending = cluster.request({ method: 'POST', path: cmPath, body: CM('slow', '1'), fence: t })
    await new Promise((r) => setTimeout(r, 50))
    const endedAt = performance.now()
    t.end()
    await pending.then(
      () => assert.unreachable('answered after the term ended'),
      (err) => {
        assert.instance(err, FencedError)
        assert.match((err as Error).message, /cut off/)
      },
    )
    assert.ok(performance.now() - endedAt < 2000, 'cut off at the end, not after the delay')
    // a term with 300 ms left: the request gives up at its deadline
    const short = term(300)
    const t0 = performance.now()
    await cluster.request({ method: 'POST', path: cmPath, body: CM('slow2', '1'), fence: short }).then(
      () => assert.unreachable('answered past the deadline'),
      (err) => assert.instance(err, FencedError),
    )
    const took = performance.now() - t0
    assert.ok(took < 2500, `gave up at the term's deadline (${took.toFixed(0)} ms), not after the 5 s delay`)
    off()
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test("the cluster's write fence covers writes that name none; GETs and fence: null are not fenced", async () => {
  const server = await startServer()
  const cluster = clusterFor(server)
  try {
    const t = term()
    const off = cluster.setWriteFence(() => t)
    await cluster.request({ method: 'POST', path: cmPath, body: CM('a', '1') })
    t.end()
    await cluster.request({ method: 'POST', path: cmPath, body: CM('b', '1') }).then(
      () => assert.unreachable('a write after the term'),
      (err) => assert.instance(err, FencedError),
    )
    const got = await cluster.request({ path: `${cmPath}/a` })
    assert.is(got.data.v, '1', 'reads are not fenced')
    await cluster.request({ method: 'POST', path: cmPath, body: CM('c', '1'), fence: null }) // explicitly unfenced
    off()
    await cluster.request({ method: 'POST', path: cmPath, body: CM('d', '1') }) // no fence any more
    assert.equal(
      writes(server).map((e) => e.method),
      ['POST', 'POST', 'POST'],
    )
  } finally {
    await cluster.close()
    await server.stop()
  }
})

test('Target with preconditions: a write made late on a stale version fails with 409 and overwrites nothing', async () => {
  const server = await startServer()
  const former = clusterFor(server, { userAgent: 'former' })
  const current = clusterFor(server, { userAgent: 'current' })
  try {
    const formerTerm = term()
    const a = new Target({ clusters: former, fieldManager: 'ctrl', preconditions: true, fence: () => formerTerm })
    const b = new Target({ clusters: current, fieldManager: 'ctrl', preconditions: true })
    await a.apply(desired(CM('cm', 'v1')))
    // the current holder writes a newer value (it knows nothing of the former's write)
    await b.apply(desired(CM('cm', 'v2')))
    // the former holder, stalled past its term, sends its write late: its term was valid at the
    // check (the first look), over when the answer comes; its precondition is the version it wrote
    let looks = 0
    const stalled: WriteFence = { ...formerTerm, valid: () => looks++ === 0 }
    const late = new Target({
      clusters: former,
      fieldManager: 'ctrl',
      preconditions: true,
      fence: () => stalled,
      observedVersion: () => undefined,
    })
    ;(late as unknown as { lastApplied: Map<string, string> }).lastApplied = (
      a as unknown as { lastApplied: Map<string, string> }
    ).lastApplied
    await late.apply(desired(CM('cm', 'v-late'))).then(
      () => assert.unreachable('the late write overwrote the newer value'),
      (err) => assert.match((err as Error).message, /409|Conflict|modified/),
    )
    formerTerm.end()
    const cm = await current.request({ path: `${cmPath}/cm` })
    assert.is(cm.data.v, 'v2', 'the newer value stands')
    // while its term is valid, a holder whose known version is stale reads the object and applies again
    const t = term()
    const c = new Target({ clusters: current, fieldManager: 'ctrl', preconditions: true, fence: () => t })
    await c.apply(desired(CM('cm', 'v3'))) // no known version: no precondition
    await b.apply(desired(CM('cm', 'v4'))) // another writer moves it on
    await c.apply(desired(CM('cm', 'v5'))) // stale precondition, term valid: read and apply again
    assert.is(c.stats.preconditionRetries, 1)
    assert.is((await current.request({ path: `${cmPath}/cm` })).data.v, 'v5')
    // a write for an object with no term is refused without a request
    const none = new Target({ clusters: current, fieldManager: 'ctrl', fence: () => null })
    server.control.clearRequestLog()
    await none.apply(desired(CM('cm', 'v6'))).then(
      () => assert.unreachable('written without a term'),
      (err) => assert.instance(err, FencedError),
    )
    assert.equal(writes(server), [])
  } finally {
    await former.close()
    await current.close()
    await server.stop()
  }
})

test.run()
