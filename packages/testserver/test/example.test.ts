// The example of docs/testserver.md: a small controller tested against the server, with faults.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import * as k8s from '@kubernetes/client-node'
import { startTestServer } from '../src/index.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Labels every ConfigMap in `default` with seen=yes: list, then watch from the list's version; on any
 *  watch end (reset, 410, close) it lists again. Failed writes are retried. */
function startMyController(kc: k8s.KubeConfig) {
  const core = kc.makeApiClient(k8s.CoreV1Api)
  let stopped = false
  let watch: AbortController | undefined
  const label = async (cm: k8s.V1ConfigMap) => {
    while (!stopped && cm.metadata?.labels?.seen !== 'yes') {
      try {
        await core.patchNamespacedConfigMap(
          { namespace: 'default', name: cm.metadata!.name!, body: { metadata: { labels: { seen: 'yes' } } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        )
        return
      } catch {
        await sleep(20)
      }
    }
  }
  const loop = (async () => {
    while (!stopped) {
      try {
        const list = await core.listNamespacedConfigMap({ namespace: 'default' })
        for (const cm of list.items) await label(cm)
        await new Promise<void>((resolve) => {
          void new k8s.Watch(kc)
            .watch(
              '/api/v1/namespaces/default/configmaps',
              { resourceVersion: list.metadata!.resourceVersion },
              (type, obj) => {
                if (type === 'ADDED' || type === 'MODIFIED') void label(obj)
              },
              () => resolve(),
            )
            .then(
              (c) => {
                watch = c
                if (stopped) c.abort()
              },
              () => resolve(),
            )
        })
      } catch {
        await sleep(20)
      }
    }
  })()
  return {
    stop: async () => {
      stopped = true
      watch?.abort()
      await loop
    },
  }
}

async function waitFor(cond: () => Promise<boolean>, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs
  while (!(await cond().catch(() => false))) {
    if (Date.now() > end) throw new Error('timed out')
    await sleep(10)
  }
}

test('the controller labels every ConfigMap, and survives a watch reset, compaction and failing writes', async () => {
  const server = await startTestServer()
  const kc = new k8s.KubeConfig()
  kc.loadFromString(server.kubeconfig)
  const core = kc.makeApiClient(k8s.CoreV1Api)
  const seen = async (name: string) => (await core.readNamespacedConfigMap({ namespace: 'default', name })).metadata?.labels?.seen === 'yes'

  const controller = startMyController(kc)
  try {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'a' } } })
    await waitFor(() => seen('a'))

    server.control.resetWatches()
    server.control.compact()
    server.control.fail({ method: 'PATCH', ratio: 0.3, status: 503 })
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'b' } } })
    await waitFor(() => seen('b'))

    const patches = server.control.requestLog().filter((r) => r.method === 'PATCH')
    assert.ok(patches.length >= 2)
    assert.ok(
      patches.every((r) => r.token === server.token),
      'credentials sent',
    )
  } finally {
    await controller.stop()
    await server.stop()
  }
})

test.run()
