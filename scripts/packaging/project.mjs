// Packing the workspace and installing the tarballs in a consumer project outside it: shared by
// scripts/check-packages.mjs (the CI check) and bench/packaging.ts (import times, tarball sizes).
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'

export const root = new URL('../..', import.meta.url).pathname
export const PACKAGES = [
  'statedb',
  'reconciler',
  'topology',
  'k8s',
  'primary',
  'testserver',
  'cli',
  'controller',
  'nats',
  'create-statewright',
]
/** The npm name of a package dir: @statewright/<dir>, but for the unscoped create-statewright (npm create's convention). */
export const npmName = (p) => (p === 'create-statewright' ? p : `@statewright/${p}`)
export const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' }
const exec = promisify(execFile)

/** Runs a command; on failure the error carries its output. */
export async function run(cmd, args, opts = {}) {
  try {
    return await exec(cmd, args, { maxBuffer: 64 << 20, env: npmEnv, ...opts })
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${e.code ?? e.signal})\n${e.stdout ?? ''}${e.stderr ?? ''}`.trimEnd())
  }
}

export const manifest = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))

/**
 * `npm pack` of every package into `dest` (prepack builds dist/ first). Returns, by package dir
 * name: the tarball path, its file list, packed and unpacked sizes in bytes.
 */
export async function packAll(dest) {
  mkdirSync(dest, { recursive: true })
  const { stdout } = await run('npm', ['pack', '--workspaces', '--json', '--pack-destination', dest], { cwd: root })
  const out = {}
  for (const t of JSON.parse(stdout)) {
    const p = PACKAGES.find((x) => t.name === npmName(x))
    if (p) out[p] = { file: join(dest, t.filename), files: t.files.map((f) => f.path), size: t.size, unpackedSize: t.unpackedSize }
  }
  for (const p of PACKAGES) if (!out[p]) throw new Error(`no tarball for ${npmName(p)}`)
  return out
}

/** Creates an ESM project in `dir` and npm-installs `specs` (tarball paths, name@range) into it. */
export async function installProject(dir, specs, npmFlags = []) {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2))
  await run('npm', ['install', '--prefer-offline', ...npmFlags, ...specs], { cwd: dir })
}

/** The peer ranges @statewright/k8s declares, for installing the peers a user would. */
export function peerSpecs() {
  const peers = manifest(join(root, 'packages/k8s')).peerDependencies
  return Object.entries(peers).map(([name, range]) => `${name}@${range}`)
}
