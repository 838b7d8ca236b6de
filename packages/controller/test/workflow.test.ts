// Workflow, Subscription and traceReconcile, held to Kuadrant policy-machinery's controller/workflow.go,
// subscriber.go and tracing.go: the workflow test ported case by case, a suppressed error letting the
// workflow go on with the carried-over error joined in, a subscription that runs only for matching
// events, and spans recorded by a tracer of our own (the OpenTelemetry API's shape, no SDK).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { WorkflowError } from '@statewright/controller'
import {
  Subscription,
  Workflow,
  traceReconcile,
  type StateOfWorldContext,
  type ResourceEvent,
  type StateOfWorldFn,
} from '@statewright/controller/stateofworld'
import { RecordingTracer } from './tracer.ts'

async function assertRejects(fn: () => Promise<unknown>, message: string): Promise<void> {
  try {
    await fn()
  } catch (err) {
    assert.is((err as Error).message, message)
    return
  }
  assert.unreachable('it should have thrown')
}

const ctxOf = (events: ResourceEvent[] = [], extra: Partial<StateOfWorldContext> = {}): StateOfWorldContext =>
  ({ events, signal: new AbortController().signal, state: new Map(), ...extra }) as unknown as StateOfWorldContext

// follows policy-machinery controller/workflow_test.go TestWorkflow (eleven subtests)
test('TestWorkflow: which steps run, which error comes out, whether the handler is called', async () => {
  const called = { pre: false, t1: false, t2: false, post: false, handled: false }
  const fn =
    (flag: keyof typeof called, err?: string): StateOfWorldFn =>
    async () => {
      called[flag] = true
      if (err) throw new Error(err)
    }
  const suppress = () => {
    called.handled = true
  }
  const raise = (err: unknown) => {
    called.handled = true
    throw err
  }
  const cases: Array<{
    name: string
    wf: ConstructorParameters<typeof Workflow>[0]
    want: Partial<typeof called>
    errs?: string[]
  }> = [
    { name: 'empty workflow', wf: {}, want: {} },
    { name: 'precondition', wf: { precondition: fn('pre') }, want: { pre: true } },
    {
      name: 'precondition and tasks',
      wf: { precondition: fn('pre'), tasks: [fn('t1'), fn('t2')] },
      want: { pre: true, t1: true, t2: true },
    },
    {
      name: 'precondition with error',
      wf: { precondition: fn('pre', 'precondition error'), tasks: [fn('t1'), fn('t2')] },
      want: { pre: true },
      errs: ['precondition error'],
    },
    {
      name: 'task1 with error',
      wf: { tasks: [fn('t1', 'task1 error'), fn('t2')], postcondition: fn('post') },
      want: { t1: true, t2: true },
      errs: ['task1 error'],
    },
    {
      name: 'task2 with error',
      wf: { tasks: [fn('t1'), fn('t2', 'task2 error')], postcondition: fn('post') },
      want: { t1: true, t2: true },
      errs: ['task2 error'],
    },
    {
      name: 'task1 and task2 with error',
      wf: { tasks: [fn('t1', 'task1 error'), fn('t2', 'task2 error')], postcondition: fn('post') },
      want: { t1: true, t2: true },
      errs: ['task1 error', 'task2 error'],
    },
    {
      name: 'postcondition',
      wf: { precondition: fn('pre'), tasks: [fn('t1'), fn('t2')], postcondition: fn('post') },
      want: { pre: true, t1: true, t2: true, post: true },
    },
    {
      name: 'postconditions with error',
      wf: { precondition: fn('pre'), tasks: [fn('t1'), fn('t2')], postcondition: fn('post', 'postcondition error') },
      want: { pre: true, t1: true, t2: true, post: true },
      errs: ['postcondition error'],
    },
    {
      // issue 26, cause 5: a suppressed error lets the workflow go on to its postcondition
      name: 'handle error and suppress',
      wf: { precondition: fn('pre', 'precondition error'), postcondition: fn('post', 'postcondition error'), errorHandler: suppress },
      want: { pre: true, post: true, handled: true },
    },
    {
      name: 'handle error and raise',
      wf: { precondition: fn('pre', 'precondition error'), postcondition: fn('post', 'postcondition error'), errorHandler: raise },
      want: { pre: true, handled: true },
      errs: ['precondition error'],
    },
  ]
  for (const c of cases) {
    for (const k of Object.keys(called) as Array<keyof typeof called>) called[k] = false
    let err: unknown
    try {
      await new Workflow(c.wf).reconcile(ctxOf())
    } catch (e) {
      err = e
    }
    assert.equal(called, { pre: false, t1: false, t2: false, post: false, handled: false, ...c.want }, c.name)
    if (c.errs) assert.ok(err instanceof Error && c.errs.includes(err.message), `${c.name}: got ${String(err)}`)
    else assert.is(err, undefined, c.name)
  }
})

