// `statewright manifests`: the deployment of examples/backup-operator.ts from the module itself, with
// no cluster and no kubeconfig (a fresh HOME): its CRD (from the schema), ServiceAccount, ClusterRole (the
// rules Manager.rbacRules() derives, which test/manifests.test.ts proves against a recorded run),
// binding, webhook Service, certificate and configuration, and Deployment; a module without a Manager is refused naming the export.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { startTestServer } from '@statewright/testserver'
import { Cluster, collectionPath, resolveKind } from '@statewright/k8s'

const root = new URL('../../../', import.meta.url).pathname
const home = mkdtempSync(join(tmpdir(), 'manifests-home-'))
const run = (...args: string[]) => {
  const { KUBECONFIG: _k, ...env } = process.env
  return spawnSync(
    process.execPath,
    ['--conditions=@statewright/source', '--import', 'tsx', `${root}packages/cli/src/bin.ts`, 'manifests', ...args],
    { encoding: 'utf8', env: { ...env, HOME: home }, cwd: root },
  )
}

test('an operator module: ServiceAccount, ClusterRole, binding, Deployment, without a cluster or a kubeconfig', () => {
  const r = run('examples/backup-operator.ts', '--leader-elect', '--namespace', 'ops', '--image', 'example.com/backup:1')
  assert.is(r.status, 0, r.stderr)
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS())
  assert.equal(
    docs.map((d) => d.kind),
    [
      'CustomResourceDefinition',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Service',
      'Issuer',
      'Certificate',
      'ValidatingWebhookConfiguration',
      'Deployment',
    ],
  )
  const role = docs[2]
  assert.ok(
    role.rules.some((x: any) => x.resources[0] === 'backups/status' && x.verbs.join() === 'patch'),
    'the reconcile step writes status',
  )
  assert.ok(
    role.rules.some((x: any) => x.resources[0] === 'leases'),
    '--leader-elect adds the Lease rules',
  )
  const deploy = docs[8]
  assert.is(deploy.metadata.namespace, 'ops')
  assert.is(deploy.spec.template.spec.containers[0].image, 'example.com/backup:1')
  assert.ok(deploy.spec.template.spec.containers[0].args.includes('--leader-elect'))
})

test('bad input: a module without a Manager, a bad --replicas', () => {
  const dir = mkdtempSync(join(tmpdir(), 'manifests-mod-'))
  try {
    writeFileSync(join(dir, 'x.mjs'), 'export default 42\n')
    const r = run(join(dir, 'x.mjs'))
    assert.is.not(r.status, 0)
    assert.match(r.stderr, 'export "default" is not a Manager, nor a function returning one')
    const r2 = run('examples/backup-operator.ts', '--replicas', 'many')
    assert.match(r2.stderr, '--replicas must be a whole number, not "many"')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a module that reads its own flags (Manager.fromFlags) gets none of ours; the YAML has no anchors', () => {
  const r = run('packages/cli/test/fixtures/flags-operator.ts', '--namespace', 'ops', '--leader-elect')
  assert.is(r.status, 0, r.stderr)
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS())
  assert.equal(
    docs.map((d) => d.kind),
    ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Deployment'],
  )
  assert.is(docs[3].metadata.namespace, 'ops')
  assert.not.match(r.stdout, /[&*]a\d/, 'no YAML anchors or aliases')
  assert.ok(
    docs[1].rules.some((x: any) => x.resources[0] === 'configmaps/finalizers' && x.verbs.join() === 'update'),
    "the reconcile step's kind gets <kind>/finalizers: update (kubebuilder's rule for blockOwnerDeletion)",
  )
})

