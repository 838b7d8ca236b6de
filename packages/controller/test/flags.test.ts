// A Manager's flags, as controller-runtime's main.go reads them (kubebuilder's scaffold:
// --metrics-bind-address, --health-probe-bind-address, --leader-elect, --kubeconfig, zap's
// --zap-log-level): --help lists them with their variables, a bad value or an unknown flag is an error
// naming it, a flag beats its variable, and a Manager made from flags runs against the test server
// with its probes on their own port and its Lease where the flags say.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request as httpsRequest } from 'node:https'
import { generateTls, startTestServer } from '@statewright/testserver'
import { ConfigError, Manager, waitForConvergence } from '@statewright/controller'
import { parseManagerFlags } from '@statewright/controller/deploy'
import { Cluster } from '@statewright/k8s'

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseManagerFlags('op', { argv, env })
const flagsOf = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
  const p = parse(argv, env)
  if (p.help) throw new Error('unexpected help')
  return p.flags
}

test('a bad flag writes what is wrong and the usage to stderr and exits 2, as Go programs do', () => {
  let err = ''
  let code: number | undefined
  assert.throws(
    () =>
      Manager.fromFlags(
        { name: 'op' },
        {
          argv: ['--leader-elekt'],
          env: {},
          err: (t) => (err += t),
          exit: (c) => {
            code = c
            throw new Error('exited')
          },
        },
      ),
    /exited/,
  )
  assert.is(code, 2)
  assert.match(err, /^op: .*--leader-elekt/)
  assert.match(err, /Usage: op \[flags\]/)
})

test('--help lists every flag with its variable, and exits 0', () => {
  let out = ''
  let code: number | undefined
  assert.throws(
    () =>
      Manager.fromFlags(
        { name: 'op' },
        {
          argv: ['--help'],
          env: {},
          out: (t) => (out += t),
          exit: (c) => {
            code = c
            throw new Error('exited')
          },
        },
      ),
    /exited/,
  )
  assert.is(code, 0)
  for (const f of [
    '--metrics-bind-address',
    '--health-probe-bind-address',
    '--leader-elect',
    '--leader-election-namespace',
    '--kubeconfig',
    '--zap-log-level',
    '$METRICS_BIND_ADDRESS',
    '$KUBECONFIG',
    '-h, --help',
  ])
    assert.match(out, f, f)
  assert.ok(parse(['-h']).help)
})

test('values: addresses, booleans, levels; a flag beats its variable', () => {
  assert.equal(flagsOf(['--metrics-bind-address=:9090']).metricsBindAddress, { host: '0.0.0.0', port: 9090 })
  assert.equal(flagsOf(['--metrics-bind-address', '[::1]:8443']).metricsBindAddress, { host: '::1', port: 8443 })
  assert.is(flagsOf(['--metrics-bind-address=0']).metricsBindAddress, null, '"0" turns it off')
  assert.equal(flagsOf([], { METRICS_BIND_ADDRESS: '127.0.0.1:1' }).metricsBindAddress, { host: '127.0.0.1', port: 1 })
  assert.equal(flagsOf(['--metrics-bind-address=:2'], { METRICS_BIND_ADDRESS: '127.0.0.1:1' }).metricsBindAddress, {
    host: '0.0.0.0',
    port: 2,
  })
  assert.equal(flagsOf([], { LEADER_ELECT: 'true', POD_NAMESPACE: 'ops' }), { leaderElect: true, leaderElectionNamespace: 'ops' })
  assert.is(flagsOf(['--zap-log-level=debug']).logLevel, 'debug')
  assert.is(flagsOf(['--zap-log-level=2']).logLevel, 'trace', 'a zap verbosity')
  assert.is(flagsOf(['--log-level', 'warn']).logLevel, 'warn')
  assert.is(flagsOf([], { LOG_LEVEL: 'error' }).logLevel, 'error')
  assert.equal(flagsOf(['--webhook-cert-path=/certs', '--webhook-port=0']), { webhookCertPath: '/certs', webhookPort: 0 })
  assert.equal(flagsOf([], { WEBHOOK_PORT: '9444' }), { webhookPort: 9444 })
  assert.equal(flagsOf([]), {}, 'nothing given: the Manager keeps its defaults')
})

