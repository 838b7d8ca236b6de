// Kubeconfigs loaded both ways, by @kubernetes/client-node's KubeConfig and by our Kubeconfig, must
// name the same server and context and give the same TLS material and headers (the fixtures follow
// the shapes of client-node's testdata/kubeconfig*.yaml and src/config_test.ts, written anew here).
// An exec credential plugin (a fake credential binary: a node script) goes through the lazy
// client-node path; a child process with client-node made unloadable shows nothing else loads it.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { Cluster, ClusterRegistry, ConfigError, Kubeconfig, type KubeconfigView } from '@statewright/k8s'
import { credentialsOf } from '../src/credentials.ts'
import { startServer } from './helpers.ts'

const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'))
const b64 = (s: string) => Buffer.from(s).toString('base64')
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text)
  return join(dir, name)
}
file('ca.crt', 'CA FROM FILE')
file('client.crt', 'CERT FROM FILE')
file('client.key', 'KEY FROM FILE')
file('token', 'token-from-file')
// A far-future JWT (exp 2100-01-01): client-node's OIDC provider sends an unexpired id-token as is.
const jwt =
  [{ alg: 'none' }, { exp: 4102444800, sub: 'me' }].map((o) => Buffer.from(JSON.stringify(o)).toString('base64url')).join('.') + '.sig'
// The fake credential binary: prints an ExecCredential with the token given in its environment.
const plugin = file(
  'credential-plugin.mjs',
  `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: process.env.FAKE_TOKEN } }))\n`,
)
const execUser = (token: string) => ({
  exec: {
    apiVersion: 'client.authentication.k8s.io/v1',
    command: process.execPath,
    args: [plugin],
    env: [{ name: 'FAKE_TOKEN', value: token }],
    interactiveMode: 'Never',
  },
})

/** Every shape a Cluster reads: one context per user shape, several clusters. */
const FIXTURE = `apiVersion: v1
kind: Config
clusters:
- name: data
  cluster:
    server: https://data.example:6443/
    certificate-authority-data: ${b64('CA DATA')}
    tls-server-name: api.internal
- name: files
  cluster:
    server: https://files.example
    certificate-authority: ca.crt
    proxy-url: http://proxy.example:3128
- name: insecure
  cluster:
    server: http://insecure.example:8080
    insecure-skip-tls-verify: true
    proxy-url: socks5://localhost:1080
users:
- name: token
  user: { token: inline-token }
- name: token-file
  user: { token-file: ${join(dir, 'token')} }
- name: certs-data
  user: { client-certificate-data: ${b64('CERT DATA')}, client-key-data: ${b64('KEY DATA')} }
- name: certs-files
  user: { client-certificate: client.crt, client-key: client.key }
- name: basic
  user: { username: admin, password: secret }
- name: impersonating
  user: { token: t2, as: someone }
- name: oidc
  user:
    auth-provider:
      name: oidc
      config: { client-id: cid, id-token: ${jwt}, idp-issuer-url: https://issuer.example }
- name: exec
  user: ${JSON.stringify(execUser('exec-token'))}
- name: empty
contexts:
- { name: token, context: { cluster: data, user: token, namespace: team-a } }
- { name: token-file, context: { cluster: files, user: token-file } }
- { name: certs-data, context: { cluster: data, user: certs-data } }
- { name: certs-files, context: { cluster: files, user: certs-files } }
- { name: basic, context: { cluster: insecure, user: basic } }
- { name: impersonating, context: { cluster: data, user: impersonating } }
- { name: oidc, context: { cluster: data, user: oidc } }
- { name: exec, context: { cluster: files, user: exec } }
- { name: no-user, context: { cluster: insecure } }
- { name: empty-user, context: { cluster: insecure, user: empty } }
current-context: certs-files
preferences: {}
`

/** Fields a Cluster reads, client-node's nulls dropped. */
const plain = (o: object | null) => (o ? Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) : o)

async function same(ours: KubeconfigView, theirs: KubeConfig, ctx: string): Promise<void> {
  ours.setCurrentContext(ctx)
  theirs.setCurrentContext(ctx)
  assert.equal(ours.getCurrentContext(), theirs.getCurrentContext())
  assert.equal(plain(ours.getContextObject(ctx)), plain(theirs.getContextObject(ctx)), `${ctx}: context`)
  assert.equal(plain(ours.getCurrentCluster()), plain(theirs.getCurrentCluster()), `${ctx}: cluster`)
  const [a, b] = [credentialsOf(ours), credentialsOf(theirs)]
  assert.equal(plain(a.tls()), plain(b.tls()), `${ctx}: TLS`)
  assert.equal(await a.headers(), await b.headers(), `${ctx}: headers`)
}

