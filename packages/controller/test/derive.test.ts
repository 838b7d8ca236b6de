// derive: incremental table -> table with joins, deletes, initialization, per-object errors with
// backoff, and cost proportional to the change (fn calls counted). A randomized test compares the
// output table with a plain recomputation over Maps after every step.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { DB, Table, defineIndex, setValidation } from '@statewright/statedb'
import { TerminalError } from '@statewright/controller'
import { derive, type Derivation } from '@statewright/controller/parts'
import { waitTable } from './helpers.ts'
import { desiredEquals } from '../src/manager/desired.ts'
import { statusPending } from '@statewright/reconciler'
import type { DesiredObject } from '@statewright/k8s'

setValidation(true)

interface Site {
  name: string
  team: string
  replicas: number
}
interface Team {
  name: string
  owner: string
}
interface Out {
  name: string
  site: string
  owner: string
  replicas: number
}
const siteName = defineIndex<Site, string>({ name: 'name', key: (s) => s.name, unique: true })
const teamName = defineIndex<Team, string>({ name: 'name', key: (t) => t.name, unique: true })
const outName = defineIndex<Out, string>({ name: 'name', key: (o) => o.name, unique: true })

function tables() {
  const sites = new Table<Site>({ name: 'sites', primary: siteName })
  const teams = new Table<Team>({ name: 'teams', primary: teamName })
  const out = new Table<Out>({ name: 'out', primary: outName })
  const db = new DB({ tables: [sites, teams, out] })
  return { sites, teams, out, db }
}
type T = ReturnType<typeof tables>

/** One output per replica, joined with the site's team for its owner; replicas < 0 throws. */
function start(t: T, extra: Partial<Parameters<typeof derive<Site, Out>>[0]> = {}): Promise<Derivation<Site, Out>> {
  return derive<Site, Out>({
    db: t.db,
    from: t.sites,
    joins: [t.teams],
    to: t.out,
    retry: { minMs: 5, maxMs: 20 },
    fn: (s, ctx) => {
      if (s.replicas < 0) throw new Error(`replicas must not be negative (${s.replicas})`)
      const owner = ctx.get(t.teams, teamName.query(s.team))?.owner ?? 'nobody'
      return Array.from({ length: s.replicas }, (_, i) => ({ name: `${s.name}-${i}`, site: s.name, owner, replicas: s.replicas }))
    },
    ...extra,
  })
}
const settle = (t: T, d: Derivation<any, any>) => d.waitFor(t.db.readTxn(), AbortSignal.timeout(5000))
const names = (t: T) =>
  t.out
    .all(t.db.readTxn())
    .toArray()
    .map((o) => `${o.name}:${o.owner}`)
    .sort()

