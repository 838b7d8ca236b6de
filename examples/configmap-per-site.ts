// A whole controller: every Site (demo.statewright.io/v1, types generated from site-crd.yaml) gets a
// ConfigMap "site-<name>" with its title, owned by the Site; deleting a Site first releases what it
// holds outside the cluster (a finalizer). Health, readiness and metrics on :8080 (HTTP_HOST, default
// 127.0.0.1); with POD_NAMESPACE set (examples/deploy), replicas elect a leader through a Lease there.
//   node --conditions=@statewright/source --import tsx examples/configmap-per-site.ts   (KUBECONFIG or in cluster)
import { Manager, controllerRef, type ManagerOptions } from '@statewright/controller'
import { Site } from './site-types.ts'

/** What a Site holds outside the cluster (a DNS record, say), released before the Site goes. */
export interface Outside {
  release(site: Site): Promise<void>
}

export function siteController(opts: Partial<ManagerOptions> = {}, outside: Outside = { release: async () => {} }): Manager {
  const m = new Manager({ name: 'site-controller', ...opts })
  const sites = m.watch<Site>(Site)
  m.derive({
    from: sites,
    owns: [{ apiVersion: 'v1', kind: 'ConfigMap' }],
    fn: (site) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `site-${site.metadata.name}`, namespace: site.metadata.namespace, ownerReferences: [controllerRef(site)] },
      data: { title: site.spec?.title ?? '', replicas: String(site.spec?.replicas ?? 1) },
    }),
  })
  m.finalizer({ on: sites, name: 'demo.statewright.io/release', cleanup: (site) => outside.release(site) })
  return m
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const ns = process.env.POD_NAMESPACE
  await siteController({
    http: { host: process.env.HTTP_HOST ?? '127.0.0.1', port: 8080 },
    ...(ns ? { leaderElection: { namespace: ns } } : {}),
  }).start()
}
