// Kubeconfig generation. Over HTTPS the cluster entry carries the server's generated CA; over plain
// HTTP it sets insecure-skip-tls-verify (@kubernetes/client-node refuses an http:// server otherwise)
// and only client-node will send the bearer token (kubectl and client-go never send one over HTTP).
// The text is written by a YAML library, so names with `:`, `#` or quotes stay valid.
import { stringify } from 'yaml'

export interface KubeconfigOptions {
  server: string
  token: string
  /** Names the cluster, user and context (several servers stand for several clusters). */
  name?: string
  namespace?: string
  /** PEM of the CA that signed the server's certificate (HTTPS). */
  caPem?: string
}

export function kubeconfigObject(o: KubeconfigOptions): Record<string, unknown> {
  const name = o.name ?? 'statewright-test'
  const context: Record<string, string> = { cluster: name, user: name }
  if (o.namespace) context.namespace = o.namespace
  const cluster: Record<string, unknown> = { server: o.server }
  if (o.caPem) cluster['certificate-authority-data'] = Buffer.from(o.caPem).toString('base64')
  else cluster['insecure-skip-tls-verify'] = true
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name, user: { token: o.token } }],
    contexts: [{ name, context }],
    'current-context': name,
    preferences: {},
  }
}

/** YAML text, readable by kubectl and by KubeConfig.loadFromString. */
export function kubeconfigYaml(o: KubeconfigOptions): string {
  return stringify(kubeconfigObject(o), { lineWidth: 0 })
}