test('derives, joins, deletes; fn runs only for what a change touches', async () => {
  const t = tables()
  await t.db.write([t.sites, t.teams], (w) => {
    t.teams.insert(w, { name: 'a', owner: 'alice' })
    for (let i = 0; i < 50; i++) t.sites.insert(w, { name: `s${i}`, team: i % 2 ? 'a' : 'b', replicas: 1 })
  })
  const d = await start(t)
  try {
    await settle(t, d)
    assert.is(d.runs, 50)
    assert.is(t.out.count(t.db.readTxn()), 50)
    assert.is(t.out.get(t.db.readTxn(), outName.query('s1-0'))!.owner, 'alice')
    // one site changes: one run
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 's3', team: 'a', replicas: 3 })
    })
    await settle(t, d)
    assert.is(d.runs, 51)
    assert.equal(
      names(t).filter((n) => n.startsWith('s3-')),
      ['s3-0:alice', 's3-1:alice', 's3-2:alice'],
    )
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 's3', team: 'a', replicas: 1 })
    })
    await settle(t, d)
    assert.equal(
      names(t).filter((n) => n.startsWith('s3-')),
      ['s3-0:alice'],
      'outputs no longer produced are deleted',
    )
    // a joined object changes: only its 25 readers run again
    await t.db.write(t.teams, (w) => {
      t.teams.insert(w, { name: 'a', owner: 'ann' })
    })
    await settle(t, d)
    assert.is(d.runs, 52 + 25)
    assert.is(t.out.get(t.db.readTxn(), outName.query('s1-0'))!.owner, 'ann')
    // a team that did not exist appears: its readers (who got "nobody") run again
    await t.db.write(t.teams, (w) => {
      t.teams.insert(w, { name: 'b', owner: 'bob' })
    })
    await settle(t, d)
    assert.is(d.runs, 77 + 25)
    assert.is(t.out.get(t.db.readTxn(), outName.query('s0-0'))!.owner, 'bob')
    // an unrelated team: nothing runs
    await t.db.write(t.teams, (w) => {
      t.teams.insert(w, { name: 'zzz', owner: 'z' })
    })
    await settle(t, d)
    assert.is(d.runs, 102)
    // a deleted input takes its outputs
    await t.db.write(t.sites, (w) => {
      t.sites.delete(w, { name: 's0' } as Site)
    })
    await settle(t, d)
    assert.is(t.out.get(t.db.readTxn(), outName.query('s0-0')), undefined)
    assert.is(d.runs, 102, 'a delete needs no run')
  } finally {
    await d.stop()
  }
})

test('to is initialized only once every from table is, and after a round derived from them', async () => {
  const t = tables()
  const w = await t.db.writeTxn(t.sites)
  const done = t.sites.registerInitializer(w, 'sites-loader')
  t.sites.insert(w, { name: 'x', team: 'a', replicas: 2 })
  w.commit()
  const d = await start(t)
  try {
    // fn waits for its inputs to be listed (controller-runtime's WaitForCacheSync): nothing runs yet
    assert.is(d.runs, 0)
    assert.is(t.out.initialized(t.db.readTxn())[0], false)
    assert.is(d.health().ready, false)
    assert.equal(d.health().waitingFor, ['sites'])
    const [, initWatch] = t.out.initialized(t.db.readTxn())
    await t.db.write(t.sites, (w2) => done(w2))
    await initWatch.wait(AbortSignal.timeout(5000))
    assert.is(t.out.count(t.db.readTxn()), 2, 'the outputs are there when to says initialized')
    assert.is(d.health().ready, true)
  } finally {
    await d.stop()
  }
})

test('a throwing fn is a per-object error (errors table, health), retried with backoff, never stopping the rest', async () => {
  const t = tables()
  await t.db.write(t.sites, (w) => {
    t.sites.insert(w, { name: 'good', team: 'a', replicas: 1 })
    t.sites.insert(w, { name: 'bad', team: 'a', replicas: -1 })
  })
  const d = await start(t)
  try {
    await settle(t, d)
    const errs = d.failures()
    assert.equal(
      errs.map((e) => [e.input, e.error]),
      [['sites bad', 'replicas must not be negative (-1)']],
    )
    const [, w] = d.errors.allWatch(t.db.readTxn())
    await w.wait(AbortSignal.timeout(5000)) // a retry rewrites the row with more attempts
    assert.ok(d.failures()[0]!.attempts >= 2, 'retried')
    assert.is(d.health().level, 'degraded')
    assert.match(d.health().message, 'sites bad: replicas must not be negative')
    assert.is(d.health().ready, true, 'an object error does not make it unready')
    assert.equal(names(t), ['good-0:nobody'])
    // the input is fixed: the error goes and its outputs appear
    await t.db.write(t.sites, (w2) => {
      t.sites.insert(w2, { name: 'bad', team: 'a', replicas: 1 })
    })
    await settle(t, d)
    assert.equal(d.failures(), [])
    assert.is(d.health().level, 'ok')
    assert.equal(names(t), ['bad-0:nobody', 'good-0:nobody'])
  } finally {
    await d.stop()
  }
})

