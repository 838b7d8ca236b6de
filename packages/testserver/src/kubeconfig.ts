// Kubeconfig generation. The server speaks plain HTTP, so the cluster entry must set
// insecure-skip-tls-verify (@kubernetes/client-node refuses an http:// server otherwise) and the user
// authenticates with the server's bearer token.

export interface KubeconfigOptions {
  server: string
  token: string
  /** Names the cluster, user and context (several servers stand for several clusters). */
  name?: string
  namespace?: string
}

export function kubeconfigObject(o: KubeconfigOptions): Record<string, unknown> {
  const name = o.name ?? 'statewright-test'
  const context: Record<string, string> = { cluster: name, user: name }
  if (o.namespace) context.namespace = o.namespace
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server: o.server, 'insecure-skip-tls-verify': true } }],
    users: [{ name, user: { token: o.token } }],
    contexts: [{ name, context }],
    'current-context': name,
    preferences: {},
  }
}

/** YAML text, readable by kubectl and by KubeConfig.loadFromString. */
export function kubeconfigYaml(o: KubeconfigOptions): string {
  const name = JSON.stringify(o.name ?? 'statewright-test')
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${JSON.stringify(o.server)}`,
    '    insecure-skip-tls-verify: true',
    'users:',
    `- name: ${name}`,
    '  user:',
    `    token: ${JSON.stringify(o.token)}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${name}`,
    ...(o.namespace ? [`    namespace: ${JSON.stringify(o.namespace)}`] : []),
    `current-context: ${name}`,
    'preferences: {}',
    '',
  ].join('\n')
}
