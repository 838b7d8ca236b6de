// The __NAME__ operator: every App (a custom kind declared here; its CRD comes from the schema) gets
// a Deployment and a Service, and its status says where it is served. A validating webhook refuses
// more than 10 replicas. Change the kind and the reconcile function to your needs; the test beside it
// (test/operator.test.ts) runs it on statewright's test API server.
import { Type } from '@sinclair/typebox'
import type { V1Deployment, V1Service } from '@kubernetes/client-node'
import { Manager } from '@statewright/controller'
import { customKind } from '@statewright/controller/crd'
import { Deployment, Service } from '@statewright/k8s/kinds'

export const App = customKind({
  group: 'apps.example.com',
  kind: 'App',
  spec: Type.Object({ image: Type.String(), replicas: Type.Integer({ minimum: 0, default: 1 }) }),
  status: Type.Object({ url: Type.Optional(Type.String()) }),
  printerColumns: [{ name: 'Image', type: 'string', jsonPath: '.spec.image' }],
})

export function operator(m: Manager): Manager {
  const apps = m.watch(App)
  m.webhook({
    for: App,
    validate: (app) => (app.spec.replicas > 10 ? `spec.replicas: ${app.spec.replicas} is more than 10` : undefined),
  })
  m.reconcile({
    for: apps,
    owns: [Deployment, Service],
    fn: (app) => {
      const name = app.metadata.name!
      const namespace = app.metadata.namespace
      const labels = { 'app.kubernetes.io/name': name }
      const deployment: V1Deployment = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace, labels },
        spec: {
          replicas: app.spec.replicas,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: 'app', image: app.spec.image, ports: [{ containerPort: 8080 }] }] },
          },
        },
      }
      const service: V1Service = {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace, labels },
        spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
      }
      return { children: [deployment, service], status: { url: `http://${name}.${namespace}.svc` } }
    },
  })
  return m
}

/** For `npm run manifests` (statewright manifests): the operator's Manager, not started. */
export default () => operator(new Manager({ name: '__NAME__' }))
