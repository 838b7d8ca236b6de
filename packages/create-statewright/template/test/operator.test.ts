// The operator on statewright's test API server (a real HTTPS API server in this process) that
// enforces RBAC: it runs as its ServiceAccount with exactly the role its manifests generate, so this
// test also proves that role is enough. An App gets its Deployment and Service and a Ready status; the
// webhook (registered from the operator's own manifests) refuses too many replicas.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { generateTls, startTestServer } from '@statewright/testserver'
import { ApiError, Cluster, type KubeObject } from '@statewright/k8s'
import { Deployment, Service } from '@statewright/k8s/kinds'
import { Manager, createLogger, findCondition, conditionsOf, waitForConvergence } from '@statewright/controller'
import { startAsServiceAccount } from '@statewright/controller/deploy'
import { App, operator } from '../src/operator.ts'

test('an App gets its Deployment, Service and status; the webhook refuses too many replicas', async (t) => {
  const server = await startTestServer({ rbac: true })
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const tls = await generateTls(['127.0.0.1'])
  const m = await startAsServiceAccount(server, (cluster) =>
    operator(
      new Manager({
        name: '__NAME__',
        cluster,
        http: false,
        handleSignals: false,
        logger: createLogger({ level: 'silent' }),
        webhooks: { port: 0, host: '127.0.0.1', cert: tls },
      }),
    ),
  )
  t.after(async () => {
    await m.stop()
    admin.close()
    await server.stop()
  })
  // the webhook configuration the manifests deploy, pointed at this process
  const config = m.manifests().find((o) => o.kind === 'ValidatingWebhookConfiguration') as KubeObject & { webhooks: any[] }
  for (const w of config.webhooks)
    w.clientConfig = { url: `${m.webhookUrl}${w.clientConfig.service.path}`, caBundle: Buffer.from(tls.caPem).toString('base64') }
  await admin.request({ method: 'POST', path: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', body: config })

  const apps = '/apis/apps.example.com/v1/namespaces/default/apps'
  const app = (name: string, replicas: number) => ({
    apiVersion: App.apiVersion,
    kind: App.kind,
    metadata: { name, namespace: 'default' },
    spec: { image: 'nginx:1.27', replicas },
  })
  await admin.request({ method: 'POST', path: apps, body: app('web', 2) })
  await waitForConvergence(m, { timeoutMs: 20_000 })
  assert.equal(server.control.get(Deployment, 'web', 'default').spec.replicas, 2)
  assert.ok(server.control.get(Service, 'web', 'default'))
  const live = server.control.get(App, 'web', 'default')
  assert.equal(live.status.url, 'http://web.default.svc')
  assert.equal(findCondition(conditionsOf(live), 'Ready')?.status, 'True')
  assert.deepEqual(
    server.control
      .requestLog()
      .filter((e) => e.status === 403)
      .map((e) => `${e.method} ${e.path}`),
    [],
    'every request of the operator is allowed by its generated role',
  )

  await assert.rejects(
    admin.request({ method: 'POST', path: apps, body: app('huge', 50) }),
    (err: unknown) => err instanceof ApiError && /more than 10/.test(err.message),
  )
})