test('an output validate refuses is a per-object error naming the input; earlier outputs stay', async () => {
  const t = tables()
  await t.db.write(t.sites, (w) => {
    t.sites.insert(w, { name: 'v', team: 'a', replicas: 1 })
  })
  const d = await start(t, { validate: (o) => (o.replicas > 2 ? `${o.name}: at most 2 replicas` : undefined) })
  try {
    await settle(t, d)
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 'v', team: 'a', replicas: 3 })
    })
    await settle(t, d)
    assert.equal(
      d.failures().map((e) => [e.input, e.error]),
      [['sites v', 'output refused: v-0: at most 2 replicas']],
    )
    assert.equal(names(t), ['v-0:nobody'], 'the last good outputs stay')
  } finally {
    await d.stop()
  }
})

test('a stopped derivation starts again (a new term): it catches up, and drops outputs of inputs deleted meanwhile', async () => {
  const t = tables()
  await t.db.write(t.sites, (w) => {
    t.sites.insert(w, { name: 'a', team: 'x', replicas: 1 })
    t.sites.insert(w, { name: 'b', team: 'x', replicas: 1 })
  })
  const d = await start(t)
  try {
    await settle(t, d)
    await d.stop()
    await t.db.write(t.sites, (w) => {
      t.sites.delete(w, { name: 'a' } as Site)
      t.sites.insert(w, { name: 'b', team: 'x', replicas: 2 })
    })
    await d.start()
    await settle(t, d)
    assert.equal(names(t), ['b-0:nobody', 'b-1:nobody'])
    assert.is(t.out.pendingInitializers(t.db.readTxn()).length, 0, 'no second initializer')
    assert.is(d.health().ready, true)
  } finally {
    await d.stop()
  }
})

test('a write statedb refuses fails that input only (an error row, retried); the other inputs of the round are derived', async () => {
  const t = tables()
  const slot = defineIndex<Out, number>({ name: 'slot', key: (o) => o.replicas, unique: true })
  const out2 = new Table<Out>({ name: 'out2', primary: outName, indexes: [slot] })
  t.db.register(out2)
  const d = await derive<Site, Out>({
    db: t.db,
    from: t.sites,
    to: out2,
    retry: { minMs: 5, maxMs: 20 },
    fn: (s) => ({ name: `o-${s.name}`, site: s.name, owner: '', replicas: s.replicas }),
  })
  try {
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 'first', team: 'x', replicas: 1 })
      t.sites.insert(w, { name: 'clash', team: 'x', replicas: 1 }) // same unique slot as "first"
      t.sites.insert(w, { name: 'good', team: 'x', replicas: 2 })
    })
    await settle(t, d)
    const stored = out2
      .all(t.db.readTxn())
      .toArray()
      .map((o) => o.name)
      .sort()
    assert.ok(stored.includes('o-good'), `the unrelated input is derived: ${stored}`)
    assert.is(stored.filter((n) => n === 'o-first' || n === 'o-clash').length, 1, 'one of the two clashing outputs')
    const f = d.failures()
    assert.is(f.length, 1)
    assert.match(f[0]!.error, /unique|slot/i)
    const [, w] = d.errors.allWatch(t.db.readTxn())
    await w.wait(AbortSignal.timeout(5000)) // retried with backoff
    assert.match(d.failures()[0]!.error, /unique|slot/i, 'the retry fails the same way, for the same input')
    assert.ok(d.failures()[0]!.attempts >= 2)
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: f[0]!.input.split(' ')[1]!, team: 'x', replicas: 3 })
    })
    await settle(t, d)
    assert.equal(d.failures(), [], 'fixed input: the error goes')
    assert.equal(
      out2
        .all(t.db.readTxn())
        .toArray()
        .map((o) => o.name)
        .sort(),
      ['o-clash', 'o-first', 'o-good'],
    )
  } finally {
    await d.stop()
  }
})

