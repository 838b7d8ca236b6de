// Shared helpers for the controller tests: a test server serving a custom kind (Gadget) through a real
// CRD whose status.conditions is a map list keyed by type, a Cluster on it, and bounded waits on
// statedb tables (woken by the table's watch, never a timed sleep).
import { Table, defineIndex, setValidation } from '@statewright/statedb'
import { startTestServer, type RunningTestServer, type TestServerOptions } from '@statewright/testserver'
import { Cluster, namespacedName, type KubeObject, type ResourceRef } from '@statewright/k8s'

export { waitTable } from '../../../test/lib/wait.ts'

setValidation(true)

export const GADGET: ResourceRef = { apiVersion: 'example.com/v1', kind: 'Gadget', resource: 'gadgets', namespaced: true }

export const GADGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: {
                type: 'object',
                properties: {
                  phase: { type: 'string' },
                  observedGeneration: { type: 'integer' },
                  conditions: {
                    type: 'array',
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['type'],
                    items: {
                      type: 'object',
                      required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
                      properties: {
                        type: { type: 'string' },
                        status: { type: 'string' },
                        reason: { type: 'string' },
                        message: { type: 'string' },
                        lastTransitionTime: { type: 'string', format: 'date-time' },
                        observedGeneration: { type: 'integer' },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
}

export interface Env {
  server: RunningTestServer
  cluster: Cluster
  stop(): Promise<void>
}

/** A test server with the Gadget CRD installed over HTTP, and a Cluster on it. */
export async function env(opts: TestServerOptions = {}): Promise<Env> {
  const server = await startTestServer(opts)
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  await cluster.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: GADGET_CRD })
  return {
    server,
    cluster,
    stop: async () => {
      cluster.close()
      await server.stop()
    },
  }
}

export function gadget(name: string, spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name, namespace: 'default', ...extra }, spec }
}

export async function createGadget(cluster: Cluster, obj: KubeObject): Promise<KubeObject> {
  return cluster.request({ method: 'POST', path: '/apis/example.com/v1/namespaces/default/gadgets', body: obj })
}

export function objectTable(name = 'gadgets'): Table<KubeObject> {
  const byName = defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true })
  return new Table<KubeObject>({ name, primary: byName })
}
