// One error root across the packages: a real failure provoked in each package is a StatewrightError
// with a string `code`, and the shared classes (ConfigError, UsageError, StoppedError, TimeoutError,
// the root itself; PruneError, InvalidObjectError) are one class whichever package's index they come
// from, so a catch written against one package's class catches what another package throws.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import * as statedb from '@statewright/statedb'
import * as reconciler from '@statewright/reconciler'
import * as k8s from '@statewright/k8s'
import * as nats from '@statewright/nats'
import * as testserver from '@statewright/testserver'
import * as controller from '@statewright/controller'
import * as topology from '@statewright/topology'
import * as primary from '@statewright/primary'

const { StatewrightError } = statedb

/** The error `fn` throws or rejects with (fails when it does neither). */
async function caught(fn: () => unknown): Promise<unknown> {
  try {
    await fn()
  } catch (err) {
    return err
  }
  throw new Error(`expected a throw from ${fn.toString()}`)
}

/** Asserts err is a StatewrightError of class `cls` (named as the class) with the given string code. */
function rooted(err: unknown, cls: new (...args: any[]) => Error, code: string): void {
  assert.ok(StatewrightError, 'statedb exports StatewrightError')
  assert.instance(err, cls)
  assert.ok(err instanceof StatewrightError, `${(err as Error)?.name}: ${(err as Error)?.message} is not a StatewrightError`)
  const e = err as InstanceType<typeof StatewrightError>
  assert.type(e.code, 'string')
  assert.is(e.code, code)
  assert.is(e.name, cls.name)
}

test('statedb: a bad table definition', async () => {
  const byName = statedb.defineIndex<{ name: string }, string>({ name: 'name', key: (o) => o.name, unique: true })
  const err = await caught(() => new statedb.DB({ tables: [new statedb.Table({ name: 'bad name', primary: byName })] }))
  rooted(err, statedb.DefinitionError, 'Definition')
  assert.instance(err, statedb.StateDBError)
})

test('reconciler: a bad configuration', async () => {
  rooted(await caught(() => new reconciler.Reconciler({} as never)), reconciler.ConfigError, 'Config')
})

test('k8s: a kubeconfig without a cluster, and a kind the server does not serve', async () => {
  rooted(await caught(() => new k8s.Cluster({ kubeconfig: 'apiVersion: v1\nkind: Config\n' })), k8s.ConfigError, 'Config')
  const server = await testserver.startTestServer()
  const cluster = new k8s.Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  try {
    const err = await caught(() => k8s.resolveKind(cluster, { apiVersion: 'v1', kind: 'NoSuchKind' }))
    rooted(err, k8s.UnknownKindError, 'UnknownKind')
    assert.instance(err, k8s.K8sError)
  } finally {
    cluster.close()
    await server.stop()
  }
})

test('nats: a reflector without a connection', async () => {
  rooted(await caught(() => new nats.NatsKvReflector({ bucket: 'b' } as never)), nats.ConfigError, 'Config')
})

test('testserver: a bad option, and a control call on a kind it does not serve', async () => {
  const bad = await caught(async () => {
    const taken = await testserver.startTestServer({ historySize: Number.NaN })
    await taken.stop() // only reached when the option is taken: leave nothing running
  })
  rooted(bad, testserver.ConfigError, 'Config')
  const server = await testserver.startTestServer()
  try {
    const err = await caught(() => server.control.get({ apiVersion: 'v1', kind: 'NoSuchKind' }, 'x'))
    rooted(err, testserver.TestServerError, 'UnknownKind')
  } finally {
    await server.stop()
  }
})

test('topology: a definition without a kind, and a cycle', async () => {
  rooted(
    await caught(() => topology.defineTopology({ targetables: [{ kind: '', table: undefined as never }], links: [] })),
    topology.ConfigError,
    'Config',
  )
  const cycle = new topology.TopologyCycleError(['a', 'b', 'a'])
  rooted(cycle, topology.TopologyCycleError, 'Cycle')
  assert.ok(cycle instanceof topology.TopologyGraphError)
})

test('primary: a controller without a name, and a sync that returns no secondaries', async () => {
  rooted(await caught(() => new primary.PrimaryController({} as never)), primary.ConfigError, 'Config')
  assert.ok(new primary.SyncError('x') instanceof primary.PrimaryError)
  rooted(new primary.SyncError('x'), primary.SyncError, 'Sync')
})

test('controller: a Manager started twice', async () => {
  const server = await testserver.startTestServer()
  const cluster = new k8s.Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const m = new controller.Manager({
    name: 'twice',
    cluster,
    http: false,
    handleSignals: false,
    logger: controller.createLogger({ level: 'silent' }),
  })
  try {
    const first = m.start()
    const second = await caught(() => m.start())
    await first // started before stop() below, whatever the assertion says
    rooted(second, controller.UsageError, 'Usage')
  } finally {
    await m.stop()
    cluster.close()
    await server.stop()
  }
})

test('the shared classes are one class in every package', () => {
  const shared = ['StatewrightError', 'ConfigError', 'UsageError', 'StoppedError', 'TimeoutError'] as const
  const packages = { reconciler, k8s, nats, testserver, controller, topology, primary } as Record<string, Record<string, unknown>>
  for (const name of shared) {
    const root = (statedb as Record<string, unknown>)[name]
    assert.type(root, 'function', `statedb exports ${name}`)
    for (const [pkg, exports] of Object.entries(packages)) assert.ok(exports[name] === root, `${pkg}'s ${name} is statedb's`)
  }
  for (const name of ['ConfigError', 'UsageError', 'StoppedError', 'TimeoutError'] as const)
    assert.ok(statedb[name]?.prototype instanceof StatewrightError, `${name} extends StatewrightError`)
  // defined and exported once, where the operation lives (test/errors-tree.test.ts: by no other package)
  assert.type(reconciler.PruneError, 'function', 'the reconciler exports PruneError')
  assert.type(k8s.InvalidObjectError, 'function', 'k8s exports InvalidObjectError')
  // each package's own base sits under the root
  const bases: Array<[string, unknown]> = [
    ['StateDBError', statedb.StateDBError],
    ['ReconcilerError', reconciler.ReconcilerError],
    ['K8sError', k8s.K8sError],
    ['NatsError', nats.NatsError],
    ['TestServerError', testserver.TestServerError],
    ['ControllerError', controller.ControllerError],
    ['TopologyGraphError', topology.TopologyGraphError],
    ['PrimaryError', primary.PrimaryError],
  ]
  for (const [name, base] of bases) assert.ok((base as any)?.prototype instanceof StatewrightError, `${name} extends StatewrightError`)
})

test.run()
