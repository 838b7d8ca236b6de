// Leader election among three processes: the holder is frozen (SIGSTOP) and later killed (SIGKILL);
// the others take over within the lease duration (plus the polling period); a clean stop releases.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { fileURLToPath } from 'node:url'
import { wallNow } from '../src/lease.ts'
import { startServer } from './helpers.ts'
import { spawnJsonLines } from '../../../test/lib/child.ts'
import { checkFencing, waitUntil, type Period } from './leader-fixtures.ts'

const FAST = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 }
const CHILD = fileURLToPath(new URL('./leader-child.ts', import.meta.url))

const startChild = (id: string, kubeconfig: string) => spawnJsonLines(id, CHILD, { kubeconfig, identity: id, lease: 'procs', ...FAST })

test('three processes: frozen holder, killed holder, clean stop; never two leaders at once', async () => {
  const server = await startServer({ seed: 11 })
  const procs = ['p0', 'p1', 'p2'].map((id) => startChild(id, server.kubeconfig))
  const all = () => procs.flatMap((p) => p.lines)
  const started = () =>
    all()
      .filter((l) => l.ev === 'started')
      .sort((a, b) => a.at - b.at)
  const periods: Period[] = []
  try {
    await waitUntil(() => procs.every((p) => p.lines.some((l) => l.ev === 'ready')), 'three candidates', 30_000)
    await waitUntil(() => started().length >= 1, 'a leader', 5000)

    // 1. freeze the holder's process
    const first = started()[0]
    const frozen = procs.find((p) => p.id === first.id)!
    const frozenAt = wallNow()
    frozen.child.kill('SIGSTOP')
    await waitUntil(() => started().length >= 2, 'a takeover from the frozen holder', 5000)
    const second = started()[1]
    assert.ok(second.id !== first.id)
    const delay1 = second.at - frozenAt
    assert.ok(delay1 <= FAST.leaseDurationMs + 2 * FAST.retryPeriodMs * 1.2 + 500, `takeover after ${delay1.toFixed(0)} ms`)
    assert.is(second.transitions, first.transitions + 1)
    // thawed, the old holder finds its deadline passed: it stopped acting before the new leader began
    frozen.child.kill('SIGCONT')
    await waitUntil(() => frozen.lines.some((l) => l.ev === 'stopped'), 'the thawed holder to report its end', 5000)
    const end1 = frozen.lines.find((l) => l.ev === 'stopped')!
    assert.ok(end1.period.end <= second.at, `old term ended ${end1.period.end}, new began ${second.at}`)

    // 2. kill the current holder outright
    const killed = procs.find((p) => p.id === second.id)!
    await new Promise((r) => setTimeout(r, 300))
    const killedAt = wallNow()
    killed.child.kill('SIGKILL')
    // its acting period is bounded by its death
    periods.push({
      identity: second.id,
      lease: 'procs',
      transitions: second.transitions,
      resourceVersion: second.rv,
      start: second.at,
      end: killedAt,
    })
    await waitUntil(() => started().length >= 3, 'a takeover from the killed holder', 5000)
    const third = started()[2]
    const delay2 = third.at - killedAt
    assert.ok(delay2 <= FAST.leaseDurationMs + 2 * FAST.retryPeriodMs * 1.2 + 500, `takeover after ${delay2.toFixed(0)} ms`)
    await waitUntil(() => killed.exited, 'the killed process to be gone', 5000)

    // 3. clean stop of everyone left: the leader releases the lease
    const left = procs.filter((p) => !p.exited)
    for (const p of left) p.child.kill('SIGTERM')
    await waitUntil(() => left.every((p) => p.exited), 'clean exits', 10_000)
    for (const p of left)
      assert.ok(
        p.lines.some((l) => l.ev === 'exit'),
        `${p.id} exited cleanly`,
      )
    const lease = server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'procs', 'default')
    assert.is(lease.spec.holderIdentity, '')
    assert.is(lease.spec.leaseTransitions, started()[started().length - 1].transitions)
    for (const l of all()) if (l.ev === 'stopped') periods.push(l.period)
    const violations = all()
      .filter((l) => l.ev === 'violation')
      .map((l) => l.message)
    assert.equal(violations, [])
    const problems = checkFencing(periods)
    assert.equal(problems, [], problems.join('\n'))
    assert.ok(periods.length >= 3)
  } finally {
    for (const p of procs)
      if (!p.exited) {
        p.child.kill('SIGCONT')
        p.child.kill('SIGKILL')
      }
    await waitUntil(() => procs.every((p) => p.exited), 'children gone', 5000).catch(() => {})
    await server.stop()
  }
})

test.run()
