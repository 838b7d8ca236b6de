// Reads that see our own writes (issue 40): the answer to an apply goes into the tables that reflect
// the object before its watch event; an older watch event never replaces it (k8s reflector rows);
// only tables whose selector selects it get it. The end-to-end proof is restart-model.test.ts: a
// generated password read back through a join was replaced about one run in three before (a run
// right after the Secret's create did not see it yet), never since.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { DB, SENSITIVE, Table } from '@statewright/statedb'
import type { KubeObject } from '@statewright/k8s'
import { ReflectedRows } from '../../k8s/src/reflector-rows.ts'
import { byName } from '../src/manager/watch.ts'
import { OwnWrites, selects } from '../src/manager/ownwrites.ts'
import { Manager, conditionsOf, findCondition, nullLogger } from '../src/index.ts'
import { GADGET, createGadget, env, gadget } from './helpers.ts'
import { waitFor } from '../../../test/lib/wait.ts'

test('label selectors: equality, sets, existence; beyond its reading: undefined (the object is not written)', () => {
  const l = { 'statewright.io/owner': 'op', 'statewright.io/shard': '3', app: 'web' }
  assert.is(selects('statewright.io/owner=op', l), true)
  assert.is(selects('statewright.io/owner==op,app!=db', l), true)
  assert.is(selects('statewright.io/owner=other', l), false)
  assert.is(selects('statewright.io/owner=op,statewright.io/shard in (1,3)', l), true)
  assert.is(selects('statewright.io/shard in (none)', l), false)
  assert.is(selects('statewright.io/shard notin (3)', l), false)
  assert.is(selects('app,!tier', l), true)
  assert.is(selects('!app', l), false)
  assert.is(selects('app =~ w.*', l), undefined)
})

const secret = (rv: string, password: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 's', namespace: 'default', resourceVersion: rv, labels: { 'statewright.io/owner': 'op' }, managedFields: [{}] },
  data: { password },
})

test('the answer to an apply goes into the tables that select it, compacted and sensitive; an older watch event does not replace it', async () => {
  const all = new Table<KubeObject>({ name: 'secrets', primary: byName })
  const mine = new Table<KubeObject>({ name: 'owned-secrets', primary: byName })
  const other = new Table<KubeObject>({ name: 'other-secrets', primary: byName })
  const db = new DB({ tables: [all, mine, other] })
  const cluster = { name: 'c' } as never
  const kind = { apiVersion: 'v1', kind: 'Secret' }
  const watched = [
    { kind, table: all, options: {}, cluster },
    { kind, table: mine, options: { labelSelector: 'statewright.io/owner=op' }, cluster },
    { kind, table: other, options: { namespace: 'elsewhere' }, cluster },
  ]
  await new OwnWrites(
    db,
    () => watched,
    () => undefined,
    () => undefined,
  ).saw(secret('12', 'pw1'), 'c')
  const txn = db.readTxn()
  const got = all.get(txn, byName.query('default/s'))!
  assert.is((got.data as any).password, 'pw1')
  assert.is(got.metadata.managedFields, undefined, 'stored as the reflector stores it')
  assert.is((got as unknown as Record<symbol, unknown>)[SENSITIVE], true, 'a Secret is marked sensitive')
  assert.ok(mine.get(txn, byName.query('default/s')))
  assert.is(other.get(txn, byName.query('default/s')), undefined, 'another namespace: not its table')
  // the reflector's watch event for an older version arrives late: the newer row stays
  const rows = new ReflectedRows<KubeObject>({ table: all, kind } as never, 'secrets', () => undefined)
  await db.write(all, (w) => rows.apply(w, new Map([['default/s', { type: 'upsert', object: secret('11', 'old') }]])))
  assert.is((all.get(db.readTxn(), byName.query('default/s'))!.data as any).password, 'pw1')
  // its own event (same version) or a newer one is written
  await db.write(all, (w) => rows.apply(w, new Map([['default/s', { type: 'upsert', object: secret('13', 'pw1') }]])))
  assert.is(all.get(db.readTxn(), byName.query('default/s'))!.metadata.resourceVersion, '13')
})

