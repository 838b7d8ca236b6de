// Optional peer dependencies (prom-client today), loaded on first use and never at import, so a
// package works without them until the feature that needs one is used.
//
// Invariants:
// - only a missing package is "not installed": an error thrown while loading an installed peer (a
//   broken install, a failing module) propagates as it is;
// - `requireOptionalPeer` throws a ConfigError that names the package, what needed it, and the
//   install command; `loadOptionalPeer` returns undefined instead;
// - a peer is resolved from the caller's package (`from`, its import.meta.url), the one whose
//   package.json declares the peer; loaded modules are cached by Node's require.
// It lives here, on the ground floor: any package may have an optional peer.

import { createRequire } from 'node:module'
import { ConfigError } from './errors.ts'

export interface OptionalPeerOptions {
  /** The caller's `import.meta.url`: the peer is resolved from there (default: this package). */
  from?: string | URL
  /** The version range for the install command, e.g. "^15.1.3". */
  range?: string
  /** What to do instead, appended to the error in parentheses (e.g. "or leave `metrics` unset"). */
  instead?: string
  /**
   * Modules of the peer to load instead of its main module, each under the name of the main
   * module's export it is (e.g. `{ Counter: 'lib/counter' }`): the peer is then an object of those
   * modules' exports. For a package whose main module loads much more than the caller uses
   * (prom-client's loads its default metrics, cluster and Pushgateway parts, and with them
   * @opentelemetry/api). When one of them cannot be resolved (another version's layout), the main
   * module is loaded instead, which has the same names.
   */
  parts?: Readonly<Record<string, string>>
}

function isMissing(err: unknown, name: string): boolean {
  return (err as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes(`'${name}'`)
}

/** The parts' files, or undefined when one of them is not there (`parts` above). */
function resolveParts(req: NodeJS.Require, name: string, parts: Readonly<Record<string, string>>): Array<[string, string]> | undefined {
  try {
    return Object.entries(parts).map(([k, path]) => [k, req.resolve(`${name}/${path}`)])
  } catch {
    return undefined
  }
}

/** The peer, or the error that says it is not installed. Other load errors propagate. */
function load<T>(name: string, options: OptionalPeerOptions): { peer: T } | { missing: unknown } {
  const req = createRequire(options.from ?? import.meta.url)
  try {
    if (options.parts) {
      req.resolve(name) // not installed: the error below
      const files = resolveParts(req, name, options.parts)
      if (files) return { peer: Object.fromEntries(files.map(([k, file]) => [k, req(file)])) as T }
    }
    return { peer: req(name) as T }
  } catch (err) {
    if (isMissing(err, name)) return { missing: err }
    throw err
  }
}

/** Whether the optional peer `name` is installed (resolved from `from`), without loading it. */
export function isOptionalPeerInstalled(name: string, options: Pick<OptionalPeerOptions, 'from'> = {}): boolean {
  try {
    createRequire(options.from ?? import.meta.url).resolve(name)
    return true
  } catch (err) {
    if (isMissing(err, name)) return false
    throw err
  }
}

/** The optional peer `name` (`require`d), or undefined when it is not installed. */
export function loadOptionalPeer<T>(name: string, options: OptionalPeerOptions = {}): T | undefined {
  const r = load<T>(name, options)
  return 'peer' in r ? r.peer : undefined
}

/**
 * The optional peer `name`; when it is not installed, a ConfigError: "<forWhat> needs <name>, an
 * optional peer dependency that is not installed. Install it with: npm install <name>@<range>".
 */
export function requireOptionalPeer<T>(name: string, forWhat: string, options: OptionalPeerOptions = {}): T {
  const r = load<T>(name, options)
  if ('peer' in r) return r.peer
  throw new ConfigError(
    `${forWhat} needs ${name}, an optional peer dependency that is not installed. ` +
      `Install it with: npm install ${name}${options.range ? `@${options.range}` : ''}${options.instead ? ` (${options.instead})` : ''}`,
    { cause: r.missing },
  )
}
