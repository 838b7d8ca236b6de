// The Manager's lifecycle and its edges: SIGTERM stops it gracefully in its own process (exit 0, the
// Lease released, JSON logs on stderr); waitForConvergence's timeout names what is pending; the
// default logger writes pino-shaped JSON lines at LOG_LEVEL and never writes a Secret's data.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawn } from 'node:child_process'
import { startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'

test('SIGTERM: graceful stop in its own process, exit 0, the Lease released', async () => {
  const server = await startTestServer()
  const child = spawn(
    process.execPath,
    ['--conditions=@statewright/source', '--import', 'tsx', new URL('./signal-child.ts', import.meta.url).pathname, server.kubeconfig],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  child.stdout.on('data', (b) => {
    out += b
  })
  child.stderr.on('data', (b) => {
    err += b
  })
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
  try {
    const lease = () => server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'signal-test', 'default')
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (/started http/.test(out) && lease()?.spec?.holderIdentity === 'child') resolve()
        else if (child.exitCode !== null) reject(new Error(`child exited: ${err}`))
      }
      const unsubscribe = server.server.store.subscribe('coordination.k8s.io/leases', check)
      child.stdout.on('data', check)
      void exited.then(() => {
        unsubscribe()
        check()
      })
    })
    child.kill('SIGTERM')
    assert.is(await exited, 0, err)
    assert.is(lease()!.spec.holderIdentity, '', 'the Lease is released on the way out')
    const lines = err
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    assert.ok(lines.some((l) => l.msg === 'signal received; stopping' && l.signal === 'SIGTERM' && l.controller === 'signal-test'))
    assert.ok(lines.some((l) => l.msg === 'manager stopped'))
    assert.ok(lines.every((l) => typeof l.level === 'number' && typeof l.time === 'number'))
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
    await server.stop()
  }
})

test('waitForConvergence: on timeout it throws, naming the desired object still pending', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, requestTimeoutMs: 60_000 })
  const m = new Manager({ name: 'slow', cluster, http: false, handleSignals: false, logger: createLogger({ level: 'silent' }) })
  const cms = m.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { labelSelector: 'copy=yes' })
  m.derive({
    from: cms,
    fn: (cm) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${cm.metadata.name}-copy`, namespace: 'default' } }),
  })
  const undelay = server.control.delay({ method: 'PATCH', ms: 3000 })
  try {
    await cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'o', labels: { copy: 'yes' } } },
    })
    await m.start()
    await waitForConvergence(m, { timeoutMs: 500 }).then(
      () => assert.unreachable('converged through a 3 s apply'),
      (e: Error) => {
        assert.match(e.message, 'not converged after 500 ms (the reconciler)')
        assert.match(e.message, 'desired ConfigMap default/o-copy: pending')
      },
    )
  } finally {
    undelay()
    await m.stop()
    await cluster.close()
    await server.stop()
  }
})

test('the default logger: JSON lines, level filter, bindings, errors serialized, Secrets redacted', () => {
  const lines: string[] = []
  const log = createLogger({ level: 'info', write: (l) => lines.push(l) }).child({ controller: 'c' })
  log.debug('dropped below info')
  log.info({ object: 'default/x' }, 'applied')
  log.warn({ err: new Error('boom'), obj: { apiVersion: 'v1', kind: 'Secret', data: { password: 'aHVudGVyMg==' } } }, 'failed')
  assert.is(lines.length, 2)
  const [a, b] = lines.map((l) => JSON.parse(l))
  assert.equal(
    { level: a.level, controller: a.controller, object: a.object, msg: a.msg },
    { level: 30, controller: 'c', object: 'default/x', msg: 'applied' },
  )
  assert.is(b.level, 40)
  assert.is(b.err.message, 'boom')
  assert.is(b.obj.data, '(redacted)')
  assert.not.match(lines.join(''), 'aHVudGVyMg==')
  const prev = process.env.LOG_LEVEL
  process.env.LOG_LEVEL = 'error'
  const quiet: string[] = []
  createLogger({ write: (l) => quiet.push(l) }).warn('not at error level')
  if (prev === undefined) delete process.env.LOG_LEVEL
  else process.env.LOG_LEVEL = prev
  assert.is(quiet.length, 0, 'LOG_LEVEL sets the default level')
})

test.run()
