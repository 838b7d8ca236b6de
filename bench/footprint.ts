// What a controller process costs from outside (issue 28): cold start to its first request and to
// /readyz, idle RSS, and RSS with 10k watched objects, for a Manager-based operator run compiled
// (bench/footprint/operator.mjs on the packages' dist/, plain node, no tsx) against a bare
// @kubernetes/client-node informer process (bench/footprint/informer.mjs) as the baseline.
//
//   npm run bench -- footprint [--quick]
//
// Every sample is a fresh process; operator and informer samples alternate (A B A B ...), so load
// that comes and goes falls on both alike; figures are medians. The embedded test server runs in
// this process (HTTP, a bearer token). A third process, the floor (bench/footprint/floor.mjs: plain
// node, one GET of the ConfigMaps, the parsed items held), is what any Node process holding the
// objects costs: the bound of the goals. Times are from just before spawn to
// - the first request the server receives from the child (its request log), and
// - the first 200 from the child's /readyz (polled every 5 ms; caches listed and watching).
// RSS is read from /proc/<pid>/status (VmRSS) 2 s after /readyz answered 200. The 10k case seeds
// 10 000 ConfigMaps of about 600 bytes of JSON each; its budget (the issue's goal) is 1.5x their
// JSON size (as the server lists them) + 70 MiB.
//
// The test loop: one operator test file (test/configmap-per-site.test.ts: a test server, a Manager,
// a finalizer) as a fresh process, wall time through scripts/ts (the test runner's loader) against
// tsx, alternating; what it spends where: node and the loader with the file's imports alone
// (`TestFile_Imports`), and the test itself (uvu's own Duration).
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestServer, type RunningTestServer } from '@statewright/testserver'
import { median, type Result, type RunOptions } from './lib/index.ts'
import { freePort, sampleStart } from './lib/process.ts'

const root = new URL('..', import.meta.url).pathname
const SITE = { group: 'demo.statewright.io', version: 'v1', resource: 'sites', kind: 'Site' }
const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' }
const MiB = 1024 * 1024
const CONTENDERS = {
  operator: join(root, 'bench/footprint/operator.mjs'),
  informer: join(root, 'bench/footprint/informer.mjs'),
  floor: join(root, 'bench/footprint/floor.mjs'),
} as const
type Contender = keyof typeof CONTENDERS

interface Sample {
  firstRequestMs: number
  readyzMs: number
  rssBytes: number
}

async function sample(server: RunningTestServer, who: Contender, kubeconfig: string, settleMs: number): Promise<Sample> {
  const port = await freePort()
  const before = server.control.requestLog().length
  let firstRequestMs = 0
  const s = await sampleStart({
    who,
    args: [CONTENDERS[who], String(port)],
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      KUBECONFIG: kubeconfig,
      FOOTPRINT_SERVER: server.url,
      FOOTPRINT_TOKEN: server.token ?? '',
    },
    port,
    settleMs,
    onReady: (t0) => {
      const first = server.control.requestLog().slice(before)[0]
      if (!first) throw new Error(`${who}: ready without a request to the server`)
      firstRequestMs = first.time - t0
    },
  })
  return { firstRequestMs, ...s }
}

/** Samples of both contenders, alternating; the first round warms the file cache and is dropped. */
async function rounds(server: RunningTestServer, kubeconfig: string, n: number, settleMs: number): Promise<Record<Contender, Sample[]>> {
  const out: Record<Contender, Sample[]> = { operator: [], informer: [], floor: [] }
  for (let i = 0; i <= n; i++) {
    for (const who of Object.keys(CONTENDERS) as Contender[]) {
      const s = await sample(server, who, kubeconfig, settleMs)
      if (i > 0) out[who].push(s)
    }
  }
  return out
}

const LOADERS = { 'scripts/ts': join(root, 'scripts/ts/register.mjs'), tsx: 'tsx' } as const
type Loader = keyof typeof LOADERS
const TEST_IMPORTS = [
  'uvu',
  'yaml',
  '@statewright/testserver',
  '@statewright/k8s',
  '@statewright/controller',
  './examples/configmap-per-site.ts',
]

