// RateLimiter: the burst goes at once (no promise), the rest queue in order at qps; stop() drops the
// queued callers and refuses later ones. Its queue (bottleneck) is imported at the first caller that
// has to wait, so these also check that callers queued while the import runs keep their order, and
// that stop() says what it said when the queue was made with the limiter (bottleneck's messages).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { RateLimiter } from '@statewright/reconciler'

test('the burst at once, then the queued callers in order, paced at qps', async () => {
  const l = new RateLimiter({ qps: 100, burst: 2 })
  assert.is(l.take(), undefined)
  assert.is(l.take(), undefined)
  const order: number[] = []
  const t0 = performance.now()
  await Promise.all([1, 2, 3].map((i) => Promise.resolve(l.take()).then(() => order.push(i))))
  assert.equal(order, [1, 2, 3])
  assert.ok(performance.now() - t0 >= 20, 'three tokens at 100 qps after the burst: about 30 ms')
  await l.stop()
})

test('stop() drops the queued callers and refuses later ones, whether or not anyone queued before', async () => {
  const l = new RateLimiter({ qps: 1, burst: 1 })
  l.take()
  const queued = l.take()
  assert.instance(queued, Promise)
  const stopped = l.stop()
  await queued!.then(
    () => assert.unreachable('dropped'),
    (err: Error) => assert.is(err.message, 'This limiter has been stopped.'),
  )
  await stopped
  await Promise.resolve(l.take()).then(
    () => assert.unreachable('refused'),
    (err: Error) => assert.is(err.message, 'This limiter has been stopped and cannot accept new jobs.'),
  )

  const never = new RateLimiter({ qps: 1, burst: 1 })
  await never.stop()
  assert.is(never.take(), undefined, 'a token left: the fast path, as before stop()')
  await Promise.resolve(never.take()).then(
    () => assert.unreachable('refused'),
    (err: Error) => assert.is(err.message, 'This limiter has been stopped and cannot accept new jobs.'),
  )
})

test.run()
