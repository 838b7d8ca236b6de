// create-statewright: writes a new operator project from the template beside this package.
// Invariants:
// - Nothing is overwritten: a directory that exists and is not empty is refused, naming it.
// - The project's name is a valid npm package name and Kubernetes object name (lower case, digits,
//   dashes); a bad one is refused with what is allowed.
// - Files are copied as they are, but for `__NAME__` (the project's name) and `__STATEWRIGHT__` (the
//   version range of the statewright packages, this package's own version); template names without
//   their leading dot (npm drops dotfiles from tarballs) get it back: gitignore, dockerignore, github/.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, join, relative, resolve } from 'node:path'

export class ScaffoldError extends Error {
  override readonly name = 'ScaffoldError'
}

export interface ScaffoldOptions {
  /** The project's name (default: the directory's name). */
  name?: string
  /** The version range of the @statewright packages (default: this package's version). */
  statewrightVersion?: string
}

const TEMPLATE = new URL('../template/', import.meta.url)
const DOTTED = new Set(['gitignore', 'dockerignore', 'github'])

/** This package's version (the statewright packages share it). */
export function ownVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version
}

/** Writes the project into `dir`; returns the files written, relative to it. */
export function scaffold(dir: string, o: ScaffoldOptions = {}): string[] {
  const target = resolve(dir)
  const name = o.name ?? basename(target)
  if (!/^[a-z]([-a-z0-9]{0,50}[a-z0-9])?$/.test(name))
    throw new ScaffoldError(
      `create-statewright: "${name}" cannot name the operator: use lower-case letters, digits and dashes, starting with a letter (it is the npm name, the Manager's name and Kubernetes object names)`,
    )
  if (existsSync(target) && readdirSync(target).length > 0)
    throw new ScaffoldError(`create-statewright: ${target} exists and is not empty; give a new directory`)
  const version = o.statewrightVersion ?? `^${ownVersion()}`
  const written: string[] = []
  const copy = (from: string, to: string) => {
    for (const entry of readdirSync(from)) {
      const src = join(from, entry)
      const out = join(to, DOTTED.has(entry) && from === TEMPLATE.pathname.replace(/\/$/, '') ? `.${entry}` : entry)
      if (statSync(src).isDirectory()) {
        mkdirSync(out, { recursive: true })
        copy(src, out)
      } else {
        const text = readFileSync(src, 'utf8').replaceAll('__NAME__', name).replaceAll('__STATEWRIGHT__', version)
        writeFileSync(out, text)
        written.push(relative(target, out))
      }
    }
  }
  mkdirSync(target, { recursive: true })
  copy(TEMPLATE.pathname.replace(/\/$/, ''), target)
  return written.sort()
}