/** One fresh process; wall ms from spawn to exit, and its stdout. */
function timed(args: string[]): { ms: number; stdout: string } {
  const t0 = performance.now()
  const r = spawnSync(process.execPath, ['--conditions=@statewright/source', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  })
  const ms = performance.now() - t0
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`)
  return { ms, stdout: r.stdout }
}

async function testLoop(n: number): Promise<Result[]> {
  const file = ['node_modules/uvu/bin.js', 'test', '^configmap-per-site\\.test\\.ts$']
  const imports = `${TEST_IMPORTS.map((m) => `await import(${JSON.stringify(m)})`).join(';')}`
  const wall: Record<Loader, number[]> = { 'scripts/ts': [], tsx: [] }
  const imp: Record<Loader, number[]> = { 'scripts/ts': [], tsx: [] }
  const test: number[] = []
  for (let i = 0; i <= n; i++) {
    for (const l of Object.keys(LOADERS) as Loader[]) {
      const w = timed(['--import', LOADERS[l], ...file])
      const m = timed(['--import', LOADERS[l], '--input-type=module', '-e', imports])
      if (i === 0) continue // warms the file cache and the transform caches
      wall[l].push(w.ms)
      imp[l].push(m.ms)
      const d = /Duration:\s+([\d.]+)ms/.exec(w.stdout)
      if (l === 'scripts/ts' && d) test.push(Number(d[1]))
    }
  }
  const tag = `${n} samples each, alternating`
  return [
    {
      name: 'TestFile_Wall',
      unit: 'ms',
      value: median(wall['scripts/ts']),
      baseline: 'the same under tsx',
      baselineValue: median(wall.tsx),
      note: tag,
    },
    {
      name: 'TestFile_Imports',
      unit: 'ms',
      value: median(imp['scripts/ts']),
      baseline: 'the same under tsx',
      baselineValue: median(imp.tsx),
      note: `node, the loader and the file's imports; ${tag}`,
    },
    { name: 'TestFile_Test', unit: 'ms', value: median(test), note: "uvu's Duration: the test itself" },
  ]
}

export async function run(opts: RunOptions): Promise<Result[]> {
  // Compiled: the operator runs the packages' dist/ (built here, as `npm run build` does).
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-b', join(root, 'tsconfig.build.json')], {
    stdio: 'inherit',
  })
  const tmp = mkdtempSync(join(tmpdir(), 'statewright-bench-footprint-'))
  const server = await startTestServer({ kinds: [SITE] })
  try {
    const kubeconfig = join(tmp, 'kubeconfig')
    writeFileSync(kubeconfig, server.kubeconfig)
    const n = opts.quick ? 3 : 11
    const idle = await rounds(server, kubeconfig, n, 2000)

    const objects = opts.quick ? 2000 : 10_000
    server.control.seed(CONFIGMAP, objects, {
      prefix: 'cm-',
      template: {
        metadata: {
          labels: { app: 'web', tier: 'frontend', 'app.kubernetes.io/managed-by': 'someone' },
          annotations: { note: 'n'.repeat(60) },
        },
        data: { 'config.yaml': 'key: value\n'.repeat(30) },
      },
    })
    const list = await fetch(`${server.url}/api/v1/namespaces/default/configmaps`, { headers: { Authorization: `Bearer ${server.token}` } })
    const items = ((await list.json()) as { items: unknown[] }).items
    const jsonBytes = items.reduce<number>((a, o) => a + Buffer.byteLength(JSON.stringify(o)), 0)
    const full = await rounds(server, kubeconfig, opts.quick ? 2 : 5, 2000)

    const med = (s: Sample[], f: (x: Sample) => number) => median(s.map(f))
    const pair = (name: string, unit: string, set: Record<Contender, Sample[]>, f: (x: Sample) => number, note: string): Result => ({
      name,
      unit,
      value: med(set.operator, f),
      baseline: 'client-node informer process',
      baselineValue: med(set.informer, f),
      note,
    })
    const tag = `${n} samples each, alternating`
    const k = `${objects / 1000}k`
    const loop = await testLoop(opts.quick ? 3 : 9)
    return [
      ...loop,
      pair('ColdStart_FirstRequest', 'ms', idle, (s) => s.firstRequestMs, tag),
      pair('ColdStart_Readyz', 'ms', idle, (s) => s.readyzMs, tag),
      pair('IdleRss', 'MiB', idle, (s) => s.rssBytes / MiB, `${tag}; 2 s after /readyz`),
      pair(`Readyz_${k}`, 'ms', full, (s) => s.readyzMs, `${objects} ConfigMaps listed and watched`),
      pair(`Rss_${k}`, 'MiB', full, (s) => s.rssBytes / MiB, `${objects} ConfigMaps cached`),
      { name: 'ColdStart_Readyz_Floor', unit: 'ms', value: med(idle.floor, (s) => s.readyzMs), note: 'plain node: one GET, /readyz' },
      { name: 'IdleRss_Floor', unit: 'MiB', value: med(idle.floor, (s) => s.rssBytes / MiB), note: 'plain node and an HTTP server' },
      {
        name: `Rss_${k}_Floor`,
        unit: 'MiB',
        value: med(full.floor, (s) => s.rssBytes / MiB),
        note: `plain node holding the ${objects} parsed ConfigMaps`,
      },
      {
        name: `Rss_${k}_Budget`,
        unit: 'MiB',
        value: (1.5 * jsonBytes) / MiB + 70,
        note: `1.5 x ${(jsonBytes / MiB).toFixed(1)} MiB of JSON + 70 MiB (the goal)`,
      },
      { name: `ObjectsJson_${k}`, unit: 'MiB', value: jsonBytes / MiB, note: `${objects} ConfigMaps as the server lists them` },
    ]
  } finally {
    await server.stop()
    rmSync(tmp, { recursive: true, force: true })
  }
}
