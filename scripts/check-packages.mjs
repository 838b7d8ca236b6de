#!/usr/bin/env node
// The packed-package check (docs/packaging.md): builds, packs every package, installs the tarballs in
// consumer projects outside the workspace and checks what a user gets from npm. Every check runs and
// prints PASS or FAIL; a check whose prerequisite failed is a FAIL too, never a skip. The last line is
// "packaging: N passed, N failed" (scripts/test.mjs adds it to its own); exit status 1 on any failure.
//
//   node scripts/check-packages.mjs [--keep]     (--keep: leave the temp dir for a look)
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import {
  PACKAGES as PKGS,
  installProject,
  manifest as manifestOf,
  npmEnv,
  npmName,
  packAll,
  peerSpecs,
  root,
  run,
} from './packaging/project.mjs'

const here = join(root, 'scripts/packaging')
const keep = process.argv.includes('--keep')
const tmp = mkdtempSync(join(tmpdir(), 'statewright-pack-'))
const t0 = Date.now()
const npm = (args, cwd) => run('npm', args, { cwd })
const nodeIn = (cwd, args, timeout = 60_000) => run(process.execPath, args, { cwd, timeout })

let passed = 0,
  failed = 0
const done = new Map() // check name -> ok
/** One check: prints what it checks and PASS/FAIL; `needs` lists checks it depends on. */
async function check(name, what, fn, needs = []) {
  const started = Date.now()
  const missing = needs.filter((n) => !done.get(n))
  let error
  if (missing.length) error = new Error(`not run: needs ${missing.join(', ')}, which failed`)
  else {
    try {
      await fn()
    } catch (e) {
      error = e
    }
  }
  done.set(name, !error)
  const secs = ((Date.now() - started) / 1000).toFixed(1)
  if (error) {
    failed++
    console.log(`FAIL ${what} (${secs}s)\n${String(error.stack ?? error).replace(/^/gm, '     ')}`)
  } else {
    passed++
    console.log(`PASS ${what} (${secs}s)`)
  }
}

const manifest = (p) => manifestOf(join(root, 'packages', p))
let tarballs = {} // package dir name -> { file, files: [paths], size, unpackedSize }

console.log(`packaging check in ${tmp}`)

await check('build', 'npm run build (tsc -b) emits dist/ for every package', async () => {
  await npm(['run', 'build'], root)
  for (const p of PKGS) if (!existsSync(join(root, 'packages', p, 'dist/index.js'))) throw new Error(`packages/${p}/dist/index.js missing`)
})

await check(
  'pack',
  'npm pack every package into a temp dir',
  async () => {
    tarballs = await packAll(join(tmp, 'tarballs'))
  },
  ['build'],
)

await check(
  'contents',
  'no tarball holds test/, bench/, keys or certificates; each has dist, src, README.md, LICENSE, CHANGELOG.md; every dist/ file has its source',
  async () => {
    const bad = /(^|\/)(test|tests|bench|certs|fixtures)\/|\.(pem|key|crt|p12|tsbuildinfo)$|(^|\/)\.env/
    const problems = []
    for (const [p, t] of Object.entries(tarballs)) {
      // (create-statewright's template is a project of its user's: its test/ is what it writes)
      for (const f of t.files) if (bad.test(f) && !(p === 'create-statewright' && f.startsWith('template/'))) problems.push(`${p}: ${f}`)
      // a dist/ file whose source is gone is stale output (tsc never deletes it)
      for (const f of t.files) {
        const m = /^dist\/(.+?)\.(js|d\.ts)(\.map)?$/.exec(f)
        if (m && !t.files.includes(`src/${m[1]}.ts`) && !t.files.includes(`src/${m[1]}.tsx`))
          problems.push(`${p}: ${f} has no source (stale build output)`)
      }
      for (const f of [
        'package.json',
        'README.md',
        'LICENSE',
        'CHANGELOG.md',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/index.js.map',
        'dist/index.d.ts.map',
        'src/index.ts',
      ]) {
        if (!t.files.includes(f)) problems.push(`${p}: ${f} missing`)
      }
    }
    if (problems.length) throw new Error(problems.join('\n'))
  },
  ['pack'],
)

const consumer = join(tmp, 'consumer')
const peerRange = manifest('k8s').peerDependencies['@kubernetes/client-node']
const rootDev = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devDependencies

