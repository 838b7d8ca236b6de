// The controller suite's operator part (issue 27): the docs' whole operator, examples/backup-operator.ts
// (a custom kind from a TypeBox schema, reconcile with status, an owned CronJob, a finalizer, a
// validating webhook over TLS, flags), run as a user deploys it, configured by flags only, in two
// shapes: compiled (the example alone compiled by esbuild, its imports resolved to the packages'
// dist/ and node_modules, plain node) and bundled (one file with every dependency but the lazily
// loaded ones, BUNDLE_EXTERNALS: what docs/controller.md "Shipping an operator" recommends).
// Measured from outside, fresh processes:
// - cold start: just before spawn to the first 200 of /readyz (caches listed and watching, the
//   webhook server listening);
// - idle RSS: VmRSS 2 s after that, and settled: 20 s after it, once V8's memory reducer has
//   returned the start's garbage (compiled, bundled and the floor; three rounds, three at a time).
// Side by side, alternating (A B C D A B C D ...; the first round warms the file cache and is dropped):
// the same file run from source under tsx (what `npm start`-style development costs), and the floor
// (bench/footprint/floor.mjs: plain node, one GET, an HTTP server): what any Node process costs.
// The compiled and bundled files and the floor run with the node flags of the image `npm create
// statewright` scaffolds (its Dockerfile's ENTRYPOINT, read here: what a deployed operator runs
// with); the compiled file and the floor also run without them (node's defaults), in the same rounds.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build, type BuildOptions } from 'esbuild'
import { generateTls, startTestServer } from '@statewright/testserver'
import { Backup } from '../../examples/backup-operator.ts'
import { median, type Result } from '../lib/index.ts'
import { freePort, sampleStart, type StartSample } from '../lib/process.ts'

const root = new URL('../..', import.meta.url).pathname
const MiB = 1024 * 1024
const CONTENDERS = ['compiled', 'bundled', 'tsx', 'floor', 'compiled_defaults', 'floor_defaults'] as const
/**
 * Left out of the bundle: loaded only when needed (client-node for exec credential plugins and auth
 * providers; prettier, json-schema-to-typescript and dagre for gen-types and the graph view) or
 * through require at run time (prom-client, an optional peer): they stay in node_modules.
 */
export const BUNDLE_EXTERNALS = ['@kubernetes/client-node', 'prom-client', 'prettier', 'json-schema-to-typescript', '@dagrejs/dagre']
type Contender = (typeof CONTENDERS)[number]
/** How long after /readyz the settled idle RSS is read. */
const SETTLE_MS = 20_000

/** The node flags of the scaffolded image: its Dockerfile's `ENTRYPOINT ["<node>", ...flags, "main.mjs"]`. */
export function deployNodeFlags(): string[] {
  const dockerfile = readFileSync(join(root, 'packages/create-statewright/template/Dockerfile'), 'utf8')
  const m = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)
  if (!m) throw new Error('the template Dockerfile has no ENTRYPOINT [...]')
  const argv = JSON.parse(m[1]!) as string[]
  return argv.slice(1, -1)
}

