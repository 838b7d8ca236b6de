// Module hooks for running the TypeScript sources (tests; registered by ./register.mjs, they run on
// Node's hooks thread): a .ts module is compiled by esbuild's transform once per content and kept
// in node_modules/.cache/statewright-ts/<sha1 of esbuild's version, the path and the source>.mjs.
// Why not tsx, which does the same: its loader costs about 0.4 s more per process on this code
// (docs/performance.md, "The test loop"), most of it in resolving and hooking every module.
// Invariants: only file: URLs ending in .ts/.mts are touched (everything else goes to Node as is);
// the code base imports with explicit .ts extensions and `verbatimModuleSyntax`, so a per-file
// transform (isolated modules) is exact; a cache entry is written under a temporary name and renamed,
// so concurrent test processes never read half a file; esbuild is loaded on the first miss only.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const modules = new URL('../../node_modules/', import.meta.url)
const esbuildVersion = JSON.parse(readFileSync(new URL('esbuild/package.json', modules), 'utf8')).version
const cacheDir = fileURLToPath(new URL('.cache/statewright-ts/', modules))
mkdirSync(cacheDir, { recursive: true })

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !/\.m?ts$/.test(url.split('?')[0])) return next(url, context)
  const path = fileURLToPath(url)
  const source = readFileSync(path, 'utf8')
  const key = createHash('sha1').update(esbuildVersion).update('\0').update(path).update('\0').update(source).digest('hex')
  const file = `${cacheDir}${key}.mjs`
  let code
  try {
    code = readFileSync(file, 'utf8')
  } catch {
    const { transformSync } = await import('esbuild')
    code = transformSync(source, { loader: 'ts', format: 'esm', target: 'node20', sourcemap: 'inline', sourcefile: path }).code
    const tmp = `${file}.${process.pid}.tmp`
    writeFileSync(tmp, code)
    renameSync(tmp, file)
  }
  return { format: 'module', source: code, shortCircuit: true }
}
