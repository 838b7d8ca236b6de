// kubectl against the CLI-started server with exactly the kubeconfig the CLI writes (HTTPS by
// default, the generated CA in the kubeconfig: kubectl verifies the server and sends the token).
// kubectl is required: without it these tests fail and name the install command.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawn, execFile, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from './helpers.ts'

const hasKubectl = spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).status === 0
const dir = mkdtempSync(join(tmpdir(), 'sw-kubectl-'))
const kubeconfig = join(dir, 'kubeconfig')
let cli: ChildProcess | undefined
let out = ''

function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('kubectl', args, { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof (err as any).code === 'number' ? (err as any).code : 1) : 0, stdout, stderr })
    })
  })
}
async function ok(...args: string[]): Promise<string> {
  const r = await kubectl(...args)
  assert.is(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

test.before(async () => {
  // The CLI from source (the published bin is dist/cli.js; scripts/check-packages.mjs runs that one).
  const cliSrc = new URL('../src/cli.ts', import.meta.url).pathname
  cli = spawn(
    process.execPath,
    ['--conditions=@statewright/source', '--import', 'tsx', cliSrc, '--port', '0', '--kubeconfig', kubeconfig],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  cli.stdout!.on('data', (b) => {
    out += b
  })
  cli.stderr!.on('data', (b) => {
    out += b
  })
  // The CLI prints three lines (URL, kubeconfig, token); stdout may deliver them in separate chunks.
  await waitFor(() => /listening on https:/.test(out) && /token: .*\n/.test(out), 'the CLI to listen and print its token', 15_000)
})
test.after(async () => {
  if (cli && cli.exitCode === null) {
    const exited = new Promise((r) => cli!.once('exit', r))
    cli.kill('SIGTERM')
    await exited
  }
  rmSync(dir, { recursive: true, force: true })
})

test('kubectl is installed (these tests need it: apt-get install -y kubernetes-client)', () => {
  assert.ok(hasKubectl, 'kubectl is not on PATH: install it with `apt-get install -y kubernetes-client`')
})

test('the CLI serves HTTPS and writes a kubeconfig that carries its CA, not insecure-skip-tls-verify', () => {
  assert.match(out, `kubeconfig: ${kubeconfig}`)
  assert.match(out, 'token: statewright-test-token')
  const text = readFileSync(kubeconfig, 'utf8')
  assert.match(text, 'certificate-authority-data:')
  assert.not.match(text, 'insecure-skip-tls-verify')
  assert.match(text, /server: https:\/\/127\.0\.0\.1:\d+/)
})

test("kubectl create namespace, create, apply --server-side, get -l, delete with the CLI's kubeconfig", async () => {
  assert.match(await ok('create', 'namespace', 'x'), 'namespace/x created')
  await ok('create', 'configmap', 'k1', '-n', 'x', '--from-literal=a=b')
  assert.is(await ok('get', 'configmap', 'k1', '-n', 'x', '-o', 'jsonpath={.data.a}'), 'b')
  const file = join(dir, 'ssa.yaml')
  writeFileSync(
    file,
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k2\n  namespace: x\n  labels:\n    team: blue\ndata:\n  key: one\n',
  )
  assert.match(await ok('apply', '--server-side', '-f', file), 'serverside-applied')
  const rv1 = await ok('get', 'cm', 'k2', '-n', 'x', '-o', 'jsonpath={.metadata.resourceVersion}')
  await ok('apply', '--server-side', '-f', file)
  assert.is(await ok('get', 'cm', 'k2', '-n', 'x', '-o', 'jsonpath={.metadata.resourceVersion}'), rv1, 'identical apply is a no-op')
  writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k2\n  namespace: x\ndata:\n  key: two\n')
  const c = await kubectl('apply', '--server-side', '--field-manager=other', '-f', file)
  assert.is.not(c.code, 0)
  assert.match(c.stderr, 'conflict')
  await ok('apply', '--server-side', '--field-manager=other', '--force-conflicts', '-f', file)
  assert.is(await ok('get', 'cm', 'k2', '-n', 'x', '-o', 'jsonpath={.data.key}'), 'two')
  assert.is((await ok('get', 'cm', '-n', 'x', '-l', 'team=blue', '-o', 'name')).trim(), 'configmap/k2')
  assert.match(await ok('delete', 'configmap', 'k1', '-n', 'x'), 'deleted')
  const gone = await kubectl('get', 'configmap', 'k1', '-n', 'x')
  assert.is.not(gone.code, 0)
  assert.match(gone.stderr, 'NotFound')
})

test('kubectl apply (client-side) validates against /openapi/v3 without --validate=false; explain configmap', async () => {
  const file = join(dir, 'csa.yaml')
  writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k4\n  namespace: x\ndata:\n  key: one\n')
  assert.match(await ok('apply', '-f', file), 'configmap/k4 created')
  writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k4\n  namespace: x\ndata:\n  key: two\n')
  assert.match(await ok('apply', '-f', file), 'configmap/k4 configured')
  assert.is(await ok('get', 'cm', 'k4', '-n', 'x', '-o', 'jsonpath={.data.key}'), 'two')
  const explain = await ok('explain', 'configmap')
  assert.match(explain, 'KIND:       ConfigMap')
  assert.match(explain, /data\s+<map\[string\]string>/)
  assert.match(await ok('explain', 'configmap.metadata.labels'), 'labels')
  // every built-in kind is described field by field (issue 30: kubectl explain failed for built-ins)
  const containers = await ok('explain', 'deployment.spec.template.spec.containers')
  assert.match(containers, /FIELD: containers <\[\]Container>/)
  assert.match(containers, /image\s+<string>/)
  assert.match(await ok('explain', 'jobs.spec'), /backoffLimit\s+<integer>/)
})

test("kubectl get prints the server-side Table: built-in columns and a CRD's additionalPrinterColumns", async () => {
  const file = join(dir, 'table.yaml')
  writeFileSync(
    file,
    `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.table.example.com}
spec:
  group: table.example.com
  scope: Namespaced
  names: {plural: gizmos, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Colour, type: string, jsonPath: .spec.colour}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {colour: {type: string}}}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: Service
metadata: {name: tabled, namespace: x}
spec:
  ports: [{port: 8080}]
`,
  )
  await ok('apply', '-f', file)
  writeFileSync(
    file,
    'apiVersion: table.example.com/v1\nkind: Gizmo\nmetadata: {name: g1, namespace: x}\nspec: {colour: blue}\nstatus: {conditions: [{type: Ready, status: "True"}]}\n',
  )
  await ok('apply', '-f', file)
  const svc = await ok('get', 'svc', 'tabled', '-n', 'x')
  assert.match(svc, /NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE/)
  assert.match(svc, /tabled\s+ClusterIP\s+10\.96\.\d+\.\d+\s+<none>\s+8080\/TCP/)
  const gizmos = await ok('get', 'gizmos', '-n', 'x')
  assert.match(gizmos, /NAME\s+COLOUR\s+READY/)
  assert.match(gizmos, /g1\s+blue/)
})

test('kubectl: client-side apply of a CRD whose last-applied annotation is over 256 KiB fails; delete --dry-run=server keeps it', async () => {
  const file = join(dir, 'huge.yaml')
  const description = 'x'.repeat(300 * 1024)
  writeFileSync(
    file,
    `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: huges.big.example.com}
spec:
  group: big.example.com
  scope: Namespaced
  names: {plural: huges, kind: Huge}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, description: "${description}"}
`,
  )
  const r = await kubectl('apply', '-f', file)
  assert.is.not(r.code, 0)
  assert.match(r.stderr, 'metadata.annotations: Too long: must have at most 262144 bytes')
  assert.match(await ok('apply', '--server-side', '-f', file), 'serverside-applied')
  assert.match(await ok('delete', 'crd', 'huges.big.example.com', '--dry-run=server'), 'deleted (server dry run)')
  assert.match(await ok('get', 'crd', 'huges.big.example.com', '-o', 'name'), 'huges.big.example.com')
})

test('kubectl get -w sees an update', async () => {
  const w = spawn('kubectl', ['get', 'configmap', 'k2', '-n', 'x', '--watch', '-o', 'jsonpath={.data.key}{"\\n"}'], {
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let seen = ''
  w.stdout.on('data', (b) => {
    seen += b
  })
  try {
    await waitFor(() => seen.includes('two'), 'the initial state', 10_000)
    await ok('patch', 'configmap', 'k2', '-n', 'x', '--type=merge', '-p', '{"data":{"key":"three"}}')
    await waitFor(() => seen.includes('three'), 'the watched update', 10_000)
  } finally {
    const exited = new Promise((r) => w.once('exit', r))
    w.kill('SIGTERM')
    await exited
  }
})

test.run()
