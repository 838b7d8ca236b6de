// `statewright manifests`: the deployment of examples/backup-operator.ts from the module itself, with
// no cluster and no kubeconfig (a fresh HOME): its CRD (from the schema), ServiceAccount, ClusterRole (the
// rules Manager.rbacRules() derives, which test/manifests.test.ts proves against a recorded run),
// binding, webhook Service, certificate and configuration, and Deployment; a module without a Manager is refused naming the export.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'

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

test.after(() => rmSync(home, { recursive: true, force: true }))
test.run()
