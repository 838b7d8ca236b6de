// The model-based restart test (issue 36): a Database-like operator (a Gadget owns a ConfigMap with its
// size, a create-only Secret with a generated password read back through a join, and an optional
// extra ConfigMap fixed at creation) runs as two leader-elected replicas while a seeded random walk
// creates, updates and deletes Gadgets, makes fns throw at random, slows the LISTs of each kind,
// restarts replicas and moves the leadership. A plain Map is the model.
// Invariants, checked throughout:
// - no child is deleted while its Gadget exists (every child is wanted by every successful run);
// - a generated password is never replaced while its Gadget exists;
// - every waitForConvergence({ errors: 'wait' }) that returns is true at that moment: each Gadget
//   has exactly its children, with its current size, and no deleted Gadget's child is left.
// Follows controller-runtime's start-up tests (pkg/internal/controller/controller_test.go: workers
// start only after the caches synced; a failed Reconcile is retried, never acted on) and its
// leader-election hand-over (pkg/manager: leader-only runnables start on election).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { randomBytes } from 'node:crypto'
import type { KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { rng } from '../../../bench/lib/rng.ts'
import { GADGET, createGadget, env, gadget, type Env } from './helpers.ts'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const SECRET = { apiVersion: 'v1', kind: 'Secret' }
const quiet = createLogger({ level: 'silent' })
const GADGETS = '/apis/example.com/v1/namespaces/default/gadgets'

interface ModelGadget {
  uid: string
  size: number
  extra: boolean
  /** The password first seen on the server for this Gadget (undefined until then). */
  password?: string
}

function childrenOf(name: string, extra: boolean): string[] {
  return [`ConfigMap/${name}-cm`, `Secret/${name}-pw`, ...(extra ? [`ConfigMap/${name}-extra`] : [])]
}

async function run(seed: number, steps: number) {
  const r = rng(seed)
  const e = await env()
  const model = new Map<string, ModelGadget>()
  /** Gadget name -> when the test deleted it (its children may go from then on). */
  const deletedAt = new Map<string, number>()
  let throwRatio = 0.3
  let replicaSeq = 0
  const violations: string[] = []

  const replica = () => {
    const identity = `r${replicaSeq++}`
    const m = new Manager({
      name: 'model-operator',
      cluster: e.cluster,
      logger: process.env.MODEL_DEBUG ? createLogger({ level: 'debug' }).child({ replica: identity }) : quiet,
      handleSignals: false,
      http: false,
      retry: { minMs: 10, maxMs: 100 },
      leaderElection: { namespace: 'default', identity, leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 100 },
    })
    const secrets = m.watch(SECRET)
    m.reconcile({
      for: GADGET,
      owns: [CM, SECRET],
      joins: [secrets],
      fn: (g, ctx) => {
        if (r.next() < throwRatio) throw new Error('a random failure')
        const name = g.metadata.name!
        const pw = ctx.get(secrets, secrets.primary.query(`default/${name}-pw`))
        const password = pw ? String((pw.data as any).password) : Buffer.from(randomBytes(8).toString('hex')).toString('base64')
        const spec = g.spec as { size: number; extra: boolean }
        const cm = (n: string, data: Record<string, string>): KubeObject => ({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: n, namespace: 'default' },
          data,
        })
        return {
          children: [
            cm(`${name}-cm`, { size: String(spec.size) }),
            { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-pw`, namespace: 'default' }, data: { password } },
            ...(spec.extra ? [cm(`${name}-extra`, {})] : []),
          ],
        }
      },
    })
    return { identity, m }
  }

  /** Every DELETE of a child whose Gadget exists is a violation; checks the log since the last look. */
  let logSeen = 0
  const checkDeletes = () => {
    const log = e.server.control.requestLog()
    for (const req of log.slice(logSeen)) {
      if (req.method !== 'DELETE' || req.status >= 300) continue
      const m = req.path.match(/\/(configmaps|secrets)\/(.+)$/)
      if (!m) continue
      const owner = m[2]!.replace(/-(cm|pw|extra)$/, '')
      const gone = deletedAt.get(owner)
      if (model.has(owner) || (gone !== undefined && req.time < gone))
        violations.push(`step: ${req.path} deleted while its Gadget ${owner} existed`)
    }
    logSeen = log.length
  }
  /** A password, once seen, never changes while its Gadget lives. */
  const checkPasswords = () => {
    for (const [name, g] of model) {
      const s = e.server.control.get(SECRET, `${name}-pw`, 'default')
      if (!s) continue
      const pw = String(s.data.password)
      if (g.password === undefined) g.password = pw
      else if (g.password !== pw) violations.push(`the password of ${name} was replaced`)
    }
  }
  /** What a converged cluster holds: exactly the model's children, current. */
  const checkConverged = (why: string) => {
    for (const [name, g] of model) {
      const cm = e.server.control.get(CM, `${name}-cm`, 'default')
      if (cm?.data?.size !== String(g.size)) violations.push(`${why}: ${name}-cm has size ${cm?.data?.size}, want ${g.size}`)
      if (!e.server.control.get(SECRET, `${name}-pw`, 'default')) violations.push(`${why}: ${name}-pw missing`)
      const extra = e.server.control.get(CM, `${name}-extra`, 'default')
      if (!!extra !== g.extra) violations.push(`${why}: ${name}-extra ${extra ? 'present' : 'missing'}`)
    }
    for (const name of deletedAt.keys()) {
      if (model.has(name)) continue
      for (const c of childrenOf(name, true)) {
        const [kind, n] = c.split('/')
        if (e.server.control.get(kind === 'Secret' ? SECRET : CM, n!, 'default')) violations.push(`${why}: ${c} of deleted ${name} left`)
      }
    }
  }

  const replicas = [replica(), replica()]
  const converge = async (why: string) => {
    // the wait is made on the replica that leads; leadership may move meanwhile: then on the other
    for (let tries = 0; ; tries++) {
      const leader = replicas.find((x) => x.m.isWorking()) ?? replicas[0]!
      try {
        await waitForConvergence(leader.m, { timeoutMs: tries < 3 ? 15_000 : 30_000, errors: 'wait' })
      } catch (err) {
        if (tries < 4) continue
        throw err
      }
      if (!leader.m.isWorking()) continue
      checkDeletes()
      checkPasswords()
      checkConverged(why)
      return
    }
  }

  let delays: Array<() => void> = []
  try {
    for (const x of replicas) await x.m.start()
    let seq = 0
    for (let step = 0; step < steps; step++) {
      const action = r.int(10)
      const names = [...model.keys()]
      if (action <= 2 || names.length === 0) {
        const name = `g${seq++}`
        const spec = { size: r.int(5), extra: r.next() < 0.5 }
        const created = await createGadget(e.cluster, gadget(name, spec))
        model.set(name, { uid: created.metadata.uid!, size: spec.size, extra: spec.extra })
      } else if (action <= 4) {
        const name = names[r.int(names.length)]!
        const size = r.int(5)
        await e.cluster.request({
          method: 'PATCH',
          path: `${GADGETS}/${name}`,
          body: { spec: { size } },
          contentType: 'application/merge-patch+json',
        })
        model.get(name)!.size = size
      } else if (action === 5) {
        const name = names[r.int(names.length)]!
        deletedAt.set(name, Date.now())
        model.delete(name)
        await e.cluster.request({ method: 'DELETE', path: `${GADGETS}/${name}` })
      } else if (action === 6) {
        // a pod restarted: a replica stops (the leader's term drains) and a new one starts, with slow LISTs
        for (const off of delays.splice(0)) off()
        for (const path of [/\/secrets$/, /\/configmaps$/, /\/gadgets$/])
          if (r.next() < 0.5) delays.push(e.server.control.delay({ method: 'GET', path, watch: false, ms: 200 + r.int(600) }))
        const i = r.int(2)
        await replicas[i]!.m.stop()
        replicas[i] = replica()
        await replicas[i]!.m.start()
      } else if (action === 7) {
        throwRatio = [0, 0.3, 0.6][r.int(3)]!
      } else {
        checkDeletes()
        checkPasswords()
        await converge(`step ${step}`)
      }
      checkDeletes()
      checkPasswords()
    }
    for (const off of delays.splice(0)) off()
    throwRatio = 0.2
    await converge('the end')
  } finally {
    for (const off of delays) off()
    for (const x of replicas) await x.m.stop()
    await e.stop()
  }
  return { violations, gadgets: model.size, deleted: deletedAt.size, replicas: replicaSeq }
}

// MODEL_SEEDS=3,4,5 explores other walks (a failing seed is a reproducible case)
const seeds = process.env.MODEL_SEEDS ? process.env.MODEL_SEEDS.split(',').map(Number) : [1, 2]
for (const seed of seeds) {
  test(`seed ${seed}: restarts, slow lists, throwing fns, leader changes: nothing wanted deleted, no password replaced, no wait early`, async () => {
    const res = await run(seed, 40)
    assert.equal(res.violations, [], res.violations.slice(0, 10).join('\n'))
    assert.ok(res.replicas > 2, 'the walk restarted replicas')
  })
}

test.run()