await check(
  'install',
  'a consumer project outside the workspace installs the tarballs and their peers',
  async () => {
    await installProject(consumer, [
      ...PKGS.map((p) => tarballs[p].file),
      ...peerSpecs(),
      `@types/node@${rootDev['@types/node']}`,
      // client-node's own .d.ts import 'ws' (through isomorphic-ws) without depending on @types/ws:
      // any strict consumer of client-node without skipLibCheck needs it, whatever our packages do.
      '@types/ws@^8',
    ])
    for (const f of ['consumer.mjs', 'consumer.ts']) cpSync(join(here, f), join(consumer, f))
    for (const p of PKGS) {
      const readme = readFileSync(join(root, 'packages', p, 'README.md'), 'utf8').match(/```js\n([\s\S]*?)```/)
      if (!readme) throw new Error(`packages/${p}/README.md has no \`\`\`js example`)
      writeFileSync(join(consumer, `readme-${p}.mjs`), readme[1])
    }
  },
  ['pack'],
)

await check(
  'run',
  'plain node imports every package, reconciles statedb objects into an in-memory target, waits, and reflects and applies ConfigMaps on the test server',
  async () => {
    const { stdout } = await nodeIn(consumer, ['consumer.mjs'])
    process.stdout.write(stdout)
  },
  ['install'],
)

await check(
  'readmes',
  "each package README's example runs on plain node",
  async () => {
    for (const p of PKGS) await nodeIn(consumer, [`readme-${p}.mjs`], 30_000)
  },
  ['install'],
)

const tsc = join(root, 'node_modules/typescript/bin/tsc')
const tsconfig = (resolution) => ({
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: 'ES2022',
    lib: ['ES2023'],
    types: ['node'],
    module: resolution === 'bundler' ? 'ESNext' : 'NodeNext',
    moduleResolution: resolution,
  },
  files: ['consumer.ts'],
})
for (const resolution of ['NodeNext', 'bundler']) {
  await check(
    `tsc-${resolution}`,
    `tsc --noEmit --strict on a consumer .ts using the public types (moduleResolution ${resolution}, no skipLibCheck)`,
    async () => {
      writeFileSync(join(consumer, `tsconfig.${resolution}.json`), JSON.stringify(tsconfig(resolution), null, 2))
      await nodeIn(consumer, [tsc, '-p', `tsconfig.${resolution}.json`])
    },
    ['install'],
  )
}

