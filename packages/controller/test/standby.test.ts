// Warm standby (issue 40): a replica that does not lead lists and watches before the leader dies;
// the leader is killed without releasing its Lease (its renewals stop, as in a crash), one object
// changes, and the standby takes over. Asserted on the test server's request log (events, not
// time): the standby's caches were listed and watched before the kill, and between its acquire and
// its first write the only LISTs are the catch-up, one per watched kind (Manager.catchUp: a new
// leader never acts on a view older than its predecessor's): no wait for a first sync, no relist
// storm. The timings are bench figures (npm run bench -- storm: Standby_*), not asserted here.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { takeoverOnce } from '../../../bench/lib/standby.ts'

const isList = (r: { method: string; watch: boolean; path: string }) => r.method === 'GET' && !r.watch && r.path.endsWith('/configmaps')

test('a standby takes over on warm caches: listed and watched before the kill, one catch-up LIST per watched kind before its first write', async () => {
  const t = await takeoverOnce(100)
  const selectors = (rs: typeof t.between) =>
    rs
      .filter(isList)
      .map((r) => r.query.labelSelector)
      .sort()
  const watched = ['role=src', 'statewright.io/owner=standby-bench']
  // warm: every watched kind listed and watched while a was leading
  assert.equal([...new Set(selectors(t.beforeKill))], watched)
  for (const s of watched)
    assert.ok(
      t.beforeKill.some((r) => r.watch && r.query.labelSelector === s),
      `watching ${s} before the kill`,
    )
  assert.ok(t.acquiredAt >= t.killedAt && t.firstWriteAt >= t.acquiredAt)
  // between acquire and first write: the catch-up lists, once per watched kind, nothing more
  assert.equal(selectors(t.between), watched)
})

test.run()