test('every context of a kubeconfig file: the same cluster, context, TLS material and headers as client-node', async () => {
  const path = file('config', FIXTURE)
  const ours = Kubeconfig.fromFile(path)
  const theirs = new KubeConfig()
  theirs.loadFromFile(path)
  assert.is(ours.getCurrentContext(), 'certs-files')
  assert.equal(
    ours.getContexts().map((c) => c.name),
    theirs.getContexts().map((c) => c.name),
  )
  for (const c of theirs.getContexts()) await same(ours, theirs, c.name)
  // what the comparisons rest on: files were read relative to the kubeconfig, headers are not empty
  ours.setCurrentContext('certs-files')
  assert.is(String(credentialsOf(ours).tls().cert), 'CERT FROM FILE')
  ours.setCurrentContext('exec')
  assert.equal(await credentialsOf(ours).headers(), { Authorization: 'Bearer exec-token' })
  ours.setCurrentContext('oidc')
  assert.equal(await credentialsOf(ours).headers(), { Authorization: `Bearer ${jwt}` })
})

test('in-cluster service account: the same as client-node loadFromCluster; the token is re-read when it rotates', async () => {
  const root = join(dir, 'sa')
  const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount')
  const { mkdirSync } = await import('node:fs')
  mkdirSync(sa, { recursive: true })
  writeFileSync(join(sa, 'ca.crt'), 'SA CA')
  writeFileSync(join(sa, 'token'), 'sa-token-1')
  writeFileSync(join(sa, 'namespace'), 'ops')
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT }
  try {
    for (const [host, port] of [
      ['10.0.0.1', '443'],
      ['fd00::1', '6443'],
    ]) {
      process.env.KUBERNETES_SERVICE_HOST = host
      process.env.KUBERNETES_SERVICE_PORT = port
      const theirs = new KubeConfig()
      theirs.loadFromCluster(root)
      const ours = Kubeconfig.inCluster(process.env, sa)
      await same(ours, theirs, 'inClusterContext')
    }
    // the well-known plain ports are HTTP (client-node's rule; a Cluster refuses it without skip-verify)
    process.env.KUBERNETES_SERVICE_PORT = '8080'
    const plainHttp = new KubeConfig()
    plainHttp.loadFromCluster(root)
    assert.is(Kubeconfig.inCluster(process.env, sa).getCurrentCluster()?.server, plainHttp.getCurrentCluster()?.server)
    process.env.KUBERNETES_SERVICE_PORT = '443'
    const ours = Kubeconfig.inCluster(process.env, sa)
    assert.equal(await credentialsOf(ours).headers(), { Authorization: 'Bearer sa-token-1' })
    writeFileSync(join(sa, 'token'), 'sa-token-2\n')
    assert.equal(await credentialsOf(ours).headers(), { Authorization: 'Bearer sa-token-2' })
  } finally {
    process.env.KUBERNETES_SERVICE_HOST = saved.host
    process.env.KUBERNETES_SERVICE_PORT = saved.port
    if (saved.host === undefined) delete process.env.KUBERNETES_SERVICE_HOST
    if (saved.port === undefined) delete process.env.KUBERNETES_SERVICE_PORT
  }
})

test('KUBECONFIG with several files: the same as client-node where names do not clash; client-go rules where they do', async () => {
  const one = file(
    'one',
    `clusters: [{ name: a, cluster: { server: https://a.example, certificate-authority: ca.crt } }]\nusers: [{ name: a, user: { token: ta } }]\ncontexts: [{ name: a, context: { cluster: a, user: a } }]\ncurrent-context: b\n`,
  )
  const two = file(
    'two',
    `clusters: [{ name: b, cluster: { server: https://b.example } }]\nusers: [{ name: b, user: { token: tb } }]\ncontexts: [{ name: b, context: { cluster: b, user: b, namespace: nb } }]\n`,
  )
  const saved = process.env.KUBECONFIG
  try {
    process.env.KUBECONFIG = [one, join(dir, 'missing'), two].join(':')
    const ours = Kubeconfig.fromDefault()
    process.env.KUBECONFIG = [one, two].join(':') // client-node throws on a missing file; client-go skips it
    const theirs = new KubeConfig()
    theirs.loadFromDefault()
    assert.is(ours.getCurrentContext(), 'b')
    for (const c of ['a', 'b']) await same(ours, theirs, c)
  } finally {
    if (saved === undefined) delete process.env.KUBECONFIG
    else process.env.KUBECONFIG = saved
  }
  // Follows client-go's loader_test TestConflictingCurrentContext and TestMergeContext: the first file
  // to set current-context wins, and so does the first to name a cluster, user or context.
  const three = file(
    'three',
    `clusters: [{ name: a, cluster: { server: https://other.example } }]\nusers: [{ name: a, user: { token: other } }]\ncontexts: [{ name: a, context: { cluster: a, user: a } }]\ncurrent-context: a\n`,
  )
  const merged = Kubeconfig.fromFiles([one, three, two])
  assert.is(merged.getCurrentContext(), 'b')
  merged.setCurrentContext('a')
  assert.is(merged.getCurrentCluster()?.server, 'https://a.example')
  assert.equal(await credentialsOf(merged).headers(), { Authorization: 'Bearer ta' })
  assert.throws(() => Kubeconfig.fromFiles([join(dir, 'none1'), join(dir, 'none2')]), /none of the files exists: .*none1, .*none2/)
})