test("an answer that comes after the reflector wrote the object's deletion (ADDED and DELETED in one batch) is not written: no row of an object the server no longer has", async () => {
  const all = new Table<KubeObject>({ name: 'secrets', primary: byName })
  const db = new DB({ tables: [all] })
  const kind = { apiVersion: 'v1', kind: 'Secret' }
  const rows = new ReflectedRows<KubeObject>({ table: all, kind } as never, 'secrets', () => undefined)
  await db.write(all, (w) => rows.replace(w, [], '10'))
  const own = new OwnWrites(
    db,
    () => [{ kind, table: all, options: {}, cluster: { name: 'c' } as never }],
    () => undefined,
    () => rows.writtenResourceVersion,
  )
  // s was created at 12 and deleted at 13; the watch brought both in one batch, written before our answer
  await db.write(all, (w) => rows.apply(w, new Map([['default/s', { type: 'delete', object: secret('13', 'pw1') }]])))
  assert.is(rows.writtenResourceVersion, '13')
  await own.saw(secret('12', 'pw1'), 'c')
  assert.is(all.get(db.readTxn(), byName.query('default/s')), undefined, 'the answer of a deleted object is not written')
  // an answer newer than what the reflector wrote goes in (its events have not come yet)
  const s2 = { ...secret('14', 'pw2'), metadata: { ...secret('14', 'pw2').metadata, name: 's2' } }
  await own.saw(s2, 'c')
  assert.is(all.get(db.readTxn(), byName.query('default/s2'))?.metadata.resourceVersion, '14')
})

test('answers that come one after the other within the delay go in one transaction (one change for readers)', async () => {
  const all = new Table<KubeObject>({ name: 'secrets', primary: byName })
  const db = new DB({ tables: [all] })
  const own = new OwnWrites(
    db,
    () => [{ kind: { apiVersion: 'v1', kind: 'Secret' }, table: all, options: {}, cluster: { name: 'c' } as never }],
    () => undefined,
    () => undefined,
    1000, // a delay no loaded machine's five turns of the event loop reach
  )
  const named = (n: number) => ({
    ...secret(String(10 + n), `pw${n}`),
    metadata: { ...secret('1', '').metadata, name: `s${n}`, resourceVersion: String(10 + n) },
  })
  const done: Promise<void>[] = []
  const counts: number[] = []
  for (let i = 0; i < 5; i++) {
    done.push(own.saw(named(i), 'c'))
    await new Promise((r) => setImmediate(r)) // answers of separate turns of the event loop
    counts.push(all.count(db.readTxn()))
  }
  await Promise.all(done)
  assert.equal(counts, [0, 0, 0, 0, 0], 'gathered, not written one by one')
  assert.is(all.count(db.readTxn()), 5, 'then all in one transaction')
})

test("a status write's answer is in the primary's table before its watch event: the next run reads the status it wrote", async () => {
  const e = await env()
  // every watch of the Gadgets hangs for a minute: only our own writes can change the table meanwhile
  const off = e.server.control.delay({ method: 'GET', path: /\/gadgets$/, watch: true, ms: 60_000 })
  const m = new Manager({ name: 'rw', cluster: e.cluster, http: false, logger: nullLogger, handleSignals: false })
  const seen: Array<string | undefined> = []
  m.reconcile({
    for: GADGET,
    fn: (g) => {
      seen.push(findCondition(conditionsOf(g), 'Ready')?.reason)
      return { status: { phase: 'Done' }, conditions: [{ type: 'Ready', status: 'True', reason: 'Built', message: 'built' }] }
    },
  })
  await createGadget(e.cluster, gadget('g1', { size: 1 }))
  try {
    await m.start()
    const table = [...m.watched.values()].find((w) => w.kind.kind === 'Gadget')!.table
    await waitFor(
      () => {
        const row = table.get(m.db.readTxn(), table.primary.query('default/g1' as never))
        return !!row && findCondition(conditionsOf(row), 'Ready')?.reason === 'Built'
      },
      'the written status in the table (its watch is held for a minute)',
      30_000,
    )
    // the answer re-ran fn, which read the status it wrote
    await waitFor(() => seen.includes('Built'), 'a run that read its own status', 30_000)
    assert.equal(seen[0], undefined, 'the first run saw no status')
  } finally {
    off()
    await m.stop()
    await e.stop()
  }
})

test.run()
