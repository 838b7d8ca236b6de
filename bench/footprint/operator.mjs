// The footprint bench's operator, run compiled (packages' dist/, plain node, no tsx): a Manager that
// caches the ConfigMaps of a namespace and derives a ConfigMap per Site (the shape of
// examples/configmap-per-site.ts), serving /readyz on the port given. KUBECONFIG names the server.
//   node bench/footprint/operator.mjs <port>
import { Manager, controllerRef } from '@statewright/controller'

const m = new Manager({ name: 'footprint', http: { host: '127.0.0.1', port: Number(process.argv[2]) }, handleSignals: true })
m.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: 'default', name: 'configmaps' })
const sites = m.watch({ apiVersion: 'demo.statewright.io/v1', kind: 'Site' })
m.derive({
  from: sites,
  owns: [{ apiVersion: 'v1', kind: 'Secret' }],
  fn: (site) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `site-${site.metadata.name}`, namespace: site.metadata.namespace, ownerReferences: [controllerRef(site)] },
    stringData: { title: site.spec?.title ?? '' },
  }),
})
await m.start()