test('bad input: a bad value or an unknown flag is a ConfigError naming it', () => {
  const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
    [['--metrics-bind-address=abc'], {}, /flag --metrics-bind-address: "abc" is not an address/],
    [['--health-probe-bind-address=:99999'], {}, /flag --health-probe-bind-address: ":99999" is not an address/],
    [['--zap-log-level=loud'], {}, /flag --zap-log-level: "loud" is not a log level/],
    [[], { LEADER_ELECT: 'maybe' }, /\$LEADER_ELECT: "maybe" is not a boolean/],
    [['--leader-elect=yes'], {}, /flag --leader-elect/],
    [['--leader-elect'], {}, /flag --leader-elect needs --leader-election-namespace/],
    [['--metrics-addr=:8080'], {}, /flag --metrics-addr.*--help lists the flags/],
    [['--kubeconfig'], {}, /flag --kubeconfig/],
    [['--webhook-port=https'], {}, /flag --webhook-port: "https" is not a port/],
    [[], { WEBHOOK_PORT: '70000' }, /\$WEBHOOK_PORT: "70000" is not a port/],
  ]
  for (const [argv, env, want] of cases) {
    try {
      parse(argv, env)
      assert.unreachable(`${argv.join(' ')} ${JSON.stringify(env)} accepted`)
    } catch (err) {
      assert.instance(err, ConfigError, String(err))
      assert.match((err as Error).message, want)
    }
  }
})

test('a Manager from flags: kubeconfig file, metrics and probes on two servers, a Lease where the flags say', async () => {
  const server = await startTestServer()
  const dir = mkdtempSync(join(tmpdir(), 'flags-'))
  const file = join(dir, 'config')
  writeFileSync(file, server.kubeconfig)
  const m = Manager.fromFlags(
    { name: 'flagged', handleSignals: false, http: { token: 't0ken' } },
    {
      argv: [
        '--kubeconfig',
        file,
        '--metrics-bind-address=127.0.0.1:0',
        '--health-probe-bind-address=127.0.0.1:0',
        '--leader-elect',
        '--leader-election-namespace=default',
        '--leader-election-id=flagged-lock',
        '--zap-log-level=silent',
      ],
      env: {},
    },
  )
  try {
    m.watch({ apiVersion: 'v1', kind: 'ConfigMap' })
    await m.start()
    await waitForConvergence(m, { timeoutMs: 10_000 })
    assert.ok(m.url && m.probesUrl && m.url !== m.probesUrl, 'two servers')
    const lease = server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'flagged-lock', 'default')
    assert.ok(lease?.spec?.holderIdentity, 'the Lease named by the flags is held')
    assert.is((await fetch(`${m.probesUrl}/healthz`)).status, 200, 'probes need no token')
    const ready = await fetch(`${m.probesUrl}/readyz`)
    assert.is(ready.status, 200, await ready.clone().text())
    assert.is((await fetch(`${m.probesUrl}/statusz`)).status, 404, 'the probes server serves probes only')
    assert.is((await fetch(`${m.url}/statusz`)).status, 401, 'the main server keeps its token')
    assert.is((await fetch(`${m.url}/statusz`, { headers: { authorization: 'Bearer t0ken' } })).status, 200)
  } finally {
    await m.stop()
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a Manager from flags serves its webhooks from --webhook-cert-path on --webhook-port', async () => {
  const server = await startTestServer()
  const dir = mkdtempSync(join(tmpdir(), 'flags-certs-'))
  const tls = await generateTls(['127.0.0.1'])
  writeFileSync(join(dir, 'tls.crt'), tls.certPem)
  writeFileSync(join(dir, 'tls.key'), tls.keyPem)
  const m = Manager.fromFlags(
    { name: 'hooked', handleSignals: false, cluster: new Cluster({ kubeconfig: server.kubeconfig, qps: 0 }), http: false },
    { argv: [`--webhook-cert-path=${dir}`, '--webhook-port=0', '--zap-log-level=silent'], env: {} },
  )
  try {
    m.webhook({ for: { apiVersion: 'v1', kind: 'ConfigMap' }, validate: () => 'no' })
    await m.start()
    const url = new URL(m.webhookUrl!)
    assert.is.not(url.port, '9443', 'the port the flag names (0: a free one)')
    // bound to every address (0.0.0.0), the URL (what installCrds writes into a CRD) names a host the
    // certificate holds, so the API server's certificate check passes
    assert.is(url.hostname, '127.0.0.1')
    // the certificate served is the one in the directory: a client trusting only its CA gets through
    const body = await new Promise<string>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port: url.port, path: '/nothing', method: 'POST', ca: tls.caPem }, (res) => {
        let b = ''
        res.on('data', (d) => (b += d)).on('end', () => resolve(b))
      })
      req.on('error', reject).end('{}')
    })
    assert.match(body, /validate-core-v1-configmap/, 'the server lists its webhook paths')
  } finally {
    await m.stop()
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test.run()
