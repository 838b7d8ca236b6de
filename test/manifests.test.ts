// Manager.manifests() for the example operator of examples/backup-operator.ts (leader election on, as
// deployed): the generated ClusterRole allows every request a run makes (created, paused, a bad
// schedule, deleted with its finalizer) and has no rule the run did not use, but for the verbs below
// with the reason they are needed; the manifests (CRD and webhook configuration included) are
// accepted by the test server, but for cert-manager's kinds, which it does not serve.
// Follows test/rbac.test.ts (recorded requests against a role), here for a generated role.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { generateTls, startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { webhookPath } from '@statewright/controller/webhooks'
import { Backup, backupOperator } from '../examples/backup-operator.ts'
import { rbacOf } from './lib/rbac.ts'

const UA = 'backup-operator-under-test'
const NEEDED_UNEXERCISED = new Map([
  ['backup.statewright.io/backups/get', 'the finalizer reads a Backup again when its conditional patch gets 409'],
  ['/events/patch', 'the Event recorder aggregates a repeated event by patching its count'],
  [
    'backup.statewright.io/backups/finalizers/update',
    'blockOwnerDeletion needs it where OwnerReferencesPermissionEnforcement is on (the test server does not enforce it)',
  ],
])

test('the generated ClusterRole is exactly what a run of the operator needs; the manifests apply', async () => {
  const server = await startTestServer()
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: UA })
  await admin.request({
    method: 'POST',
    path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    body: Backup.crd,
  })
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const m = backupOperator(
    new Manager({
      name: 'backup-operator',
      cluster,
      handleSignals: false,
      http: false,
      logger: createLogger({ level: 'silent' }),
      retry: { minMs: 20, maxMs: 100 },
      leaderElection: { namespace: 'default', retryPeriodMs: 100, leaseDurationMs: 1000, renewDeadlineMs: 800 },
      webhooks: { port: 0, host: '127.0.0.1', cert: await generateTls(['127.0.0.1']) },
    }),
    { empty: async () => 1 },
    () => clock,
  )
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
    await m.start()
    const leading = () => server.control.requestLog().some((e) => e.userAgent === UA && e.path.includes('/leases/') && e.method === 'PUT')
    while (!leading()) await new Promise((r) => setTimeout(r, 20)) // a renewal is due every 100 ms
    await waitForConvergence(m, { timeoutMs: 15_000 })
    await put('db', { schedule: '0 3 * * *', bucket: 'vault', pausedUntil: new Date(clock + 60_000).toISOString() })
    await put('bad', { schedule: 'nightly', bucket: 'vault' })
    await waitForConvergence(m, { timeoutMs: 15_000 })
    clock += 120_000
    await admin.request({ method: 'DELETE', path: `${backups}/db` })
    await waitForConvergence(m, { timeoutMs: 15_000 })
    await m.events.flush()
  } finally {
    await m.stop()
    await cluster.close()
  }
  const generated = new Set<string>()
  for (const r of m.rbacRules())
    for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) generated.add(`${g}/${res}/${v}`)
  const used = new Set(
    server.control
      .requestLog()
      .filter((e) => e.userAgent === UA)
      .map(rbacOf)
      .filter((x): x is string => !!x),
  )
  try {
    const denied = [...used].filter((u) => !generated.has(u))
    assert.equal(denied, [], `requests the generated ClusterRole does not allow: ${denied.join(', ')}`)
    const unused = [...generated].filter((a) => !used.has(a) && !NEEDED_UNEXERCISED.has(a))
    assert.equal(unused, [], `rules the operator never used: ${unused.join(', ')} (used: ${[...used].sort().join(', ')})`)

    const objs = m.manifests({ namespace: 'backup-system', image: 'example.com/backup-operator:1.0' })
    assert.equal(
      objs.map((o) => o.kind),
      [
        'CustomResourceDefinition',
        'ServiceAccount',
        'ClusterRole',
        'ClusterRoleBinding',
        'Service',
        'Issuer',
        'Certificate',
        'ValidatingWebhookConfiguration',
        'Deployment',
      ],
    )
    const vwc: any = objs.find((o) => o.kind === 'ValidatingWebhookConfiguration')
    assert.equal(vwc.webhooks[0].clientConfig.service, {
      name: 'backup-operator-webhook',
      namespace: 'backup-system',
      path: webhookPath(Backup, 'validate'),
    })
    const deploy: any = objs.find((o) => o.kind === 'Deployment')
    assert.equal(deploy.spec.template.spec.containers[0].args, [
      '--metrics-bind-address=:8080',
      '--health-probe-bind-address=:8081',
      '--leader-elect',
    ])
    assert.is(deploy.spec.replicas, 2)
    await admin.request({
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'backup-system' } },
    })
    const RESOURCES: Record<string, string> = {
      ServiceAccount: 'serviceaccounts',
      ClusterRole: 'clusterroles',
      ClusterRoleBinding: 'clusterrolebindings',
      Service: 'services',
      ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
      Deployment: 'deployments',
    }
    // the CRD is installed already; cert-manager's kinds are not served by the test server
    for (const o of objs.filter((x) => RESOURCES[x.kind!])) {
      const group = o.apiVersion!.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`
      const res = RESOURCES[o.kind!]!
      const ns = o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''
      await admin.request({ method: 'POST', path: `${group}${ns}/${res}`, body: o })
    }
  } finally {
    await admin.close()
    await server.stop()
  }
})

test.run()