await check(
  'bin',
  'npx statewright-testserver --kubeconfig f starts from the tarball and writes its kubeconfig',
  async () => {
    const kubeconfig = join(consumer, 'kubeconfig')
    const child = spawn('npx', ['--no-install', 'statewright-testserver', '--port', '0', '--kubeconfig', kubeconfig], {
      cwd: consumer,
      env: npmEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let out = ''
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)))
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "token:" line within 20s; output:\n${out}`)), 20_000)
        const onData = (b) => {
          out += b
          if (/token: .*\n/.test(out)) {
            clearTimeout(timer)
            resolve()
          }
        }
        child.stdout.on('data', onData)
        child.stderr.on('data', (b) => {
          out += b
        })
        void exited.then((c) => {
          clearTimeout(timer)
          reject(new Error(`exited (${c}) before listening; output:\n${out}`))
        })
      })
      if (!/listening on https:\/\/127\.0\.0\.1:\d+/.test(out)) throw new Error(`unexpected output:\n${out}`)
      const text = readFileSync(kubeconfig, 'utf8')
      if (!/kind: Config/.test(text) || !/server: "?https:\/\/127\.0\.0\.1:\d+/.test(text) || !/certificate-authority-data: /.test(text))
        throw new Error(`kubeconfig looks wrong:\n${text}`)
    } finally {
      if (child.exitCode === null) process.kill(-child.pid, 'SIGTERM') // npx and the node it started
      await exited
    }
  },
  ['install'],
)

await check(
  'inspect',
  'with @statewright/cli installed beside it, the controller serves /ui (the static files of the cli, under the CSP) and a dagre-laid-out /topology, and `npx statewright tables` reads them',
  async () => {
    const script = join(consumer, 'inspect-check.mjs')
    writeFileSync(
      script,
      `
import { createServer } from 'node:http'
import { spawn } from 'node:child_process'
import { DB, Table, defineIndex } from '@statewright/statedb'
import { inspectHandler } from '@statewright/controller/inspect'
const t = new Table({ name: 'things', primary: defineIndex({ name: 'id', key: (x) => x.id, unique: true }) })
const db = new DB({ tables: [t] })
await db.write(t, (w) => { t.insert(w, { id: 'one' }) })
const graph = { nodes: [{ id: 'a', kind: 'Gateway', name: 'a' }, { id: 'b', kind: 'HTTPRoute', name: 'b' }], edges: [{ from: 'a', to: 'b' }] }
const server = createServer(inspectHandler({ db, graphs: () => [{ component: 'c', graph }] }))
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const base = 'http://127.0.0.1:' + server.address().port
try {
  for (const f of ['', 'app.js', 'style.css']) {
    const r = await fetch(base + '/ui/' + f)
    if (r.status !== 200 || !/script-src 'self'/.test(r.headers.get('content-security-policy') ?? '') || (await r.text()).length < 100) throw new Error('/ui/' + f + ': ' + r.status)
  }
  const svg = await (await fetch(base + '/topology?format=svg')).text()
  if ((svg.match(/<g data-id=/g) ?? []).length !== 2) throw new Error('svg: ' + svg.slice(0, 200))
  const out = await new Promise((resolve, reject) => {
    const c = spawn('npx', ['--no-install', 'statewright', 'tables', '--url', base], { stdio: ['ignore', 'pipe', 'pipe'] })
    let text = ''
    let err = ''
    c.stdout.on('data', (b) => { text += b }); c.stderr.on('data', (b) => { err += b })
    c.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error('statewright tables exited ' + code + ': ' + text + err))))
  })
  if (!/^NAME\\s+OBJECTS/.test(out) || !/\\nthings\\s+1\\s/.test(out)) throw new Error('statewright tables printed:\\n' + out)
} finally {
  server.closeAllConnections(); server.close()
}
`,
    )
    await nodeIn(consumer, [script])
  },
  ['install'],
)

await check(
  'scaffold',
  'npm create statewright from its tarball writes a project that installs (the tarballs for @statewright/*) and whose npm test passes with no edits',
  async () => {
    const app = join(tmp, 'created', 'shop-operator')
    await nodeIn(consumer, [join(consumer, 'node_modules/create-statewright/dist/bin.js'), app])
    const pkgFile = join(app, 'package.json')
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'))
    // the packages are not on the registry yet: their tarballs stand for the versions it names
    for (const deps of [pkg.dependencies, pkg.devDependencies])
      for (const name of Object.keys(deps)) {
        const p = PKGS.find((x) => npmName(x) === name)
        if (p) deps[name] = `file:${tarballs[p].file}`
      }
    // and for the packages they depend on (overrides: every @statewright/* from its tarball)
    pkg.overrides = Object.fromEntries(PKGS.filter((p) => p !== 'create-statewright').map((p) => [npmName(p), `file:${tarballs[p].file}`]))
    writeFileSync(pkgFile, JSON.stringify(pkg, null, 2))
    await run('npm', ['install', '--no-audit', '--no-fund'], { cwd: app, env: npmEnv, timeout: 300_000 })
    const { stdout } = await run('npm', ['test'], { cwd: app, env: npmEnv, timeout: 300_000 })
    if (!/# pass 1/.test(stdout)) throw new Error(`the project's test did not pass:\n${stdout}`)
  },
  ['install'],
)

const bare = join(tmp, 'no-peers')
await check(
  'missing-peers',
  'without peers (--legacy-peer-deps): reconciler works without prom-client; importing k8s names the missing package and the install command; types need no prom-client',
  async () => {
    await installProject(
      bare,
      [...['statedb', 'reconciler', 'primary', 'k8s'].map((p) => tarballs[p].file), `@types/node@${rootDev['@types/node']}`],
      ['--legacy-peer-deps'],
    )
    for (const peer of ['@kubernetes/client-node', 'prom-client']) {
      if (existsSync(join(bare, 'node_modules', peer))) throw new Error(`${peer} got installed; the check needs it absent`)
    }
    for (const f of ['missing-peers.mjs', 'missing-peers.ts']) cpSync(join(here, f), join(bare, f))
    const { stdout } = await nodeIn(bare, ['missing-peers.mjs', peerRange])
    process.stdout.write(stdout)
    writeFileSync(join(bare, 'tsconfig.json'), JSON.stringify({ ...tsconfig('NodeNext'), files: ['missing-peers.ts'] }, null, 2))
    await nodeIn(bare, [tsc, '-p', 'tsconfig.json'])
  },
  ['pack'],
)

