// The example operator of examples/backup-operator.ts (issue 27's contract), on the test server with
// only waitForConvergence and table waits: its CRD (from the TypeBox schema) installed at start; a
// Backup gets its CronJob (owned), status and conditions; a pause suspends the CronJob and the requeue
// un-suspends it when the pause ends, with no change to the Backup; a bad schedule from before the
// webhook is Ready=False with a Warning Event naming the field, and the validating webhook (over TLS,
// called by the test server) refuses a new one; deleting a Backup empties its bucket prefix first
// (the finalizer), reported by an Event, and takes the CronJob along.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { generateTls, startTestServer } from '@statewright/testserver'
import { ApiError, Cluster } from '@statewright/k8s'
import { CronJob } from '@statewright/k8s/kinds'
import { Manager, conditionsOf, createLogger, findCondition, waitForConvergence } from '@statewright/controller'
import { webhookPath } from '@statewright/controller/webhooks'
import { Backup, backupOperator } from '../examples/backup-operator.ts'
import { waitTable } from './lib/wait.ts'

const BACKUP = { apiVersion: 'backup.statewright.io/v1', kind: 'Backup' }
const BACKUPS = '/apis/backup.statewright.io/v1/namespaces/default/backups'

test('Backups: CronJob, status, pause with requeue, a bad schedule, a finalizer with an Event', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const tls = await generateTls(['127.0.0.1'])
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const emptied: string[] = []
  const m = backupOperator(
    new Manager({
      name: 'backup-operator',
      cluster,
      handleSignals: false,
      http: false,
      logger: createLogger({ level: 'silent' }),
      retry: { minMs: 20, maxMs: 200 },
      installCrds: [Backup],
      webhooks: { port: 0, host: '127.0.0.1', cert: tls },
    }),
    { empty: async (bucket, prefix) => (emptied.push(`${bucket}/${prefix}`), 7) },
    () => clock,
  )
  const put = (name: string, spec: Record<string, unknown>) =>
    cluster.request({
      method: 'PATCH',
      path: `${BACKUPS}/${name}`,
      query: { fieldManager: 'user', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { ...BACKUP, metadata: { name, namespace: 'default' }, spec },
    })
  const backup = (name: string) => server.control.get(BACKUP, name, 'default')
  const cronJob = (name: string) => server.control.get(CronJob, `backup-${name}`, 'default')
  const cond = (name: string, type: string) => findCondition(conditionsOf(backup(name)), type)
  const events = async (name: string) => {
    await m.events.flush()
    const list: any = await cluster.request({
      path: '/api/v1/namespaces/default/events',
      query: { fieldSelector: `involvedObject.name=${name}` },
    })
    return list.items as any[]
  }
  try {
    await m.start() // installs the CRD
    await put('db', { schedule: '0 3 * * *', bucket: 'vault' })
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.is(cronJob('db').spec.schedule, '0 3 * * *')
    assert.is(cronJob('db').spec.suspend, false)
    assert.is(cronJob('db').metadata.ownerReferences[0].uid, backup('db').metadata.uid, 'owned by its Backup')
    assert.is(backup('db').status.cronJob, 'backup-db')
    assert.is(backup('db').status.observedGeneration, 1)
    assert.equal([cond('db', 'Ready')?.status, cond('db', 'Paused')?.status], ['True', 'False'])
    assert.ok(backup('db').metadata.finalizers.includes('backup.statewright.io/empty-bucket'))

    // paused for 200 ms of the operator's clock: the requeue runs it again when that is over
    await put('db', { schedule: '0 3 * * *', bucket: 'vault', pausedUntil: new Date(clock + 200).toISOString() })
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.is(cronJob('db').spec.suspend, true)
    assert.equal([cond('db', 'Paused')?.status, cond('db', 'Paused')?.reason], ['True', 'PausedUntil'])
    assert.ok(
      (await events('db')).some((e) => e.reason === 'PausedUntil' && e.type === 'Normal'),
      'the pause is an Event',
    )
    clock += 1000 // the pause is over; nothing changes in the cluster: only the requeue can notice
    const owned = m.watched.get('owned-cronjobs')!.table
    await waitTable(
      m.db,
      owned,
      (txn) => (owned.get(txn, owned.primary.query('default/backup-db'))?.spec as any)?.suspend === false,
      'resumed',
    )
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.is(cond('db', 'Paused')?.status, 'False')

    await put('bad', { schedule: 'every night', bucket: 'vault' }) // before the webhook is configured
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.equal([cond('bad', 'Ready')?.status, cond('bad', 'Ready')?.reason], ['False', 'ReconcileError'])
    assert.is(cond('bad', 'Ready')?.message, 'spec.schedule "every night" is not a cron schedule')
    assert.ok((await events('bad')).some((e) => e.type === 'Warning' && e.message.includes('spec.schedule')))
    assert.is(cronJob('bad'), undefined)

    await cluster.request({
      method: 'POST',
      path: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'backup-operator' },
        webhooks: [
          {
            name: 'vbackup.backup.statewright.io',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            clientConfig: { url: m.webhookUrl + webhookPath(Backup, 'validate'), caBundle: Buffer.from(tls.caPem).toString('base64') },
            rules: [
              { operations: ['CREATE', 'UPDATE'], apiGroups: ['backup.statewright.io'], apiVersions: ['v1'], resources: ['backups'] },
            ],
          },
        ],
      },
    })
    const refused = await put('worse', { schedule: 'hourly', bucket: 'vault' }).catch((e) => e)
    assert.ok(refused instanceof ApiError && refused.code === 403, String(refused))
    assert.match(
      refused.message,
      'admission webhook "vbackup.backup.statewright.io" denied the request: spec.schedule "hourly" is not a cron schedule',
    )

    await cluster.request({ method: 'DELETE', path: `${BACKUPS}/db` })
    await waitForConvergence(m, { timeoutMs: 15_000 })
    assert.equal(emptied, ['vault/db/'])
    assert.is(backup('db'), undefined, 'gone once the bucket is emptied')
    assert.is(cronJob('db'), undefined, 'and its CronJob with it')
    const done = (await events('db')).find((e) => e.reason === 'BucketEmptied')
    assert.is(done?.message, '7 backups deleted from vault')
  } finally {
    await m.stop()
    await cluster.close()
    await server.stop()
  }
})

test.run()
