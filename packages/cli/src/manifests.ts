// `statewright manifests <module>`: the deployment of an operator, from the operator itself. The
// module's export (default, or --export NAME) is a Manager or a function returning one (not started);
// its manifests() are written as YAML documents: CRDs, ServiceAccount, ClusterRole (exactly the
// requests its parts make), binding and Deployment.
// Invariants:
// - Nothing connects to a cluster: a Manager is only constructed. Where no kubeconfig exists (a CI
//   job), a placeholder one is named in $KUBECONFIG first, so constructing a Cluster does not fail.
// - The CLI stays below the controller: it duck-types the Manager (a `manifests` method) and never
//   imports @statewright/controller.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { stringify } from 'yaml'
import { UsageError } from './errors.ts'

export const MANIFESTS_USAGE =
  "  manifests <module> [--export NAME] [--namespace NS] [--image IMG] [--replicas N] [--leader-elect]   an operator's CRDs, RBAC and Deployment (to stdout)"

const PLACEHOLDER = `apiVersion: v1
kind: Config
clusters: [{ name: none, cluster: { server: "https://127.0.0.1:1" } }]
users: [{ name: none, user: {} }]
contexts: [{ name: none, context: { cluster: none, user: none } }]
current-context: none
`

export async function runManifests(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      export: { type: 'string' },
      namespace: { type: 'string' },
      image: { type: 'string' },
      replicas: { type: 'string' },
      'leader-elect': { type: 'boolean' },
    },
  })
  const file = positionals[0]
  if (!file) throw new UsageError(`manifests: which module? usage:\n${MANIFESTS_USAGE}`)
  const replicas = values.replicas === undefined ? undefined : Number(values.replicas)
  if (replicas !== undefined && !(Number.isInteger(replicas) && replicas >= 0))
    throw new UsageError(`manifests: --replicas must be a whole number, not ${JSON.stringify(values.replicas)}`)
  if (!env.KUBECONFIG && !existsSync(join(homedir(), '.kube', 'config'))) {
    const dir = mkdtempSync(join(tmpdir(), 'statewright-manifests-'))
    writeFileSync(join(dir, 'config'), PLACEHOLDER)
    env.KUBECONFIG = join(dir, 'config')
  }
  const name = values.export ?? 'default'
  const mod = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>
  let m = mod[name]
  if (typeof m === 'function') m = await (m as () => unknown)()
  if (!m || typeof (m as { manifests?: unknown }).manifests !== 'function')
    throw new UsageError(`manifests: ${file}: export "${name}" is not a Manager, nor a function returning one`)
  const objs = (m as { manifests(o: object): unknown[] }).manifests({
    ...(values.namespace ? { namespace: values.namespace } : {}),
    ...(values.image ? { image: values.image } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    ...(values['leader-elect'] ? { leaderElection: true } : {}),
  })
  return objs.map((o) => stringify(o)).join('---\n')
}
