// kubectl against the CLI-started server (TLS: kubectl never sends a bearer token over plain HTTP).
// Skips when kubectl is not on PATH.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawn, execFile, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
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

test.before(async () => {
  // The CLI from source (the published bin is dist/cli.js; scripts/check-packages.mjs runs that one).
  const cli_ = new URL('../src/cli.ts', import.meta.url).pathname
  cli = spawn(process.execPath, ['--conditions=@statewright/source', '--import', 'tsx', cli_, '--tls', '--port', '0', '--kubeconfig', kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] })
  cli.stdout!.on('data', (b) => { out += b })
  cli.stderr!.on('data', (b) => { out += b })
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

test('CLI prints its URL, kubeconfig and token; answers /version', async () => {
  assert.match(out, `kubeconfig: ${kubeconfig}`)
  assert.match(out, 'token: statewright-test-token')
})

const kt = hasKubectl ? test : test.skip

kt('kubectl get / create / delete', async () => {
  const ns = await kubectl('get', 'namespaces', '-o', 'name')
  assert.is(ns.code, 0, ns.stderr)
  assert.match(ns.stdout, 'namespace/default')
  const c = await kubectl('create', 'configmap', 'k1', '--from-literal=a=b')
  assert.is(c.code, 0, c.stderr)
  const g = await kubectl('get', 'configmap', 'k1', '-o', 'jsonpath={.data.a}')
  assert.is(g.stdout, 'b')
  const d = await kubectl('delete', 'configmap', 'k1')
  assert.is(d.code, 0, d.stderr)
  const gone = await kubectl('get', 'configmap', 'k1')
  assert.is.not(gone.code, 0)
  assert.match(gone.stderr, 'NotFound')
})

kt('kubectl apply --server-side: create, no-op, conflict, force-conflicts', async () => {
  const file = join(dir, 'cm.yaml')
  writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k2\ndata:\n  key: one\n')
  // --validate=false: the server has no OpenAPI documents for kubectl's client-side validation
  const a = await kubectl('apply', '--server-side', '--validate=false', '-f', file)
  assert.is(a.code, 0, a.stderr)
  assert.match(a.stdout, 'serverside-applied')
  const rv1 = (await kubectl('get', 'cm', 'k2', '-o', 'jsonpath={.metadata.resourceVersion}')).stdout
  await kubectl('apply', '--server-side', '--validate=false', '-f', file)
  const rv2 = (await kubectl('get', 'cm', 'k2', '-o', 'jsonpath={.metadata.resourceVersion}')).stdout
  assert.is(rv2, rv1, 'identical apply is a no-op')
  writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k2\ndata:\n  key: two\n')
  const c = await kubectl('apply', '--server-side', '--validate=false', '--field-manager=other', '-f', file)
  assert.is.not(c.code, 0)
  assert.match(c.stderr, 'conflict')
  const f = await kubectl('apply', '--server-side', '--validate=false', '--field-manager=other', '--force-conflicts', '-f', file)
  assert.is(f.code, 0, f.stderr)
  assert.is((await kubectl('get', 'cm', 'k2', '-o', 'jsonpath={.data.key}')).stdout, 'two')
})

kt('kubectl get --watch sees a change', async () => {
  const w = spawn('kubectl', ['get', 'configmaps', '--watch', '-o', 'name'], { env: { ...process.env, KUBECONFIG: kubeconfig }, stdio: ['ignore', 'pipe', 'pipe'] })
  let seen = ''
  w.stdout.on('data', (b) => { seen += b })
  try {
    await waitFor(() => seen.includes('configmap/k2'), 'initial listing', 10_000)
    const c = await kubectl('create', 'configmap', 'k3')
    assert.is(c.code, 0, c.stderr)
    await waitFor(() => seen.includes('configmap/k3'), 'watched creation', 10_000)
  } finally {
    const exited = new Promise((r) => w.once('exit', r))
    w.kill('SIGTERM')
    await exited
  }
})

test.run()
