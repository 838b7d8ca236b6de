// A custom kind declared once with TypeBox: its objects' type (checked by the compiler: this file's
// types), its CRD (structural: the test server, which refuses a non-structural schema as
// kube-apiserver does, accepts and enforces it), installed at start, watched and reconciled with
// status conditions; schemas that cannot be structural are refused naming the field.
// The CRD rules followed are apiextensions' structural-schema rules (k8s.io/apiextensions-apiserver
// pkg/apiserver/schema: ValidateStructural), which the test server's structural.ts ports.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Type } from '@sinclair/typebox'
import type { Table } from '@statewright/statedb'
import { ApiError } from '@statewright/k8s'
import { ConfigError, Manager, createLogger, findCondition, waitForConvergence } from '@statewright/controller'
import { customKind, type CustomObject } from '@statewright/controller/crd'
import { startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'

type Equals<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false

const BackupSpec = Type.Object({
  schedule: Type.String({ description: 'A cron schedule.' }),
  mode: Type.Union([Type.Literal('full'), Type.Literal('incremental')]),
  keep: Type.Optional(Type.Integer({ exclusiveMinimum: 0 })),
  labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  targets: Type.Optional(Type.Array(Type.Object({ bucket: Type.String(), region: Type.Optional(Type.String()) }))),
})
const BackupStatus = Type.Object({ lastRun: Type.Optional(Type.String({ format: 'date-time' })) })
const Backup = customKind({
  group: 'backup.example.com',
  kind: 'Backup',
  spec: BackupSpec,
  status: BackupStatus,
  shortNames: ['bk'],
  printerColumns: [{ name: 'Mode', type: 'string', jsonPath: '.spec.mode' }],
})
type BackupObject = CustomObject<typeof BackupSpec, typeof BackupStatus>

/** Compiled, never run: the types a user sees. */
export function typeChecks(m: Manager) {
  const backups = m.watch(Backup)
  const exact: Equals<typeof backups, Table<BackupObject>> = true
  m.reconcile({
    for: Backup,
    fn: (b) => {
      const mode: 'full' | 'incremental' = b.spec.mode
      const keep: number | undefined = b.spec.keep
      // @ts-expect-error not a field of the spec
      void b.spec.retention
      return {
        status: { lastRun: b.status?.lastRun ?? '' },
        conditions: [{ type: 'Valid', status: 'True', reason: mode }],
        ...(keep ? {} : {}),
      }
    },
  })
  return exact
}

test('the CRD: structural (TypeBox unions and Records rewritten), status subresource, conditions, printer columns', () => {
  const v = (Backup.crd.spec as any).versions[0]
  const spec = v.schema.openAPIV3Schema.properties.spec
  assert.equal(spec.properties.mode, { type: 'string', enum: ['full', 'incremental'] })
  assert.equal(spec.properties.keep, { type: 'integer', minimum: 0, exclusiveMinimum: true })
  assert.equal(spec.properties.labels, { type: 'object', additionalProperties: { type: 'string' } })
  assert.equal(spec.required, ['schedule', 'mode'])
  assert.equal(v.subresources, { status: {} })
  assert.equal(v.additionalPrinterColumns, [{ name: 'Mode', type: 'string', jsonPath: '.spec.mode' }])
  const status = v.schema.openAPIV3Schema.properties.status.properties
  assert.equal(Object.keys(status).sort(), ['conditions', 'lastRun', 'observedGeneration'])
  assert.is(status.conditions['x-kubernetes-list-type'], 'map')
  assert.equal(
    [Backup.apiVersion, Backup.resource, Backup.namespaced, Backup.crd.metadata.name],
    ['backup.example.com/v1', 'backups', true, 'backups.backup.example.com'],
  )
})

test('installed at start, enforced by the server, watched and reconciled with status', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const m = new Manager({
    name: 'bk',
    cluster,
    handleSignals: false,
    http: false,
    logger: createLogger({ level: 'silent' }),
    installCrds: [Backup],
  })
  try {
    m.reconcile({
      for: Backup,
      fn: (b) => ({ status: { lastRun: '2026-01-01T00:00:00Z' }, conditions: [{ type: 'Valid', status: 'True', reason: b.spec.mode }] }),
    })
    await m.start()
    const path = '/apis/backup.example.com/v1/namespaces/default/backups'
    const create = (name: string, spec: unknown) =>
      cluster.request({ method: 'POST', path, body: { apiVersion: Backup.apiVersion, kind: 'Backup', metadata: { name }, spec } })
    await create('ok', { schedule: '0 3 * * *', mode: 'full', labels: { team: 'db' } })
    const err = await create('bad', { schedule: '0 3 * * *', mode: 'weekly' }).catch((e) => e)
    assert.ok(err instanceof ApiError && err.code === 422, String(err))
    assert.match(String(err.message), 'spec.mode')
    await waitForConvergence(m, { timeoutMs: 10_000 })
    const got = server.control.get(Backup, 'ok', 'default')
    assert.is(got.status.lastRun, '2026-01-01T00:00:00Z')
    assert.is(findCondition(got.status.conditions, 'Valid')?.reason, 'full')
    assert.is(findCondition(got.status.conditions, 'Ready')?.status, 'True')
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
})

test('bad input: schemas that cannot be structural are refused naming the field', () => {
  const kind = (spec: unknown) => () => customKind({ group: 'x.example.com', kind: 'Thing', spec: spec as object })
  const cases: Array<[unknown, RegExp]> = [
    [
      Type.Object({ v: Type.Union([Type.String(), Type.Number()]) }),
      /customKind Thing: spec\.v: the schema is not structural: anyOf of typed schemas \(a union of types cannot be a CRD field/,
    ],
    [Type.Object({ v: Type.Any() }), /spec\.v: the schema is not structural: no type/],
    [Type.Object({ when: Type.Date() }), /spec\.when: the schema is not structural: type "Date" is not one of/],
    [Type.Object({ a: Type.Object({ b: Type.Null() }) }), /spec\.a\.b: .*type "null"/],
    [Type.Object({ r: Type.Ref('Other') }), /spec\.r: .*\$ref is not allowed/],
    [Type.Object({ p: Type.Record(Type.String({ pattern: '^x' }), Type.String()) }), /spec\.p: .*patternProperties/],
    [Type.Object({ m: Type.Union([Type.Literal('a'), Type.Literal(1)]) }), /spec\.m: .*literals of several types/],
  ]
  for (const [spec, want] of cases) {
    try {
      kind(spec)()
      assert.unreachable(`accepted: ${JSON.stringify(spec)}`)
    } catch (e) {
      assert.instance(e, ConfigError, String(e))
      assert.match((e as Error).message, want)
    }
  }
  assert.throws(() => customKind({ group: 'nodots', kind: 'Thing', spec: Type.Object({}) }), /group must be a domain/)
  assert.throws(() => customKind({ group: 'x.example.com', kind: 'thing', spec: Type.Object({}) }), /kind must be CamelCase/)
})

test.run()