test('bad kubeconfigs: a ConfigError naming the entry and field, no YAML excerpt', () => {
  const cases: [string, RegExp][] = [
    ['clusters: [{ cluster: { server: https://x } }]', /clusters\[0\]\.name is missing/],
    ['clusters: [{ name: x, cluster: {} }]', /clusters\[0\]\.cluster\.server is missing/],
    ['clusters: [{ name: x }]', /clusters\[0\]\.cluster is missing/],
    ['users: [{ user: { token: x } }]', /users\[0\]\.name is missing/],
    ['contexts: [{ name: x, context: { user: u } }]', /contexts\[0\]\.context\.cluster is missing/],
    ['clusters: {}', /clusters is not a list/],
    [`users: [{ name: u, user: { token-file: ${join(dir, 'nope')} } }]`, /users\[0\]\.user\.token-file .*nope/],
    ['users: [{ name: u, user: { token: "secret-token-value\n  - [ } }]', /not valid YAML/],
    ['- a list', /not a mapping/],
  ]
  for (const [text, re] of cases) {
    const err = (() => {
      try {
        Kubeconfig.fromString(text)
      } catch (e) {
        return e as Error
      }
    })()
    assert.instance(err, ConfigError, text)
    assert.match(err!.message, re)
    assert.not.match(err!.message, /secret-token-value/)
    // client-node refuses the same documents (the YAML and structure ones)
    if (!/token-file|not a list|mapping/.test(String(re))) assert.throws(() => new KubeConfig().loadFromString(text))
  }
})

test('exec credential plugin through the lazy client-node path: its token reaches the server; a client-node KubeConfig still works', async () => {
  const server = await startServer()
  const registry = new ClusterRegistry({ qps: 0 })
  try {
    const base = JSON.parse(JSON.stringify((await import('yaml')).parse(server.kubeconfig)))
    base.users = [{ name: base.users[0].name, user: execUser(server.token!) }]
    const cluster = registry.addKubeconfig('exec', JSON.stringify(base))
    await cluster.request({ path: '/api/v1/namespaces/default/configmaps' })
    const theirs = new KubeConfig()
    theirs.loadFromString(server.kubeconfig)
    const own = registry.add('own', new Cluster({ kubeConfig: theirs, qps: 0 }), true)
    await own.request({ path: '/api/v1/namespaces/default/configmaps' })
    const log = server.control.requestLog()
    assert.ok(log.length >= 2)
    assert.ok(
      log.every((e) => e.token === server.token),
      'every request carries the token (the plugin gave it to the exec cluster)',
    )
    base.users[0].user = execUser('wrong-token')
    const wrong = registry.addKubeconfig('wrong', JSON.stringify(base))
    const err = await wrong.request({ path: '/api/v1/namespaces/default/configmaps' }).catch((e) => e)
    assert.is(err?.code, 401)
  } finally {
    await registry.close()
    await server.stop()
  }
})

/** Runs a script in a child where loading any module of client-node throws. */
function withoutClientNode(script: string): Promise<{ code: number | null; out: string; err: string }> {
  const hooks = `export async function load(url, context, next) { if (url.includes('/@kubernetes/client-node/')) throw new Error('client-node loaded: ' + url); return next(url, context) }`
  const register = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(hooks))})`
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--conditions=@statewright/source',
        '--import',
        'tsx',
        '--import',
        'data:text/javascript,' + encodeURIComponent(register),
        '--input-type=module',
        '-e',
        script,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: new URL('.', import.meta.url).pathname },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.on('error', reject)
    child.on('exit', (code) => resolve({ code, out, err }))
  })
}

test('importing k8s and the controller and talking to a server with a token kubeconfig never loads client-node; an exec user does', async () => {
  const server = await startServer()
  try {
    const cfg = JSON.stringify(server.kubeconfig)
    const run = (kubeconfig: string) => `
      await import('@statewright/controller')
      const { Cluster } = await import('@statewright/k8s')
      const c = new Cluster({ kubeconfig: ${kubeconfig}, qps: 0 })
      await c.request({ path: '/api/v1/namespaces/default/configmaps' })
      await c.close()
      console.log('ok')`
    const plainRun = await withoutClientNode(run(cfg))
    assert.is(plainRun.out.trim(), 'ok', plainRun.err)
    assert.is(plainRun.code, 0)
    const base = (await import('yaml')).parse(server.kubeconfig)
    base.users = [{ name: base.users[0].name, user: execUser(server.token!) }]
    const execRun = await withoutClientNode(run(JSON.stringify(JSON.stringify(base))))
    assert.match(execRun.err, /client-node loaded: /)
    assert.is.not(execRun.code, 0)
  } finally {
    await server.stop()
  }
})

test.after(() => rmSync(dir, { recursive: true, force: true }))

test.run()
