// examples/deploy/clusterrole.yaml, and the rules Manager.rbacRules() generates (equal to it), against
// what examples/configmap-per-site.ts really does: the
// controller runs on the test server (leader election on, as deployed) through creates, updates, a
// deletion with its finalizer, drift and a fight, and a prune; every request it made (verb, group,
// resource) must be allowed by the ClusterRole, and every rule must have been used (nothing more
// than it needs), except the few verbs listed below with the reason they are needed.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readFileSync } from 'node:fs'
import { parse, parseAllDocuments } from 'yaml'
import { startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { createLogger, waitForConvergence } from '@statewright/controller'
import { siteController } from '../examples/configmap-per-site.ts'
import { rbacOf } from './lib/rbac.ts'

const UA = 'site-controller-under-test'
const NEEDED_UNEXERCISED = new Map([
  ['/events/patch', 'the Event recorder aggregates a repeated event by patching its count'],
  [
    'demo.statewright.io/sites/finalizers/update',
    'blockOwnerDeletion needs it where OwnerReferencesPermissionEnforcement is on (the test server does not enforce it)',
  ],
  ['demo.statewright.io/sites/get', 'the finalizer reads a Site again when its conditional patch gets 409'],
])

test('the ClusterRole allows every request the controller makes, and nothing it does not need', async () => {
  const role = parseAllDocuments(readFileSync(new URL('../examples/deploy/clusterrole.yaml', import.meta.url), 'utf8'))
    .map((d) => d.toJS())
    .find((d) => d.kind === 'ClusterRole')
  const allowed = new Set<string>()
  for (const r of role.rules)
    for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) allowed.add(`${g}/${res}/${v}`)

  const server = await startTestServer()
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: UA })
  const crd = parse(readFileSync(new URL('../examples/site-crd.yaml', import.meta.url), 'utf8'))
  await admin.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: crd })
  const sites = '/apis/demo.statewright.io/v1/namespaces/default/sites'
  const put = (name: string, title: string) =>
    admin.request({
      method: 'PATCH',
      path: `${sites}/${name}`,
      query: { fieldManager: 'user', force: true },
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'demo.statewright.io/v1', kind: 'Site', metadata: { name, namespace: 'default' }, spec: { title } },
    })
  let fail = 1
  const m = siteController(
    {
      cluster,
      handleSignals: false,
      http: { port: 0 },
      logger: createLogger({ level: 'silent' }),
      retry: { minMs: 20, maxMs: 100 },
      leaderElection: { namespace: 'default', retryPeriodMs: 100, leaseDurationMs: 1000, renewDeadlineMs: 800 },
      drift: { retry: { minMs: 10, maxMs: 20 }, fightRepairs: 1 },
    },
    {
      release: async () => {
        if (fail-- > 0) throw new Error('not yet')
      },
    },
  )
  try {
    await put('a', 'A')
    await put('b', 'B')
    await m.start()
    const leading = () => server.control.requestLog().some((e) => e.userAgent === UA && e.path.includes('/leases/') && e.method === 'PUT')
    while (!leading()) await new Promise((r) => setTimeout(r, 20)) // bounded by the test runner: a lease renewal is due every 100 ms
    await waitForConvergence(m, { timeoutMs: 15_000 })
    await put('a', 'A2')
    await waitForConvergence(m, { timeoutMs: 15_000 })
    // drift: someone edits our ConfigMap twice (a fight at fightRepairs 1: a Warning Event)
    for (const v of ['x', 'y']) {
      await admin.request({
        method: 'PATCH',
        path: '/api/v1/namespaces/default/configmaps/site-a',
        query: { fieldManager: 'vandal' },
        contentType: 'application/merge-patch+json',
        body: { data: { title: v } },
      })
      await waitForConvergence(m, { timeoutMs: 15_000 })
    }
    // the second repair is backed off (minMs): the fight starts when it runs
    while (m.drift[0]!.fights().length === 0) await new Promise((r) => setTimeout(r, 10))
    // a stale ConfigMap with our owner label: pruned by a full reconciliation
    await admin.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'stale', namespace: 'default', labels: { 'statewright.io/owner': 'site-controller' } },
      },
    })
    await m.reconciler.triggerFullReconciliation()
    await admin.request({ method: 'DELETE', path: `${sites}/b` })
    await waitForConvergence(m, { timeoutMs: 15_000 })
    await m.events.flush()
  } finally {
    await m.stop()
    await cluster.close()
    await admin.close()
    await server.stop()
  }
  const used = new Set(
    server.control
      .requestLog()
      .filter((e) => e.userAgent === UA)
      .map(rbacOf)
      .filter((x): x is string => !!x),
  )
  // the role the Manager generates from its parts is the hand-written one, so it is proven the same way
  const generated = new Set<string>()
  for (const r of m.rbacRules())
    for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) generated.add(`${g}/${res}/${v}`)
  assert.equal([...generated].sort(), [...allowed].sort(), 'Manager.rbacRules() is the ClusterRole')
  const denied = [...used].filter((u) => !allowed.has(u))
  assert.equal(denied, [], `requests the ClusterRole does not allow: ${denied.join(', ')}`)
  const unused = [...allowed].filter((a) => !used.has(a) && !NEEDED_UNEXERCISED.has(a))
  assert.equal(unused, [], `rules the controller never used: ${unused.join(', ')} (used: ${[...used].sort().join(', ')})`)
})

test.run()