test("an output two inputs produce: when one gives it up, the stored one is the other's version", async () => {
  const t = tables()
  const d = await derive<Site, Out>({
    db: t.db,
    from: t.sites,
    to: t.out,
    fn: (s) => (s.replicas > 0 ? { name: 'shared', site: s.name, owner: '', replicas: s.replicas } : undefined),
  })
  const stored = () => t.out.get(t.db.readTxn(), outName.query('shared'))?.site
  try {
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 'a', team: 'x', replicas: 1 })
    })
    await settle(t, d)
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 'b', team: 'x', replicas: 1 })
    })
    await settle(t, d)
    assert.is(stored(), 'b', 'the last writer wins while both produce it')
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 'b', team: 'x', replicas: 0 })
    })
    await settle(t, d)
    assert.is(stored(), 'a', "b gave it up: a's version")
    await t.db.write(t.sites, (w) => {
      t.sites.delete(w, { name: 'a' } as Site)
    })
    await settle(t, d)
    assert.is(stored(), undefined, 'nobody produces it: gone')
  } finally {
    await d.stop()
  }
})

test('fn runs only once every join is listed too: a join still loading is never read as "absent"', async () => {
  const t = tables()
  const w = await t.db.writeTxn(t.teams)
  const done = t.teams.registerInitializer(w, 'teams-loader')
  t.teams.insert(w, { name: 'a', owner: 'ann' })
  w.commit()
  await t.db.write(t.sites, (w2) => t.sites.insert(w2, { name: 'x', team: 'a', replicas: 1 }))
  const seen: string[] = []
  const d = await start(t, {
    fn: (s, ctx) => {
      const owner = ctx.get(t.teams, teamName.query(s.team))?.owner ?? 'nobody'
      seen.push(owner)
      return [{ name: `${s.name}-0`, site: s.name, owner, replicas: s.replicas }]
    },
  })
  try {
    assert.equal(d.health().waitingFor, ['teams'])
    assert.match(d.health().message, /waiting for "teams" to be listed/)
    const [, initWatch] = t.out.initialized(t.db.readTxn())
    // a second team arrives while the list is still loading: still nothing runs
    await t.db.write(t.teams, (w2) => t.teams.insert(w2, { name: 'b', owner: 'bob' }))
    assert.equal(seen, [])
    await t.db.write(t.teams, (w2) => done(w2))
    await initWatch.wait(AbortSignal.timeout(5000))
    assert.equal(seen, ['ann'], 'fn ran once, on the listed join')
    assert.equal(names(t), ['x-0:ann'])
    assert.is(d.health().waitingFor, undefined)
  } finally {
    await d.stop()
  }
})

test('an input failing with no success in this process is unsettled; a success or an earlier output settles it', async () => {
  const t = tables()
  await t.db.write(t.sites, (w) => {
    t.sites.insert(w, { name: 'bad', team: 'a', replicas: -1 })
    t.sites.insert(w, { name: 'ok', team: 'a', replicas: 1 })
  })
  const d = await start(t)
  try {
    await settle(t, d)
    assert.equal(
      d.unsettled().map((s) => [s.name, s.input?.name]),
      [['sites bad', 'bad']],
    )
    // 'ok' fails after a success: its earlier outputs stand in `to`, so it is not unsettled
    await t.db.write(t.sites, (w) => t.sites.insert(w, { name: 'ok', team: 'a', replicas: -2 }))
    await settle(t, d)
    assert.equal(
      d.unsettled().map((s) => [s.name, s.input?.name]),
      [['sites bad', 'bad']],
    )
    assert.equal(names(t), ['ok-0:nobody'])
    await t.db.write(t.sites, (w) => t.sites.insert(w, { name: 'bad', team: 'a', replicas: 1 }))
    await settle(t, d)
    assert.equal(d.unsettled(), [])
  } finally {
    await d.stop()
  }
})

