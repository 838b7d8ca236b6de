// A Manager in its own process (for lifecycle.test.ts): argv[2] is the kubeconfig. It elects itself
// leader of Lease default/signal-test, mirrors ConfigMaps labelled copy=yes, logs JSON lines to
// stderr, and is stopped by the SIGTERM the test sends (the Manager's own signal handling).
import { Cluster } from '@statewright/k8s'
import { Manager } from '@statewright/controller'

const cluster = new Cluster({ kubeconfig: process.argv[2]!, qps: 0 })
const m = new Manager({
  name: 'signal-test',
  cluster,
  http: { port: 0 },
  leaderElection: { namespace: 'default', identity: 'child', retryPeriodMs: 100 },
})
const cms = m.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { labelSelector: 'copy=yes' })
m.derive({
  from: cms,
  owns: [{ apiVersion: 'v1', kind: 'ConfigMap' }],
  fn: (cm) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${cm.metadata.name}-copy`, namespace: cm.metadata.namespace } }),
})
await m.start()
process.stdout.write(`started ${m.url}\n`)