await check(
  'engines',
  'npm warns (EBADENGINE) when installing on a Node below the engines range (>=20.10)',
  async () => {
    // npm compares with process.version; run npm's own CLI with process.version set to 20.9.0.
    const npmCli = process.env.npm_execpath?.endsWith('npm-cli.js')
      ? process.env.npm_execpath
      : join(dirname(realpathSync((await run('sh', ['-c', 'command -v npm'])).stdout.trim())), 'npm-cli.js')
    for (const p of PKGS) {
      const engines = JSON.parse(readFileSync(join(consumer, 'node_modules', npmName(p), 'package.json'), 'utf8')).engines
      if (engines?.node !== '>=20.10') throw new Error(`${npmName(p)}: engines.node is ${engines?.node}`)
    }
    const fakeOld = 'data:text/javascript,Object.defineProperty(process,"version",{value:"v20.9.0"})'
    const { stdout, stderr } = await nodeIn(bare, [
      '--import',
      fakeOld,
      npmCli,
      'install',
      '--dry-run',
      '--prefer-offline',
      '--legacy-peer-deps',
      tarballs.statedb.file,
    ])
    if (!/EBADENGINE/.test(stdout + stderr)) throw new Error(`no EBADENGINE warning:\n${stdout}${stderr}`)
  },
  ['install', 'missing-peers'],
)

await check(
  'publish',
  'npm publish --dry-run --workspaces publishes every package as packed, with no manifest npm would correct',
  async () => {
    // npm silently "corrects" (e.g. drops a bin it finds invalid) only when publishing, not when packing.
    const { stdout, stderr } = await npm(['publish', '--dry-run', '--workspaces', '--ignore-scripts'], root)
    const text = stdout + stderr
    if (/auto-corrected|errors corrected/.test(text))
      throw new Error(
        text
          .split('\n')
          .filter((l) => /warn/.test(l))
          .join('\n'),
      )
    for (const p of PKGS) if (!text.includes(`${npmName(p)}@`)) throw new Error(`${npmName(p)} not in the dry run:\n${text}`)
  },
  ['pack'],
)

await check(
  'publint',
  'publint reports no errors',
  async () => {
    const { publint } = await import('publint')
    const { formatMessage } = await import('publint/utils')
    const errors = []
    for (const p of PKGS) {
      const tarball = readFileSync(tarballs[p].file)
      const pkg = manifest(p)
      const result = await publint({
        pack: { tarball: tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.byteLength) },
        level: 'suggestion',
      })
      if (result.pkg?.name !== pkg.name) throw new Error(`publint did not read ${pkg.name} from its tarball`)
      const { messages } = result
      for (const m of messages) {
        const line = `${pkg.name}: ${m.type}: ${formatMessage(m, pkg) ?? m.code}`
        if (m.type === 'error') errors.push(line)
        else console.log(`     ${line}`)
      }
    }
    if (errors.length) throw new Error(errors.join('\n'))
  },
  ['pack'],
)

await check(
  'attw',
  'attw (are the types wrong, ESM-only profile) reports no problems',
  async () => {
    const attw = join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js')
    const results = await Promise.allSettled(
      PKGS.map((p) => nodeIn(root, [attw, tarballs[p].file, '--profile', 'esm-only', '--format', 'table-flipped', '--no-color'])),
    )
    const bad = results.flatMap((r, i) => (r.status === 'rejected' ? [`${npmName(PKGS[i])}: ${r.reason.message}`] : []))
    if (bad.length) throw new Error(bad.join('\n'))
  },
  ['pack'],
)

if (failed === 0 && !keep) rmSync(tmp, { recursive: true, force: true })
else console.log(`(temp dir kept: ${tmp})`)
const secs = ((Date.now() - t0) / 1000).toFixed(0)
console.log(`packaging: ${passed} passed, ${failed} failed (${secs}s) - ${failed ? 'FAILED' : 'ok'}`)
process.exit(failed ? 1 : 0)
