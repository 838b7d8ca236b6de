// @statewright/testserver: a Kubernetes API server for tests (real wire protocol, statedb storage,
// fault injection). Start one per simulated cluster; stop it at the end of the test.
import { TestServer, type RequestLogEntry, type TypeMeta } from './server.ts'
import type { TestServerOptions } from './server-options.ts'
import { makeControl, type Control } from './control.ts'

export interface RunningTestServer {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string
  port: number
  /** The bearer token clients must send (null when auth is off). */
  token: string | null
  /** Kubeconfig YAML: `kc.loadFromString(server.kubeconfig)` for @kubernetes/client-node. */
  kubeconfig: string
  /** Path of a kubeconfig file for kubectl (written on first access; removed by stop()). */
  readonly kubeconfigPath: string
  control: Control
  /** The server object itself (store, registry, watches) for advanced tests. */
  server: TestServer
  stop(): Promise<void>
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<RunningTestServer> {
  const s = new TestServer(opts)
  await s.listen()
  return {
    url: s.url,
    port: Number(new URL(s.url).port),
    token: s.token,
    kubeconfig: s.kubeconfig,
    get kubeconfigPath() {
      return s.kubeconfigPath
    },
    control: makeControl(s),
    server: s,
    stop: () => s.stop(),
  }
}

export { TestServer }
export type { TestServerOptions, RequestLogEntry, TypeMeta, Control }
export type { FailRule, DelayRule, RouteMatch } from './faults.ts'
export type { KubeconfigOptions } from './kubeconfig.ts'
export type { ScalePaths, CustomResourceColumnDefinition } from './resource-type.ts'
export type { DeletionTiming } from './object-deletes.ts'
export type { GcFailure } from './gc.ts'
export type { ResourceType, ResourceTypeInput } from './resources.ts'
/** How a webhook's Service reference is reached (the `serviceResolver` option). */
export type { ServiceResolver } from './webhook-client.ts'
export { kubeconfigYaml, kubeconfigObject } from './kubeconfig.ts'
/** A throwaway CA and a serving certificate it signs (for webhooks' TLS in tests). */
export { generateTls, type TlsMaterial } from './tls.ts'
export {
  StatewrightError,
  ConfigError,
  StoppedError,
  TimeoutError,
  UsageError,
  TestServerError,
  type StatewrightErrorCode,
  type TestServerErrorCode,
} from './errors.ts'
