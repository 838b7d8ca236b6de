// Type-checked by scripts/check-packages.mjs with `tsc --noEmit --strict` in a consumer project, from
// the packed tarballs' .d.ts (once with moduleResolution NodeNext, once with bundler). The lines
// expecting an error prove the types are real: if an import resolved to `any`, they would fail.
import { KubeConfig } from '@kubernetes/client-node'
import { Registry } from 'prom-client'
import { DB, Table, defineIndex, type Txn } from '@statewright/statedb'
import {
  PrometheusMetrics,
  Reconciler,
  newStatusIndex,
  statusPending,
  waitForSettled,
  type Metrics,
  type Status,
} from '@statewright/reconciler'
import { Cluster, K8sMetrics, Target, desired, newDesiredTable, type KubeObject } from '@statewright/k8s'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'
import { Manager, waitForConvergence, type ConvergenceResult } from '@statewright/controller'
import { derive } from '@statewright/controller/parts'

interface Memo {
  readonly name: string
  readonly body: string
  readonly status: Status
}

const statusIndex = newStatusIndex<Memo>((m) => m.status)
const byName = defineIndex<Memo, string>({ name: 'name', key: (m) => m.name, unique: true })
const memos = new Table<Memo>({ name: 'memos', primary: byName, indexes: [statusIndex] })
const db = new DB({ tables: [memos] })
const metrics: Metrics = new PrometheusMetrics({ registry: new Registry(), prefix: 'consumer' })

export function names(txn: Txn): string[] {
  return memos
    .all(txn)
    .toArray()
    .map((m) => m.name)
}

export async function run(): Promise<Memo[]> {
  const r = new Reconciler<Memo>({
    db,
    table: memos,
    statusIndex,
    metrics,
    getObjectStatus: (m) => m.status,
    setObjectStatus: (m, status) => ({ ...m, status }),
    operations: { update: async () => {}, delete: () => {} },
  })
  await db.write(memos, (txn) => {
    memos.insert(txn, { name: 'a', body: '', status: statusPending() })
    // @ts-expect-error a Memo needs a status
    memos.insert(txn, { name: 'b', body: '' })
  })
  r.start()
  const errors: Memo[] = await waitForSettled(db, memos, statusIndex)
  await r.stop()
  return errors
}

export async function k8s(): Promise<void> {
  const server: RunningTestServer = await startTestServer({ token: null })
  const kc = new KubeConfig()
  kc.loadFromString(server.kubeconfig)
  const cluster = new Cluster({ kubeConfig: kc }) // the user's own KubeConfig fits
  const metrics = new K8sMetrics(new Registry())
  const text: string = await metrics.registry.metrics()
  const want = newDesiredTable()
  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' } }
  const target = new Target({ clusters: cluster, fieldManager: 'types', kinds: [{ apiVersion: 'v1', kind: 'ConfigMap' }], metrics })
  const d = new DB({ tables: [want.table] })
  await d.write(want.table, (txn) => want.table.insert(txn, desired(cm)))
  // @ts-expect-error the desired table holds DesiredObjects, not KubeObjects
  await d.write(want.table, (txn) => want.table.insert(txn, cm))
  void [text, target]
  await cluster.close()
  await server.stop()
}

export async function controller(cluster: Cluster): Promise<ConvergenceResult> {
  const m = new Manager({ name: 'typed', cluster, http: false, handleSignals: false })
  const cms = m.watch<KubeObject>({ apiVersion: 'v1', kind: 'ConfigMap' })
  m.derive({
    from: cms,
    fn: (cm) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${cm.metadata.name}-x`, namespace: cm.metadata.namespace } }),
  })
  // @ts-expect-error a derivation returns Kubernetes objects, not strings
  m.derive({ from: cms, fn: () => 'not an object' })
  const db = new DB()
  void derive
  void db
  await m.start()
  return waitForConvergence(m, { timeoutMs: 1000 })
}
