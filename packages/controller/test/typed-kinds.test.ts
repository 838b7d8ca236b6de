// Typed built-in kinds. The type checks are this file's types (`npm run typecheck` compiles tests):
// `m.watch(ConfigMap)` is a Table<V1ConfigMap> with no cast, a wrong table type is an error,
// `m.watch<V1ConfigMap>(...)` (TS2344 before) and `Reflector<V1ConfigMap>` compile, untyped kinds stay
// KubeObject. At run time: each constant's resource and scope are what the test server's discovery
// (kube-apiserver's documents) says, and a typed watch reflects and reconciles through the server.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { V1ConfigMap, V1Deployment } from '@kubernetes/client-node'
import { DB, type Table } from '@statewright/statedb'
import { Reflector, resolveKind, type KubeObject } from '@statewright/k8s'
import { BUILTIN_KINDS, ConfigMap, Deployment } from '@statewright/k8s/kinds'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { env, objectTable } from './helpers.ts'

type Equals<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false
const quiet = createLogger({ level: 'silent' })

/** Compiled, never run: the types a user sees. */
export function typeChecks(m: Manager, db: DB) {
  const cms = m.watch(ConfigMap)
  const exact: Equals<typeof cms, Table<V1ConfigMap>> = true
  const wrong: Equals<typeof cms, Table<V1Deployment>> = false
  const deployments: Table<V1Deployment> = m.watch(Deployment)
  const explicit: Table<V1ConfigMap> = m.watch<V1ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap' }) // TS2344 before
  const untyped = m.watch({ apiVersion: 'example.com/v1', kind: 'Gadget' })
  const stillUntyped: Equals<typeof untyped, Table<KubeObject>> = true
  interface Gadget extends KubeObject {
    spec: { size: number }
  }
  const mine: Table<Gadget> = m.watch<Gadget>({ apiVersion: 'example.com/v1', kind: 'Gadget' })
  m.reconcile({
    for: ConfigMap,
    fn: (cm) => {
      const data: { [key: string]: string } | undefined = cm.data
      // @ts-expect-error V1ConfigMap has no spec
      void cm.spec
      return { status: { keys: Object.keys(data ?? {}).length } }
    },
  })
  m.reconcile({ for: mine, fn: (g) => ({ status: { size: g.spec.size } }) })
  const reflector = new Reflector<V1ConfigMap>({ cluster: m.cluster, db, table: cms, kind: ConfigMap })
  return [exact, wrong, deployments, explicit, stillUntyped, reflector]
}

test('each built-in kind constant has the resource and scope discovery gives (every kind the test server serves)', async () => {
  const e = await env()
  try {
    const unserved: string[] = []
    for (const k of BUILTIN_KINDS) {
      const r = await resolveKind(e.cluster, { apiVersion: k.apiVersion, kind: k.kind }).catch(() => undefined)
      if (!r) unserved.push(`${k.apiVersion} ${k.kind}`)
      else assert.equal([r.resource, r.namespaced], [k.resource, k.namespaced], `${k.apiVersion} ${k.kind}`)
    }
    // the test server serves every other built-in kind of the list
    assert.equal(unserved, ['v1 PersistentVolume', 'autoscaling/v1 HorizontalPodAutoscaler'])
  } finally {
    await e.stop()
  }
})

test('a typed watch reflects ConfigMaps through the server', async () => {
  const e = await env()
  const m = new Manager({ name: 'typed', cluster: e.cluster, logger: quiet, handleSignals: false, http: false })
  try {
    const cms = m.watch(ConfigMap, { namespace: 'default' })
    m.derive({
      from: cms,
      fn: (cm) =>
        cm.metadata?.name === 'in'
          ? { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'out', namespace: 'default' }, data: { copied: cm.data?.v ?? '' } }
          : undefined,
    })
    await e.cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'in' }, data: { v: 'hello' } },
    })
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.is(e.server.control.get(ConfigMap, 'out', 'default').data.copied, 'hello')
  } finally {
    await m.stop()
    await e.stop()
  }
})

void objectTable
test.run()
