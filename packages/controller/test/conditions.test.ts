// Conditions: the pure set/find functions (lastTransitionTime moves only with status; no change is the
// same array), and StatusWriter's server-side apply on /status: merged by type with other managers'
// conditions, and a repeated write is a no-op that keeps the resourceVersion.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { setCondition, findCondition, isConditionTrue, conditionsOf, type Condition } from '@statewright/controller'
import { StatusWriter } from '@statewright/controller/parts'
import { env, gadget, createGadget, GADGET, type Env } from './helpers.ts'
import { FencedError, type WriteFence } from '@statewright/k8s'

const t0 = new Date('2024-01-01T00:00:00.123Z')
const t1 = new Date('2024-01-01T00:05:00Z')

test('setCondition adds, merges in place, and moves lastTransitionTime only when status changes', () => {
  const a = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Starting' }, t0)
  assert.equal(a, [{ type: 'Ready', status: 'False', reason: 'Starting', message: '', lastTransitionTime: '2024-01-01T00:00:00Z' }])
  const b = setCondition(a, { type: 'Ready', status: 'False', reason: 'StillStarting', message: 'waiting', observedGeneration: 2 }, t1)
  assert.is(b[0]!.lastTransitionTime, '2024-01-01T00:00:00Z', 'same status: the time stays')
  assert.is(b[0]!.reason, 'StillStarting')
  assert.is(b[0]!.observedGeneration, 2)
  const c = setCondition(b, { type: 'Ready', status: 'True', reason: 'Up', observedGeneration: 2 }, t1)
  assert.is(c[0]!.lastTransitionTime, '2024-01-01T00:05:00Z', 'status changed: the time moves')
  const d = setCondition(c, { type: 'Synced', status: 'Unknown', reason: 'NotYet' }, t1)
  assert.equal(
    d.map((x) => x.type),
    ['Ready', 'Synced'],
    'other types are kept, order too',
  )
  assert.is(
    setCondition(d, { type: 'Ready', status: 'True', reason: 'Up', observedGeneration: 2 }, new Date()),
    d,
    'nothing changed: the same array',
  )
  assert.equal(a.length, 1, 'inputs are not mutated')
  assert.is(b[0]!.status, 'False')
  assert.ok(isConditionTrue(d, 'Ready'))
  assert.not.ok(isConditionTrue(d, 'Synced'))
  assert.not.ok(isConditionTrue(undefined, 'Ready'))
  assert.is(findCondition(d, 'Synced')?.reason, 'NotYet')
  assert.is(findCondition(d, 'Nope'), undefined)
})

test('bad conditions are refused with a message naming the condition', () => {
  assert.throws(
    () => setCondition([], { type: 'Ready', status: 'yes' as never, reason: 'R' }),
    /condition "Ready": status must be "True", "False" or "Unknown", not "yes"/,
  )
  assert.throws(
    () => setCondition([], { type: 'Ready', status: 'True', reason: 'not camel case' }),
    /condition "Ready": reason must be CamelCase/,
  )
  assert.throws(() => setCondition([], { type: '', status: 'True', reason: 'R' }), /condition "": type must be a qualified name/)
  assert.throws(() => setCondition([], { type: 'Ready', status: 'True', reason: 'R', observedGeneration: -1 }), /observedGeneration/)
})

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.stop()
})

