// Shared helpers for the k8s tests: a test server with a custom kind, a Cluster on it, bounded
// waits on statedb tables, and a comparison of a table with the server's state.
import { DB, Table, defineIndex, setValidation } from '@statewright/statedb'
import { startTestServer, type RunningTestServer, type TestServerOptions } from '@statewright/testserver'
import { Cluster, namespacedName, type ClusterOptions, type KubeObject, type ResourceRef } from '@statewright/k8s'

export { waitTable, waitFor } from '../../../test/lib/wait.ts'

setValidation(true)

export const WIDGET: ResourceRef = { apiVersion: 'example.com/v1', kind: 'Widget', resource: 'widgets', namespaced: true }
export const WIDGET_KIND = { group: 'example.com', version: 'v1', resource: 'widgets', kind: 'Widget' }

export async function startServer(opts: TestServerOptions = {}): Promise<RunningTestServer> {
  return startTestServer({ kinds: [WIDGET_KIND], ...opts })
}

export function clusterFor(server: RunningTestServer, opts: ClusterOptions = {}): Cluster {
  return new Cluster({ kubeconfig: server.kubeconfig, qps: 0, ...opts })
}

export function objectTable(name = 'widgets'): Table<KubeObject> {
  const byName = defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true })
  return new Table<KubeObject>({ name, primary: byName })
}

/** name -> resourceVersion of every object of the kind on the server (one plain list). */
export async function serverState(
  cluster: Cluster,
  path = '/apis/example.com/v1/widgets',
  labelSelector?: string,
): Promise<Map<string, string>> {
  const list = await cluster.request({ path, query: { labelSelector } })
  return new Map(list.items.map((o: KubeObject) => [namespacedName(o), String(o.metadata.resourceVersion)]))
}

export function tableState(db: DB, table: Table<KubeObject>): Map<string, string> {
  return new Map(
    table
      .all(db.readTxn())
      .toArray()
      .map((o) => [namespacedName(o), String(o.metadata.resourceVersion)]),
  )
}

export function sameState(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false
  for (const [k, v] of a) if (b.get(k) !== v) return false
  return true
}

export function diffState(a: Map<string, string>, b: Map<string, string>): string {
  const out: string[] = []
  for (const [k, v] of a) if (b.get(k) !== v) out.push(`${k}: ${v} vs ${b.get(k)}`)
  for (const [k, v] of b) if (!a.has(k)) out.push(`${k}: missing vs ${v}`)
  return `${a.size} vs ${b.size} objects; ${out.slice(0, 5).join('; ')}`
}

export function widget(
  name: string,
  spec: Record<string, unknown> = {},
  labels?: Record<string, string>,
  namespace = 'default',
): KubeObject {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec }
}

export async function create(cluster: Cluster, obj: KubeObject): Promise<KubeObject> {
  return cluster.request({ method: 'POST', path: `/apis/example.com/v1/namespaces/${obj.metadata.namespace}/widgets`, body: obj })
}
export async function patch(cluster: Cluster, name: string, body: unknown, namespace = 'default'): Promise<KubeObject> {
  return cluster.request({
    method: 'PATCH',
    path: `/apis/example.com/v1/namespaces/${namespace}/widgets/${name}`,
    body,
    contentType: 'application/merge-patch+json',
  })
}
export async function remove(cluster: Cluster, name: string, namespace = 'default'): Promise<void> {
  await cluster.request({ method: 'DELETE', path: `/apis/example.com/v1/namespaces/${namespace}/widgets/${name}` })
}