test('fn is told why it runs (created, updated, dependency, retry, requeue, resync); onDeleted gets the last state once', async () => {
  const t = tables()
  await t.db.write(t.teams, (w) => t.teams.insert(w, { name: 'a', owner: 'ann' }))
  await t.db.write(t.sites, (w) => t.sites.insert(w, { name: 'x', team: 'a', replicas: 1 }))
  const reasons: string[] = []
  const deleted: Site[] = []
  let failOnce = false
  const d = await start(t, {
    fn: (s, ctx) => {
      reasons.push(ctx.reason)
      if (failOnce) {
        failOnce = false
        throw new Error('once')
      }
      const owner = ctx.get(t.teams, teamName.query(s.team))?.owner ?? 'nobody'
      return [{ name: `${s.name}-0`, site: s.name, owner, replicas: s.replicas }]
    },
    onDeleted: (last) => deleted.push(last),
  })
  try {
    await settle(t, d)
    await t.db.write(t.sites, (w) => t.sites.insert(w, { name: 'x', team: 'a', replicas: 2 }))
    await settle(t, d)
    await t.db.write(t.teams, (w) => t.teams.insert(w, { name: 'a', owner: 'bob' }))
    await settle(t, d)
    failOnce = true
    await t.db.write(t.sites, (w) => t.sites.insert(w, { name: 'x', team: 'a', replicas: 3 }))
    await settle(t, d)
    await waitTable(t.db, d.errors, () => d.failures().length === 0, 'the retry succeeded')
    await d.rederive((s) => s.name === 'x')
    await d.rederive()
    assert.equal(reasons, ['created', 'updated', 'dependency', 'updated', 'retry', 'requeue', 'resync'])
    await t.db.write(t.sites, (w) => t.sites.delete(w, { name: 'x', team: 'a', replicas: 3 }))
    await settle(t, d)
    assert.equal(deleted, [{ name: 'x', team: 'a', replicas: 3 }], 'the last state, once')
    assert.equal(names(t), [])
  } finally {
    await d.stop()
  }
})

test('a TerminalError is the input error but is not retried; a change of the input runs it again', async () => {
  const t = tables()
  await t.db.write(t.sites, (w) => t.sites.insert(w, { name: 'x', team: 'a', replicas: 1 }))
  let runs = 0
  const d = await start(t, {
    retry: { minMs: 1, maxMs: 2 },
    fn: (s) => {
      runs++
      if (s.replicas === 1) throw new TerminalError('one replica can never work')
      return [{ name: `${s.name}-0`, site: s.name, owner: '', replicas: s.replicas }]
    },
  })
  try {
    await settle(t, d)
    assert.equal(
      d.failures().map((f) => [f.error, f.retryAt]),
      [['one replica can never work', Infinity]],
    )
    // a retry would be due within 2 ms (minMs 1, maxMs 2): 50 ms later, and a round after, none came
    await new Promise((r) => setTimeout(r, 50))
    await d.rederive((s) => s.name === 'nobody')
    assert.is(runs, 1, 'not retried')
    await t.db.write(t.sites, (w) => t.sites.insert(w, { name: 'x', team: 'a', replicas: 2 }))
    await settle(t, d)
    assert.is(runs, 2)
    assert.equal(d.failures(), [])
  } finally {
    await d.stop()
  }
})

test('reading a table not declared in joins is an error naming it', async () => {
  const t = tables()
  await t.db.write(t.sites, (w) => {
    t.sites.insert(w, { name: 'j', team: 'a', replicas: 1 })
  })
  const d = await start(t, { joins: [] })
  try {
    await settle(t, d)
    assert.match(d.failures()[0]!.error, 'fn read table "teams", which is not in `joins`')
  } finally {
    await d.stop()
  }
})