test('StatusWriter applies conditions on /status; a repeat keeps the resourceVersion; other managers keep theirs', async () => {
  const created = await createGadget(e.cluster, gadget('g1', { size: 1 }))
  const mine = new StatusWriter({ cluster: e.cluster, fieldManager: 'mine' })
  const theirs = new StatusWriter({ cluster: e.cluster, fieldManager: 'theirs' })
  const s1 = await mine.apply(
    created,
    { phase: 'Running', conditions: [{ type: 'Ready', status: 'False', reason: 'Starting', message: 'pulling' }] },
    { now: t0 },
  )
  const c1 = findCondition(conditionsOf(s1), 'Ready')!
  assert.equal(
    c1,
    {
      type: 'Ready',
      status: 'False',
      reason: 'Starting',
      message: 'pulling',
      lastTransitionTime: '2024-01-01T00:00:00Z',
      observedGeneration: 1,
    },
    'observedGeneration from metadata.generation',
  )
  assert.is((s1.status as any).phase, 'Running')
  assert.is((s1.spec as any).size, 1, 'the main resource is untouched')

  const s2 = await mine.apply(
    s1,
    { phase: 'Running', conditions: [{ type: 'Ready', status: 'False', reason: 'Starting', message: 'pulling' }] },
    { now: t1 },
  )
  assert.is(s2.metadata.resourceVersion, s1.metadata.resourceVersion, 'nothing changed: no new version')
  assert.is(findCondition(conditionsOf(s2), 'Ready')!.lastTransitionTime, '2024-01-01T00:00:00Z')

  const s3 = await theirs.apply(s2, { conditions: [{ type: 'Synced', status: 'True', reason: 'Synced' }] }, { now: t1 })
  assert.equal(
    conditionsOf(s3).map((c) => c.type),
    ['Ready', 'Synced'],
    'a map list keyed by type: both managers keep their conditions',
  )

  const s4 = await mine.apply(
    s3,
    { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', reason: 'Up', message: 'serving' }] },
    { now: t1 },
  )
  const ready: Condition = findCondition(conditionsOf(s4), 'Ready')!
  assert.is(ready.status, 'True')
  assert.is(ready.lastTransitionTime, '2024-01-01T00:05:00Z')
  assert.ok(isConditionTrue(conditionsOf(s4), 'Synced'), "the other manager's condition stays")
  assert.ok(Number(s4.metadata.resourceVersion) > Number(s3.metadata.resourceVersion))
  const stored = e.server.control.get(GADGET, 'g1', 'default')
  assert.equal(
    stored.status.conditions.map((c: Condition) => `${c.type}=${c.status}`),
    ['Ready=True', 'Synced=True'],
  )
})

test('StatusWriter refuses duplicate condition types and objects without a name, naming the object', async () => {
  const w = new StatusWriter({ cluster: e.cluster, fieldManager: 'mine' })
  const g = gadget('g-dup')
  await w
    .apply(
      g,
      {
        conditions: [
          { type: 'A', status: 'True', reason: 'R' },
          { type: 'A', status: 'False', reason: 'R' },
        ],
      },
      { kind: GADGET },
    )
    .then(
      () => assert.unreachable('accepted'),
      (err: Error) => assert.match(err.message, 'Gadget.example.com default/g-dup: condition "A" is given twice'),
    )
  await w.apply({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { namespace: 'default' } }, {}, { kind: GADGET }).then(
    () => assert.unreachable('accepted'),
    (err: Error) =>
      assert.match(err.message, 'Gadget.example.com default/?: status needs an object with apiVersion, kind and metadata.name'),
  )
  assert.throws(() => new StatusWriter({ cluster: e.cluster, fieldManager: '' }), /fieldManager must be a non-empty string/)
})

test('StatusWriter asks its fence with the object: a write whose term is over, or not ours (null), is refused and nothing is sent', async () => {
  const created = await createGadget(e.cluster, gadget('g-fenced', { size: 1 }))
  const asked: string[] = []
  let valid = true
  const term: WriteFence = {
    lease: 'shard-3',
    transitions: 1,
    signal: new AbortController().signal,
    valid: () => valid,
    validUntil: () => Date.now() + 60_000,
  }
  const w = new StatusWriter({
    cluster: e.cluster,
    fieldManager: 'fenced',
    fence: (obj) => {
      asked.push(String(obj.metadata.name))
      return obj.metadata.name === 'g-fenced' ? term : null
    },
  })
  await w.apply(created, { phase: 'A' })
  assert.equal(asked, ['g-fenced'])
  valid = false
  const refused = await w.apply(created, { phase: 'B' }).then(
    () => undefined,
    (err: Error) => err,
  )
  assert.instance(refused, FencedError)
  const other = await w.apply({ ...created, metadata: { ...created.metadata, name: 'g-other' } }, { phase: 'C' }).then(
    () => undefined,
    (err: Error) => err,
  )
  assert.instance(other, FencedError, 'null: not ours to write')
  const live = await e.cluster.request<any>({ path: `/apis/${GADGET.apiVersion}/namespaces/default/gadgets/g-fenced` })
  assert.is(live.status?.phase, 'A', 'the refused write was not sent')
})

test.run()