test('a suppressed error: the workflow goes on; the handler gets the carried-over error joined in (issue 26, cause 5)', async () => {
  const seen: string[] = []
  const carried = new Error('topology has a cycle')
  const got: unknown[] = []
  const wf = new Workflow({
    precondition: (ctx) => {
      seen.push(`pre (given: ${(ctx.error as Error)?.message})`)
      throw new Error('precondition error')
    },
    tasks: [
      (ctx) => {
        seen.push(`task (given: ${(ctx.error as Error)?.message})`)
      },
    ],
    postcondition: () => {
      seen.push('post')
    },
    errorHandler: (err) => {
      got.push(err)
    },
  })
  await wf.reconcile(ctxOf([], { error: carried }))
  assert.equal(seen, ['pre (given: topology has a cycle)', 'task (given: topology has a cycle)', 'post'])
  assert.is(got.length, 1)
  assert.instance(got[0], WorkflowError)
  const joined = got[0] as WorkflowError
  assert.is(joined.code, 'Workflow')
  assert.is(joined.errors[0], carried)
  assert.is((joined.errors[1] as Error).message, 'precondition error')
  assert.is(joined.message, 'topology has a cycle\nprecondition error', "Go's errors.Join: one message per line")
  // nothing carried over: the step's error as it is
  const plain: unknown[] = []
  await new Workflow({
    tasks: [
      () => {
        throw new RangeError('x')
      },
    ],
    errorHandler: (err) => {
      plain.push(err)
    },
  }).reconcile(ctxOf())
  assert.instance(plain[0], RangeError)
})

test('Workflow: the first task error aborts the other tasks, which are waited for before the postcondition', async () => {
  const seen: string[] = []
  const wf = new Workflow({
    tasks: [
      (ctx) =>
        new Promise<void>((resolve) =>
          ctx.signal.addEventListener('abort', () => {
            setImmediate(() => {
              seen.push(`slow saw abort: ${(ctx.signal.reason as Error).message}`)
              resolve()
            })
          }),
        ),
      async () => {
        seen.push('failing')
        throw new Error('task failed')
      },
    ],
    postcondition: () => {
      seen.push('post')
    },
    errorHandler: (err) => {
      seen.push(`handled: ${(err as Error).message}`)
    },
  })
  await wf.reconcile(ctxOf())
  assert.equal(seen, ['failing', 'slow saw abort: task failed', 'handled: task failed', 'post'])
})

test('Subscription: runs only for matching events, passes those, and not on runs without events (issue 26, cause 6)', async () => {
  const got: ResourceEvent[][] = []
  const sub = new Subscription({
    events: [{ kind: 'Gateway', type: 'create' }],
    reconcile: (ctx) => {
      got.push([...ctx.events])
    },
  })
  const gw = { kind: 'Gateway', group: 'g', type: 'create', new: { metadata: { name: 'a' } } } as ResourceEvent
  const rt = { kind: 'HTTPRoute', group: 'g', type: 'create', new: { metadata: { name: 'b' } } } as ResourceEvent
  await sub.reconcile(ctxOf([rt]))
  await sub.reconcile(ctxOf([]))
  await sub.reconcile(ctxOf([gw, rt]))
  assert.equal(got, [[gw]], 'a run without events does not run it')
  const onEmpty = new Subscription({
    events: [{ kind: 'Gateway' }],
    onEmpty: true,
    reconcile: (ctx) => {
      got.push([...ctx.events])
    },
  })
  await onEmpty.reconcile(ctxOf([]))
  assert.equal(got.at(-1), [], 'onEmpty: true runs it on a run without events')
  // matchers: namespace and name of the object (the old one of a delete)
  const del = { kind: 'Gateway', group: 'g', type: 'delete', old: { metadata: { name: 'gone', namespace: 'ns' } } } as ResourceEvent
  const byName = new Subscription({ events: [{ namespace: 'ns', name: 'gone' }], reconcile: (ctx) => void got.push([...ctx.events]) })
  await byName.reconcile(ctxOf([gw, del]))
  assert.equal(got.at(-1), [del])
})

test('traceReconcile: a span per call, the carried-over error and the function error recorded (tracing.go TraceReconcileFunc)', async () => {
  const tracer = new RecordingTracer()
  const ok = traceReconcile('ok-fn', () => {})
  const failing = traceReconcile('failing-fn', () => {
    throw new Error('boom')
  })
  await ok(ctxOf([], { tracer }))
  await ok(ctxOf([], { tracer, error: new Error('carried') }))
  await assertRejects(async () => failing(ctxOf([], { tracer })), 'boom')
  assert.equal(
    tracer.spans.map((s) => [s.name, s.status, s.attributes, s.exceptions, s.ended]),
    [
      ['ok-fn', { code: 1 }, {}, [], true],
      ['ok-fn', { code: 1 }, { 'error.carryover': true }, ['carried'], true],
      ['failing-fn', { code: 2, message: 'boom' }, {}, ['boom'], true],
    ],
  )
  // without a tracer it is the function
  let ran = 0
  await traceReconcile('x', () => void ran++)(ctxOf())
  assert.is(ran, 1)
})

test.run()
