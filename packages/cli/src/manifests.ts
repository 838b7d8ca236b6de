// `statewright manifests <module>`: the deployment of an operator, from the operator itself. The
// module's export (default, or --export NAME) is a Manager or a function returning one (not started);
// its manifests() are written as YAML documents: CRDs, ServiceAccount, ClusterRole (exactly the
// requests its parts make), binding and Deployment.
// Invariants:
// - Nothing connects to a cluster: a Manager is only constructed. Where no kubeconfig exists (a CI
//   job), a placeholder one is named in $KUBECONFIG first, so constructing a Cluster does not fail.
// - The CLI stays below the controller: it duck-types the Manager (a `manifests` method) and never
//   imports @statewright/controller.
// - The module sees no flags of this command: process.argv holds no arguments while it loads and
//   builds its Manager (a module that calls Manager.fromFlags parses nothing of ours).
// - A .ts module loads through tsx when the project has it (an optional peer: `npm i -D tsx`).
// - The YAML has no anchors or aliases (an object used twice is written twice): reviewers and diff
//   tools read every document on its own.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { stringify } from 'yaml'
import { UsageError } from './errors.ts'
import { HELM_PLACEHOLDERS, helmChart } from './helm.ts'

export const MANIFESTS_USAGE =
  "  manifests <module> [--export NAME] [--namespace NS] [--image IMG] [--replicas N] [--leader-elect] [--helm DIR]   an operator's CRDs, RBAC and Deployment (to stdout, or a Helm chart in DIR)"

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
      helm: { type: 'string' },
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
  const path = resolve(file)
  if (/\.[cm]?tsx?$/.test(path)) await registerTypeScript(file)
  const argv = process.argv
  process.argv = argv.slice(0, 2) // the command itself, none of its flags (a module's "am I main" check stays false)
  let m: unknown
  try {
    const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>
    m = mod[name]
    if (typeof m === 'function') m = await (m as () => unknown)()
  } finally {
    process.argv = argv
  }
  if (!m || typeof (m as { manifests?: unknown }).manifests !== 'function')
    throw new UsageError(`manifests: ${file}: export "${name}" is not a Manager, nor a function returning one`)
  const make = (m as { manifests(o: object): unknown[] }).manifests.bind(m)
  if (values.helm !== undefined) {
    // the chart: made with placeholders the templates replace (helm.ts), leader election on (a value)
    const objs = make({
      namespace: HELM_PLACEHOLDERS.namespace,
      image: HELM_PLACEHOLDERS.image,
      replicas: HELM_PLACEHOLDERS.replicas,
      leaderElection: true,
    })
    const deploy = objs.find((x) => (x as { kind?: string }).kind === 'Deployment') as { metadata: { name: string } } | undefined
    const chartName = deploy?.metadata.name ?? 'operator'
    const files = helmChart(chartName, objs as never, {
      image: values.image ?? `${chartName}:latest`,
      replicas: replicas ?? 2,
      leaderElection: true,
    })
    for (const [path, text] of files) {
      mkdirSync(dirname(join(values.helm, path)), { recursive: true })
      writeFileSync(join(values.helm, path), text)
    }
    return `wrote a Helm chart (${files.size} files) to ${values.helm}\n`
  }
  const objs = make({
    ...(values.namespace ? { namespace: values.namespace } : {}),
    ...(values.image ? { image: values.image } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    ...(values['leader-elect'] ? { leaderElection: true } : {}),
  })
  return objs.map((o) => stringify(o, { aliasDuplicateObjects: false })).join('---\n')
}

/** Lets import() load TypeScript, through tsx (a UsageError naming the install command without it). */
async function registerTypeScript(file: string): Promise<void> {
  let api: { register: () => unknown }
  try {
    api = (await import('tsx/esm/api' as string)) as { register: () => unknown }
  } catch {
    throw new UsageError(`manifests: ${file} is TypeScript: install tsx to load it (npm install --save-dev tsx), or give the built .js`)
  }
  api.register()
}