test('an output equal to the stored one but with its keys in another order is not written again', async () => {
  const t = tables()
  await t.db.write(t.sites, (w) => {
    t.sites.insert(w, { name: 's', team: 'a', replicas: 1 })
  })
  let flip = false
  const d = await start(t, {
    // the same output each run, its keys in alternating orders
    fn: (s) => [
      flip
        ? { replicas: s.replicas, owner: 'o', site: s.name, name: `${s.name}-0` }
        : { name: `${s.name}-0`, site: s.name, owner: 'o', replicas: s.replicas },
    ],
  })
  try {
    await settle(t, d)
    const stored = t.out.get(t.db.readTxn(), outName.query('s-0'))
    flip = true
    d.rederive()
    // a second input written after the rederive: once it is derived, so is the rederive's round
    await t.db.write(t.sites, (w) => {
      t.sites.insert(w, { name: 't', team: 'a', replicas: 1 })
    })
    await settle(t, d)
    assert.ok(d.runs >= 3, `fn ran again (${d.runs} runs)`)
    assert.is(t.out.get(t.db.readTxn(), outName.query('s-0')), stored, 'the stored output was not replaced')
  } finally {
    await d.stop()
  }
})

test("the Manager's desired objects: equal whatever their keys' order, at any depth; a value or the cluster differs, not equal", () => {
  const a = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'n', namespace: 'd', labels: { x: '1', y: '2' } }, data: { k: 'v' } }
  const b = { data: { k: 'v' }, metadata: { labels: { y: '2', x: '1' }, namespace: 'd', name: 'n' }, kind: 'ConfigMap', apiVersion: 'v1' }
  const d = (object: object, cluster?: string) => ({ object, status: statusPending(), ...(cluster ? { cluster } : {}) }) as DesiredObject
  assert.ok(desiredEquals(d(a), d(b)))
  assert.not.ok(desiredEquals(d(a), d({ ...b, data: { k: 'w' } })))
  assert.not.ok(desiredEquals(d(a, 'east'), d(b)))
})

test('randomized: after every step the output equals a from-scratch computation over Maps', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          fc.record({
            op: fc.constant('site' as const),
            name: fc.constantFrom('a', 'b', 'c', 'd'),
            team: fc.constantFrom('x', 'y'),
            replicas: fc.integer({ min: 0, max: 3 }),
          }),
          fc.record({ op: fc.constant('unsite' as const), name: fc.constantFrom('a', 'b', 'c', 'd') }),
          fc.record({ op: fc.constant('team' as const), name: fc.constantFrom('x', 'y'), owner: fc.constantFrom('o1', 'o2') }),
          fc.record({ op: fc.constant('unteam' as const), name: fc.constantFrom('x', 'y') }),
        ),
        { minLength: 1, maxLength: 25 },
      ),
      async (ops) => {
        const t = tables()
        const sites = new Map<string, Site>()
        const teams = new Map<string, Team>()
        const d = await start(t)
        try {
          for (const o of ops) {
            await t.db.write([t.sites, t.teams], (w) => {
              if (o.op === 'site') {
                const s = { name: o.name, team: o.team, replicas: o.replicas }
                sites.set(o.name, s)
                t.sites.insert(w, s)
              }
              if (o.op === 'unsite') {
                sites.delete(o.name)
                t.sites.delete(w, { name: o.name } as Site)
              }
              if (o.op === 'team') {
                const x = { name: o.name, owner: o.owner }
                teams.set(o.name, x)
                t.teams.insert(w, x)
              }
              if (o.op === 'unteam') {
                teams.delete(o.name)
                t.teams.delete(w, { name: o.name } as Team)
              }
            })
            await settle(t, d)
            const want: string[] = []
            for (const s of sites.values())
              for (let i = 0; i < s.replicas; i++) want.push(`${s.name}-${i}:${teams.get(s.team)?.owner ?? 'nobody'}`)
            assert.equal(names(t), want.sort())
          }
        } finally {
          await d.stop()
        }
      },
    ),
    { numRuns: 60 },
  )
})

test.run()
