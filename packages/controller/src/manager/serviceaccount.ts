// startAsServiceAccount: a Manager started in a test as it runs when deployed: as its ServiceAccount,
// with exactly the RBAC its manifests() generate, on a test server that enforces RBAC (`rbac: true`).
// A test that passes this way proves the generated role is enough: any request it lacks is a 403,
// which fails the run as it would in a cluster. envtest needs real binaries for this.
// Invariants:
// - `build` makes the Manager from a cluster; it is called twice: once with the admin's cluster, only
//   for manifests() (never started), then with the ServiceAccount's cluster, started and returned.
// - The admin installs what `kubectl apply` of the manifests would need an admin for: the
//   ServiceAccount, the ClusterRole and binding (the server's grant) and the CRDs; nothing else is
//   granted to the Manager.
import { Cluster, type KubeObject } from '@statewright/k8s'
import type { Manager } from './manager.ts'
import type { ManifestOptions } from './manifests.ts'

/** What startAsServiceAccount needs of a test server (@statewright/testserver's, started with rbac: true). */
export interface RbacTestServer {
  readonly kubeconfig: string
  readonly control: {
    kubeconfigFor(namespace: string, name: string): string
    grant(objects: ReadonlyArray<KubeObject>): Promise<void>
  }
}

export async function startAsServiceAccount(
  server: RbacTestServer,
  build: (cluster: Cluster) => Manager,
  o: ManifestOptions = {},
): Promise<Manager> {
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  let objects: KubeObject[]
  try {
    objects = build(admin).manifests(o)
    await server.control.grant(objects)
    for (const crd of objects.filter((x) => x.kind === 'CustomResourceDefinition')) {
      await admin
        .request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: crd })
        .catch((err: { code?: number }) => {
          if (err?.code !== 409) throw err // installed already
        })
    }
  } finally {
    admin.close()
  }
  const sa = objects.find((x) => x.kind === 'ServiceAccount')!
  const m = build(new Cluster({ kubeconfig: server.control.kubeconfigFor(sa.metadata.namespace!, sa.metadata.name!), qps: 0 }))
  await m.start()
  return m
}
