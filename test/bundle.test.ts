// The one-file bundle of docs/controller.md ("Shipping an operator: one file"): the very esbuild
// command the page gives is run on examples/backup-operator.ts, and the file it writes is started by
// plain node, configured by flags only, against the test server, until its /readyz answers 200.
// (The banner of an earlier page collided with a bundled module's own createRequire import: the
// file did not start.) The one change to the command: `--conditions=@statewright/source`, so that the
// workspace's sources are bundled instead of a dist/ this test does not build.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateTls, startTestServer } from '@statewright/testserver'
import { Backup } from '../examples/backup-operator.ts'
import { freePort, readyz, stopChild } from '../bench/lib/process.ts'

const root = new URL('..', import.meta.url).pathname

/** The page's esbuild command as argv (continuation lines joined, double quotes honoured). */
function docsCommand(): string[] {
  const page = readFileSync(join(root, 'docs/controller.md'), 'utf8')
  const section = page.slice(page.indexOf('### Shipping an operator: one file'))
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1]
  assert.ok(block, 'the page has the command')
  const line = block!.replace(/\\\n\s*/g, ' ').trim()
  const argv: string[] = []
  for (const m of line.matchAll(/(?:[^\s"]+|"[^"]*")+/g)) argv.push(m[0].replace(/"/g, ''))
  return argv
}

test("the docs' bundle command makes a file that starts and becomes ready", async () => {
  const argv = docsCommand()
  assert.equal(argv.slice(0, 3), ['npx', 'esbuild', 'src/main.ts'])
  const out = join(root, 'node_modules/.cache/statewright-test-bundle')
  mkdirSync(out, { recursive: true })
  const bundle = join(out, 'main.mjs')
  const args = argv
    .slice(3)
    .map((a) => (a.startsWith('--outfile=') ? `--outfile=${bundle}` : a))
    .concat('--conditions=@statewright/source', '--log-level=warning')
  execFileSync(join(root, 'node_modules/.bin/esbuild'), [join(root, 'examples/backup-operator.ts'), ...args], { cwd: root })

  const tmp = mkdtempSync(join(tmpdir(), 'statewright-bundle-'))
  const server = await startTestServer()
  const port = await freePort()
  let stderr = ''
  try {
    const res = await fetch(`${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(Backup.crd),
    })
    assert.is(res.status, 201)
    writeFileSync(join(tmp, 'kubeconfig'), server.kubeconfig)
    const tls = await generateTls(['127.0.0.1'])
    writeFileSync(join(tmp, 'tls.crt'), tls.certPem)
    writeFileSync(join(tmp, 'tls.key'), tls.keyPem)
    const child = spawn(
      process.execPath,
      [
        bundle,
        `--kubeconfig=${join(tmp, 'kubeconfig')}`,
        `--health-probe-bind-address=127.0.0.1:${port}`,
        '--metrics-bind-address=127.0.0.1:0',
        `--webhook-cert-path=${tmp}`,
        '--webhook-port=0',
        '--zap-log-level=error',
      ],
      { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
    )
    child.stderr!.on('data', (d) => (stderr += d))
    try {
      // bounded by the process: it answers /readyz or exits (a syntax error exits at once)
      const deadline = Date.now() + 60_000
      while (!(await readyz(port))) {
        assert.is(child.exitCode, null, `the bundle exited: ${stderr}`)
        assert.ok(Date.now() < deadline, `no /readyz 200 within 60 s: ${stderr}`)
        await sleep(20)
      }
    } finally {
      await stopChild(child)
    }
  } finally {
    await server.stop()
    rmSync(tmp, { recursive: true, force: true })
  }
})

test.run()
