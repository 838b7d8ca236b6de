// The deploy path proven against RBAC (issue 38): examples/backup-operator.ts runs on a test server that
// enforces RBAC, as its ServiceAccount bound to exactly the ClusterRole its manifests() generate
// (leader election on, as deployed), through creation, a pause, a bad schedule and a deletion with its
// finalizer. Every request it makes must be allowed: a 403 anywhere fails the test.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { generateTls, startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { startAsServiceAccount } from '@statewright/controller/deploy'
import { backupOperator } from '../examples/backup-operator.ts'

test('the backup operator runs as its ServiceAccount with only its generated role: nothing refused', async () => {
  const server = await startTestServer({ rbac: true })
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const tls = await generateTls(['127.0.0.1'])
  const build = (cluster: Cluster) =>
    backupOperator(
      new Manager({
        name: 'backup-operator',
        cluster,
        handleSignals: false,
        http: false,
        logger: createLogger({ level: 'silent' }),
        retry: { minMs: 20, maxMs: 100 },
        leaderElection: { namespace: 'backup-operator-system', retryPeriodMs: 100, leaseDurationMs: 1000, renewDeadlineMs: 800 },
        webhooks: { port: 0, host: '127.0.0.1', cert: tls },
      }),
      { empty: async () => 3 },
    )
  const m = await startAsServiceAccount(server, build, { leaderElection: true })
  const backups = '/apis/backup.statewright.io/v1/namespaces/default/backups'
  const put = (name: string, spec: Record<string, unknown>) =>
    admin.request({
      method: 'PATCH',
      path: `${backups}/${name}`,
      query: { fieldManager: 'user', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'backup.statewright.io/v1', kind: 'Backup', metadata: { name, namespace: 'default' }, spec },
    })
  try {
    await put('db', { schedule: '0 3 * * *', bucket: 'vault' })
    await waitForConvergence(m, { timeoutMs: 20_000 })
    assert.ok(server.control.get({ apiVersion: 'batch/v1', kind: 'CronJob' }, 'backup-db', 'default'), 'its CronJob applied')
    await put('db', { schedule: '0 3 * * *', bucket: 'vault', pausedUntil: new Date(Date.now() + 60_000).toISOString() })
    await put('bad', { schedule: 'nightly', bucket: 'vault' })
    await waitForConvergence(m, { timeoutMs: 20_000 })
    await admin.request({ method: 'DELETE', path: `${backups}/db` })
    await waitForConvergence(m, { timeoutMs: 20_000 })
    await m.events.flush()
    assert.not.ok(server.control.get({ apiVersion: 'backup.statewright.io/v1', kind: 'Backup' }, 'db', 'default'), 'its finalizer ran')
  } finally {
    await m.stop()
    admin.close()
    await server.stop()
  }
  const refused = server.control
    .requestLog()
    .filter((e) => e.status === 403)
    .map((e) => `${e.method} ${e.path}`)
  assert.equal(refused, [], 'requests the generated role does not allow')
  const asSa = server.control.requestLog().filter((e) => e.token?.startsWith('sa-')).length
  assert.ok(asSa > 10, `the operator's requests went as its ServiceAccount (${asSa})`)
})

test.run()
