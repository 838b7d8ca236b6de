// A state-of-world function that reads the apply state of what it derives (ctx.applied, ctx.observed)
// runs again when that state changes, even inside a Subscription whose events do not match (issue
// 36, bug 8): a policy's Enforced=True comes once its objects are applied, with no extra watch.
// The reads are tracked as a derivation's joins are: only a Subscription that read a changed object runs.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { startTestServer } from '@statewright/testserver'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { createLogger, waitForConvergence } from '@statewright/controller'
import { StateOfWorldController, Subscription, Workflow } from '@statewright/controller/stateofworld'
import { defineTopology } from '@statewright/topology'

const CM = '/api/v1/namespaces/default/configmaps'

test('a Subscription that read ctx.applied runs again when the apply completes; one that did not, does not', async () => {
  const server = await startTestServer()
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const seen: boolean[] = []
  let otherRuns = 0
  const copyOf = (src: KubeObject): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `copy-${src.metadata.name}`, namespace: 'default' },
    data: { ...(src.data as Record<string, string>) },
  })
  const ctl = new StateOfWorldController({
    name: 'applied',
    clusters: [cluster],
    logger: createLogger({ level: 'silent' }),
    retry: { minMs: 10, maxMs: 50 },
    watch: [{ kind: { apiVersion: 'v1', kind: 'ConfigMap' }, labelSelector: 'app=src' }],
    topology: defineTopology({ targetables: [{ kind: 'ConfigMap' }], links: [] }),
    reconcile: new Workflow({
      tasks: [
        new Subscription({
          events: [{ kind: 'ConfigMap' }],
          reconcile: (ctx) => {
            const srcs = ctx.table('ConfigMap').all(ctx.txn).toArray()
            const copies = srcs.map(copyOf)
            ctx.desire('copies', copies)
            for (const c of copies) seen.push(ctx.applied(c))
          },
        }).reconcile,
        new Subscription({ events: [{ kind: 'Secret' }], reconcile: () => void otherRuns++ }).reconcile,
      ],
    }).reconcile,
  })
  // the copy's apply is slow: the first run sees it not applied
  const undelay = server.control.delay({ method: 'PATCH', path: /configmaps\/copy-/, ms: 300 })
  try {
    await ctl.start()
    await cluster.request({
      method: 'POST',
      path: CM,
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'a', namespace: 'default', labels: { app: 'src' } },
        data: { v: '1' },
      },
    })
    await waitForConvergence(ctl.manager, { timeoutMs: 20_000 })
    assert.ok(server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, 'copy-a', 'default'), 'the copy is applied')
    assert.is(seen[0], false, 'the first run saw the copy not applied yet')
    assert.is(seen[seen.length - 1], true, 'a run after the apply saw it applied (no new event)')
    assert.is(otherRuns, 0, 'a Subscription that read nothing did not run')
  } finally {
    undelay()
    await ctl.stop()
    await cluster.close()
    await server.stop()
  }
})

test.run()
