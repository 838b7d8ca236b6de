// What a user gets from npm: cold import time of each package on plain node, from its packed tarball
// installed in a consumer project outside the workspace, and the tarball sizes.
//
//   npm run bench -- packaging [--quick]
//
// Cold import: a fresh `node` process per sample runs `await import('<package>')` and reports how long
// that took (performance.now() around the import: Node's own start-up is not counted; the OS file
// cache is warm after the first sample, as it is for a service that restarts). Samples of the
// packages are interleaved, so a change of machine load hits them alike; the figure is the median.
// `@kubernetes/client-node` alone is measured the same way as the baseline of @statewright/k8s,
// which loads it. Goals (issue 11): statedb < 150 ms, k8s < 400 ms.
//
// docs/performance.md shows bench/results/packaging.json through `npm run bench:docs`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PACKAGES, installProject, packAll, peerSpecs, run as runCommand } from '../scripts/packaging/project.mjs'
import { median, type Result, type RunOptions } from './lib/index.ts'

const CLIENT_NODE = '@kubernetes/client-node'

async function importMs(cwd: string, specifier: string): Promise<number> {
  const code = `const t = performance.now(); await import(${JSON.stringify(specifier)}); process.stdout.write(String(performance.now() - t))`
  const { stdout } = await runCommand(process.execPath, ['--input-type=module', '-e', code], { cwd })
  const ms = Number(stdout)
  if (!Number.isFinite(ms)) throw new Error(`importing ${specifier} printed ${JSON.stringify(stdout)}`)
  return ms
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const tmp = mkdtempSync(join(tmpdir(), 'statewright-bench-pack-'))
  try {
    const tarballs = await packAll(join(tmp, 'tarballs'))
    const consumer = join(tmp, 'consumer')
    await installProject(consumer, [...PACKAGES.map((p) => tarballs[p].file), ...peerSpecs()])

    const specifiers = [...PACKAGES.map((p) => `@statewright/${p}`), CLIENT_NODE]
    const samples = new Map<string, number[]>(specifiers.map((s) => [s, []]))
    const rounds = opts.quick ? 5 : 31
    for (const s of specifiers) await importMs(consumer, s) // warm the file cache; not counted
    for (let i = 0; i < rounds; i++) {
      for (const s of specifiers) samples.get(s)!.push(await importMs(consumer, s))
    }

    const med = (s: string) => median(samples.get(s)!)
    const out: Result[] = []
    for (const p of PACKAGES) {
      const spec = `@statewright/${p}`
      const r: Result = { name: `ImportCold_${p}`, unit: 'ms', value: med(spec), note: `${rounds} samples` }
      if (p === 'k8s') Object.assign(r, { baseline: `${CLIENT_NODE} alone`, baselineValue: med(CLIENT_NODE) })
      out.push(r)
    }
    out.push({
      name: 'ImportCold_client-node',
      unit: 'ms',
      value: med(CLIENT_NODE),
      note: `${CLIENT_NODE} alone, the baseline of ImportCold_k8s`,
    })
    for (const p of PACKAGES) {
      const t = tarballs[p]
      out.push({ name: `Tarball_${p}`, unit: 'bytes', value: t.size, note: `${t.files.length} files` })
      out.push({ name: `TarballUnpacked_${p}`, unit: 'bytes', value: t.unpackedSize })
      out.push({ name: `TarballFiles_${p}`, unit: 'files', value: t.files.length })
    }
    return out
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}