test('a Manager with no cluster anywhere is made, gives its manifests, and refuses to start naming why', () => {
  const { KUBECONFIG: _k, KUBERNETES_SERVICE_HOST: _h, ...env } = process.env
  const r = spawnSync(
    process.execPath,
    ['--conditions=@statewright/source', '--import', 'tsx', 'packages/cli/test/fixtures/no-cluster.ts'],
    {
      encoding: 'utf8',
      env: { ...env, HOME: home },
      cwd: root,
    },
  )
  assert.is(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!)
  assert.equal(out.kinds, ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Deployment'])
  assert.match(out.started, /^ConfigError: Manager "nowhere": no cluster to run against: /)
})

/**
 * Renders the chart's templates as Helm does for the forms they use: `{{ .Release.Namespace }}`,
 * `{{ .Values.a.b }}`, `{{- if .Values.x }} ... {{- end }}`, `{{- toYaml .Values.x | nindent N }}`
 * (`{{-` trims the whitespace before it). Anything else is an error: a template using more is untested.
 */
function render(text: string, values: any, namespace: string): string {
  const get = (path: string) => path.split('.').reduce((v: any, k) => v?.[k], values)
  let out = text.replace(/\s*\{\{- if \.Values\.([\w.]+) \}\}([\s\S]*?)\s*\{\{- end \}\}/g, (_m, path: string, body: string) =>
    get(path) ? body : '',
  )
  out = out.replace(/\s*\{\{- toYaml \.Values\.([\w.]+) \| nindent (\d+) \}\}/g, (_m, path: string, n: string) =>
    ('\n' + stringify(get(path)).trimEnd()).replace(/\n/g, '\n' + ' '.repeat(Number(n))),
  )
  out = out
    .replace(/\{\{ \.Release\.Namespace \}\}/g, namespace)
    .replace(/\{\{ \.Values\.([\w.]+) \}\}/g, (_m, path: string) => String(get(path)))
  assert.not.match(out, /\{\{/, `an expression the test renderer does not know:\n${out}`)
  return out
}

test('--helm DIR: a chart whose templates, rendered with its values, apply to the test server and follow the values', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'manifests-helm-'))
  try {
    const r = run('examples/backup-operator.ts', '--helm', dir, '--image', 'example.com/backup:1.2')
    assert.is(r.status, 0, r.stderr)
    const values = parse(readFileSync(join(dir, 'values.yaml'), 'utf8'))
    assert.equal(values.image, { repository: 'example.com/backup', tag: '1.2' })
    assert.is(values.replicaCount, 2)
    assert.is(values.leaderElection, true)
    assert.is(parse(readFileSync(join(dir, 'Chart.yaml'), 'utf8')).name, 'backup-operator')
    const templates = readdirSync(join(dir, 'templates')).sort()
    const renderAll = (v: any) =>
      templates
        .flatMap((f) => parseAllDocuments(render(readFileSync(join(dir, 'templates', f), 'utf8'), v, 'ops')).map((d) => d.toJS()))
        .filter(Boolean)
    const objs = renderAll(values)
    assert.ok(
      objs.some((o: any) => o.kind === 'Certificate'),
      'cert-manager issues the webhook certificate by default',
    )
    const deploy = objs.find((o: any) => o.kind === 'Deployment')
    assert.is(deploy.metadata.namespace, 'ops', "the release's namespace")
    assert.is(deploy.spec.replicas, 2)
    assert.is(deploy.spec.template.spec.containers[0].image, 'example.com/backup:1.2')
    assert.ok(deploy.spec.template.spec.containers[0].args.includes('--leader-elect'))
    assert.equal(deploy.spec.template.spec.containers[0].resources, values.resources)
    // other values: one replica, no leader election, more memory, no cert-manager
    const other = renderAll({
      ...values,
      replicaCount: 1,
      leaderElection: false,
      resources: { limits: { memory: '1Gi' } },
      webhook: { certManager: false },
    })
    const d2 = other.find((o: any) => o.kind === 'Deployment')
    assert.is(d2.spec.replicas, 1)
    assert.not.ok(d2.spec.template.spec.containers[0].args.includes('--leader-elect'))
    assert.equal(d2.spec.template.spec.containers[0].resources, { limits: { memory: '1Gi' } })
    assert.not.ok(other.some((o: any) => o.kind === 'Certificate' || o.kind === 'Issuer'))
    // what the chart renders to is accepted by an API server (but for cert-manager's kinds, which it does not serve)
    const server = await startTestServer()
    const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
    try {
      await cluster.request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ops' } },
      })
      for (const o of other) {
        const r = await resolveKind(cluster, o)
        await cluster.request({ method: 'POST', path: collectionPath(r, o.metadata.namespace), body: o })
      }
    } finally {
      cluster.close()
      await server.stop()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.after(() => rmSync(home, { recursive: true, force: true }))
test.run()