/** Compiles the example alone (its imports stay imports, resolved to the packages' dist/) and bundled, into node_modules/.cache. */
async function compile(): Promise<{ compiled: string; bundled: string }> {
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-b', join(root, 'tsconfig.build.json')], {
    stdio: 'inherit',
  })
  const dir = join(root, 'node_modules/.cache/statewright-bench')
  mkdirSync(dir, { recursive: true })
  const common: BuildOptions = {
    entryPoints: [join(root, 'examples/backup-operator.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  }
  const compiled = join(dir, 'backup-operator.mjs')
  await build({ ...common, outfile: compiled, packages: 'external' })
  const bundled = join(dir, 'backup-operator.bundle.mjs')
  await build({
    ...common,
    outfile: bundled,
    external: BUNDLE_EXTERNALS,
    // bundled CommonJS dependencies require node's built-ins
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  })
  return { compiled, bundled }
}

export async function operatorFootprint(quick: boolean): Promise<Result[]> {
  const { compiled, bundled } = await compile()
  const tmp = mkdtempSync(join(tmpdir(), 'statewright-bench-operator-'))
  const server = await startTestServer()
  try {
    const res = await fetch(`${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(Backup.crd),
    })
    if (res.status !== 201) throw new Error(`the Backup CRD was refused: ${res.status} ${await res.text()}`)
    const kubeconfig = join(tmp, 'kubeconfig')
    writeFileSync(kubeconfig, server.kubeconfig)
    const certs = join(tmp, 'certs')
    mkdirSync(certs)
    const tls = await generateTls(['127.0.0.1'])
    writeFileSync(join(certs, 'tls.crt'), tls.certPem)
    writeFileSync(join(certs, 'tls.key'), tls.keyPem)

    const env = { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig }
    const deploy = deployNodeFlags()
    const argsOf = (who: Contender, port: number): { args: string[]; env: NodeJS.ProcessEnv } => {
      const flags = [
        `--health-probe-bind-address=127.0.0.1:${port}`,
        '--metrics-bind-address=127.0.0.1:0',
        `--webhook-cert-path=${certs}`,
        '--webhook-port=0',
        '--zap-log-level=error',
      ]
      if (who === 'compiled') return { args: [...deploy, compiled, ...flags], env }
      if (who === 'compiled_defaults') return { args: [compiled, ...flags], env }
      if (who === 'bundled') return { args: [...deploy, bundled, ...flags], env }
      if (who === 'tsx')
        return { args: ['--conditions=@statewright/source', '--import', 'tsx', join(root, 'examples/backup-operator.ts'), ...flags], env }
      return {
        args: [...(who === 'floor' ? deploy : []), join(root, 'bench/footprint/floor.mjs'), String(port)],
        env: { ...env, FOOTPRINT_SERVER: server.url, FOOTPRINT_TOKEN: server.token ?? '' },
      }
    }
    const samples = Object.fromEntries(CONTENDERS.map((c) => [c, []])) as unknown as Record<Contender, StartSample[]>
    const n = quick ? 3 : 9
    for (let i = 0; i <= n; i++) {
      for (const who of CONTENDERS) {
        const port = await freePort()
        const s = await sampleStart({ who, ...argsOf(who, port), cwd: root, port, settleMs: 2000 })
        if (i > 0) samples[who].push(s)
      }
    }
    // Idle RSS once settled: V8's memory reducer returns the start's garbage (module loading, the
    // first lists) some 8-15 s after a process goes idle, so RSS 2 s after /readyz is the start's
    // high-water mark rather than what an idle operator holds. Three at a time (RSS does not depend
    // on the neighbours; the start times are not taken here).
    const SETTLED = ['compiled', 'bundled', 'floor'] as const
    const settled = Object.fromEntries(SETTLED.map((c) => [c, [] as number[]])) as Record<(typeof SETTLED)[number], number[]>
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      await Promise.all(
        SETTLED.map(async (who) => {
          const port = await freePort()
          const s = await sampleStart({ who, ...argsOf(who, port), cwd: root, port, settleMs: SETTLE_MS })
          settled[who].push(s.rssBytes / MiB)
        }),
      )
    }
    const ms = (who: Contender) => median(samples[who].map((s) => s.readyzMs))
    const rss = (who: Contender) => median(samples[who].map((s) => s.rssBytes / MiB))
    const tag = `${n} samples each, alternating with the bundle, the tsx run, the floor and both without ${deploy.join(' ')}`
    const flagged = `node ${deploy.join(' ')} (the scaffolded image's)`
    return [
      {
        name: 'Operator_ColdStart_Readyz',
        unit: 'ms',
        value: ms('compiled'),
        baseline: 'the same file under tsx',
        baselineValue: ms('tsx'),
        note: `examples/backup-operator.ts compiled, flags only, ${flagged}; ${tag}`,
      },
      {
        name: 'Operator_IdleRss',
        unit: 'MiB',
        value: rss('compiled'),
        baseline: 'the same file under tsx',
        baselineValue: rss('tsx'),
        note: `2 s after /readyz; ${tag}`,
      },
      {
        name: 'Operator_Bundled_ColdStart_Readyz',
        unit: 'ms',
        value: ms('bundled'),
        baseline: 'compiled',
        baselineValue: ms('compiled'),
        note: `one file (esbuild), the lazily loaded dependencies left out; ${tag}`,
      },
      {
        name: 'Operator_Bundled_IdleRss',
        unit: 'MiB',
        value: rss('bundled'),
        baseline: 'compiled',
        baselineValue: rss('compiled'),
        note: `2 s after /readyz; ${tag}`,
      },
      { name: 'Operator_ColdStart_Readyz_Floor', unit: 'ms', value: ms('floor'), note: `plain node: one GET, /readyz; ${flagged}` },
      { name: 'Operator_IdleRss_Floor', unit: 'MiB', value: rss('floor'), note: `plain node and an HTTP server; ${flagged}` },
      {
        name: 'Operator_IdleRss_Settled',
        unit: 'MiB',
        value: median(settled.compiled),
        baseline: '2 s after /readyz',
        baselineValue: rss('compiled'),
        note: `compiled, ${SETTLE_MS / 1000} s after /readyz (after V8's memory reducer); ${settled.compiled.length} samples; ${flagged}`,
      },
      {
        name: 'Operator_Bundled_IdleRss_Settled',
        unit: 'MiB',
        value: median(settled.bundled),
        baseline: '2 s after /readyz',
        baselineValue: rss('bundled'),
        note: `${SETTLE_MS / 1000} s after /readyz; ${settled.bundled.length} samples`,
      },
      {
        name: 'Operator_IdleRss_Floor_Settled',
        unit: 'MiB',
        value: median(settled.floor),
        baseline: '2 s after /readyz',
        baselineValue: rss('floor'),
        note: `the floor, ${SETTLE_MS / 1000} s after /readyz`,
      },
      {
        name: 'Operator_ColdStart_Readyz_NodeDefaults',
        unit: 'ms',
        value: ms('compiled_defaults'),
        baseline: 'compiled',
        baselineValue: ms('compiled'),
        note: `compiled, plain node without ${deploy.join(' ')}`,
      },
      {
        name: 'Operator_IdleRss_NodeDefaults',
        unit: 'MiB',
        value: rss('compiled_defaults'),
        baseline: 'compiled',
        baselineValue: rss('compiled'),
        note: `compiled, plain node without ${deploy.join(' ')}`,
      },
      {
        name: 'Operator_ColdStart_Readyz_Floor_NodeDefaults',
        unit: 'ms',
        value: ms('floor_defaults'),
        note: 'the floor without the flags',
      },
      { name: 'Operator_IdleRss_Floor_NodeDefaults', unit: 'MiB', value: rss('floor_defaults'), note: 'the floor without the flags' },
    ]
  } finally {
    await server.stop()
    rmSync(tmp, { recursive: true, force: true })
  }
}
