// Kubeconfig loading without @kubernetes/client-node: importing client-node loads its whole generated
// API (about 900 modules, +70 MB RSS, 0.7-1 s; docs/k8s.md), and all a controller needs from it is
// the kubeconfig. This file reads the kubeconfig shapes client-go and client-node read (server, CA
// data/file, insecure-skip-tls-verify, tls-server-name, proxy-url; token, token-file, client
// certificate and key data/file, basic auth, `as`; contexts, namespace, current-context), the
// in-cluster service account, and KUBECONFIG lists merged as client-go merges them. Exec credential
// plugins and auth providers are kept as written and handed to client-node, loaded then (./credentials.ts).
// Invariants:
// - the objects have client-node's shapes (its Cluster, User, Context types), so a Kubeconfig and a
//   user's own client-node KubeConfig answer the same reads (KubeconfigView), and client-node can
//   take ours as they are (loadFromOptions) for the auth it does;
// - relative file paths (certificate-authority, client-certificate, client-key, token-file) are
//   resolved against the directory of the file that names them, as client-go does;
// - `yaml` is loaded on the first kubeconfig text parsed outside the subset kubectl writes
//   (./kubeconfig-yaml.ts): the in-cluster path, and most kubeconfig files, never load it.
import { ConfigError } from './errors.ts'
import { readSimpleYaml } from './kubeconfig-yaml.ts'
import { accessSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { isIPv6 } from 'node:net'
import { delimiter, dirname, isAbsolute, join } from 'node:path'
import type * as ClientNode from '@kubernetes/client-node'

export type KubeconfigCluster = ClientNode.Cluster
export type KubeconfigContext = ClientNode.Context
/** client-node's User, plus `tokenFile`: a token re-read when credentials are refreshed (rotation). */
export type KubeconfigUser = ClientNode.User & { readonly tokenFile?: string }

/** What a Cluster reads of a kubeconfig: a Kubeconfig and a client-node KubeConfig both are one. */
export type KubeconfigView = Pick<
  ClientNode.KubeConfig,
  | 'getCurrentCluster'
  | 'getCurrentUser'
  | 'getCurrentContext'
  | 'setCurrentContext'
  | 'getContextObject'
  | 'getContexts'
  | 'getClusters'
  | 'getUsers'
>

export const SERVICEACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount'

/** A loaded kubeconfig: clusters, users and contexts by name, and the current context. */
export class Kubeconfig implements KubeconfigView {
  clusters: KubeconfigCluster[] = []
  users: KubeconfigUser[] = []
  contexts: KubeconfigContext[] = []
  currentContext = ''

  /** Kubeconfig YAML (or JSON) text; relative paths in it are resolved against `dir` when given. */
  static fromString(text: string, dir?: string): Kubeconfig {
    return new Kubeconfig().add(parseYaml(text), dir)
  }

  /** One kubeconfig file. */
  static fromFile(path: string): Kubeconfig {
    return Kubeconfig.fromString(readText(path, 'kubeconfig'), dirname(path))
  }

  /**
   * Several files merged as client-go merges KUBECONFIG: files that do not exist are skipped, the
   * first file to name a cluster, user or context wins, and so does the first to set current-context.
   */
  static fromFiles(paths: readonly string[]): Kubeconfig {
    const kc = new Kubeconfig()
    const found = paths.filter((p) => p && exists(p))
    if (!found.length) throw new ConfigError(`kubeconfig: none of the files exists: ${paths.join(', ')}`)
    for (const p of found) kc.add(parseYaml(readText(p, 'kubeconfig')), dirname(p), p)
    return kc
  }

  /**
   * What client-node's loadFromDefault and client-go load: $KUBECONFIG (a path list), else
   * ~/.kube/config, else the in-cluster service account, else http://localhost:8080.
   */
  static fromDefault(env: NodeJS.ProcessEnv = process.env): Kubeconfig {
    if (env.KUBECONFIG) return Kubeconfig.fromFiles(env.KUBECONFIG.split(delimiter).filter(Boolean))
    const home = env.HOME || (process.platform === 'win32' ? env.USERPROFILE : undefined)
    if (home && exists(join(home, '.kube', 'config'))) return Kubeconfig.fromFile(join(home, '.kube', 'config'))
    if (exists(`${SERVICEACCOUNT_ROOT}/token`)) return Kubeconfig.inCluster(env)
    const kc = new Kubeconfig()
    kc.clusters = [{ name: 'cluster', server: 'http://localhost:8080', skipTLSVerify: false }]
    kc.users = [{ name: 'user' }]
    kc.contexts = [{ name: 'loaded-context', cluster: 'cluster', user: 'user' }]
    kc.currentContext = 'loaded-context'
    return kc
  }

  /**
   * The pod's service account: KUBERNETES_SERVICE_HOST/PORT, its CA, its (rotated, re-read) token
   * and namespace under `root` (default /var/run/secrets/kubernetes.io/serviceaccount).
   */
  static inCluster(env: NodeJS.ProcessEnv = process.env, root = SERVICEACCOUNT_ROOT): Kubeconfig {
    const host = env.KUBERNETES_SERVICE_HOST
    const port = env.KUBERNETES_SERVICE_PORT
    if (!host || !port) throw new ConfigError('kubeconfig: in-cluster needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT')
    // client-node's rule: the well-known plain ports are HTTP.
    const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https'
    const kc = new Kubeconfig()
    kc.clusters = [
      {
        name: 'inCluster',
        server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`,
        caFile: `${root}/ca.crt`,
        skipTLSVerify: false,
      },
    ]
    kc.users = [{ name: 'inClusterUser', tokenFile: `${root}/token` }]
    const nsFile = `${root}/namespace`
    const namespace = exists(nsFile) ? readFileSync(nsFile, 'utf8') : undefined
    kc.contexts = [{ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', ...(namespace ? { namespace } : {}) }]
    kc.currentContext = 'inClusterContext'
    return kc
  }

  getContexts(): KubeconfigContext[] {
    return this.contexts
  }
  getClusters(): KubeconfigCluster[] {
    return this.clusters
  }
  getUsers(): KubeconfigUser[] {
    return this.users
  }
  getCurrentContext(): string {
    return this.currentContext
  }
  setCurrentContext(name: string): void {
    this.currentContext = name
  }
  getContextObject(name: string): KubeconfigContext | null {
    return this.contexts.find((c) => c.name === name) ?? null
  }
  getCluster(name: string): KubeconfigCluster | null {
    return this.clusters.find((c) => c.name === name) ?? null
  }
  getUser(name: string): KubeconfigUser | null {
    return this.users.find((u) => u.name === name) ?? null
  }
  getCurrentCluster(): KubeconfigCluster | null {
    const ctx = this.getContextObject(this.currentContext)
    return ctx ? this.getCluster(ctx.cluster) : null
  }
  getCurrentUser(): KubeconfigUser | null {
    const ctx = this.getContextObject(this.currentContext)
    return ctx ? this.getUser(ctx.user) : null
  }

  /** Adds the entries of one parsed file; names already present win (client-go's merge). */
  private add(doc: unknown, dir?: string, file?: string): this {
    const where = file ? `kubeconfig ${file}` : 'kubeconfig'
    if (doc === null || doc === undefined) return this
    if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`${where}: not a mapping`)
    const d = doc as Record<string, any>
    const abs = (p: unknown, field: string): string | undefined => {
      if (p === undefined || p === null || p === '') return undefined
      if (typeof p !== 'string') throw new ConfigError(`${where}: ${field} is not a string`)
      return dir && !isAbsolute(p) ? join(dir, p) : p
    }
    const str = (v: unknown, field: string): string | undefined => {
      if (v === undefined || v === null || v === '') return undefined
      if (typeof v !== 'string') throw new ConfigError(`${where}: ${field} is not a string`)
      return v
    }
    for (const [i, e] of list(d.clusters, where, 'clusters')) {
      const at = `clusters[${i}]`
      if (!e.name) throw new ConfigError(`${where}: ${at}.name is missing`)
      const c = e.cluster
      if (!c || typeof c !== 'object') throw new ConfigError(`${where}: ${at}.cluster is missing`)
      if (!c.server) throw new ConfigError(`${where}: ${at}.cluster.server is missing`)
      if (this.getCluster(e.name)) continue
      this.clusters.push(
        compact({
          name: String(e.name),
          server: String(c.server).replace(/\/$/, ''),
          caData: str(c['certificate-authority-data'], `${at}.cluster.certificate-authority-data`),
          caFile: abs(c['certificate-authority'], `${at}.cluster.certificate-authority`),
          skipTLSVerify: c['insecure-skip-tls-verify'] === true,
          tlsServerName: str(c['tls-server-name'], `${at}.cluster.tls-server-name`),
          proxyUrl: str(c['proxy-url'], `${at}.cluster.proxy-url`),
        }),
      )
    }
    for (const [i, e] of list(d.users, where, 'users')) {
      const at = `users[${i}]`
      if (!e.name) throw new ConfigError(`${where}: ${at}.name is missing`)
      if (this.getUser(e.name)) continue
      const u = (e.user ?? {}) as Record<string, any>
      const token = str(u.token, `${at}.user.token`)
      // A token wins over token-file (client-go); the file is read now (a missing file is an error
      // at load, as in client-node) and again when credentials are refreshed.
      const tokenFile = token ? undefined : abs(u['token-file'], `${at}.user.token-file`)
      if (tokenFile) readText(tokenFile, `${at}.user.token-file`)
      this.users.push(
        compact({
          name: String(e.name),
          token,
          tokenFile,
          certData: str(u['client-certificate-data'], `${at}.user.client-certificate-data`),
          certFile: abs(u['client-certificate'], `${at}.user.client-certificate`),
          keyData: str(u['client-key-data'], `${at}.user.client-key-data`),
          keyFile: abs(u['client-key'], `${at}.user.client-key`),
          username: str(u.username, `${at}.user.username`),
          password: u.password === undefined || u.password === null ? undefined : String(u.password),
          impersonateUser: str(u.as, `${at}.user.as`),
          exec: u.exec ?? undefined,
          authProvider: u['auth-provider'] ?? undefined,
        }),
      )
    }
    for (const [i, e] of list(d.contexts, where, 'contexts')) {
      const at = `contexts[${i}]`
      if (!e.name) throw new ConfigError(`${where}: ${at}.name is missing`)
      const c = e.context
      if (!c || typeof c !== 'object') throw new ConfigError(`${where}: ${at}.context is missing`)
      if (!c.cluster) throw new ConfigError(`${where}: ${at}.context.cluster is missing`)
      if (this.getContextObject(e.name)) continue
      this.contexts.push(
        compact({ name: String(e.name), cluster: String(c.cluster), user: c.user || undefined, namespace: c.namespace || undefined }),
      )
    }
    if (!this.currentContext && d['current-context']) this.currentContext = String(d['current-context'])
    return this
  }
}

/** The bearer token of a user: `token`, else the current content of `tokenFile` (trimmed). */
export function userToken(user: KubeconfigUser): string | undefined {
  if (user.token) return user.token
  if (user.tokenFile) return readText(user.tokenFile, 'token-file').trim() || undefined
  return undefined
}

/** The bytes of a `file` or base64 `data` field (the file wins, as in client-node and client-go). */
export function fileOrData(file: string | undefined, data: string | undefined, what: string): Buffer | undefined {
  if (file) {
    try {
      return readFileSync(file)
    } catch (e) {
      throw new ConfigError(`kubeconfig: cannot read ${what} ${file}: ${(e as Error).message}`, { cause: e })
    }
  }
  return data ? Buffer.from(data, 'base64') : undefined
}

type Yaml = typeof import('yaml')
let yaml: Yaml | undefined

function parseYaml(text: string): unknown {
  const simple = readSimpleYaml(text)
  if (simple !== undefined) return simple
  yaml ??= createRequire(import.meta.url)('yaml') as Yaml
  try {
    return yaml.parse(text, { merge: true })
  } catch (e) {
    // YAML errors quote the lines around the fault (tokens, keys): keep only the first line.
    throw new ConfigError(`kubeconfig: not valid YAML: ${String((e as Error)?.message ?? e).split('\n')[0]}`)
  }
}

function list(v: unknown, where: string, field: string): [number, Record<string, any>][] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) throw new ConfigError(`${where}: ${field} is not a list`)
  return v.map((e, i) => {
    if (!e || typeof e !== 'object') throw new ConfigError(`${where}: ${field}[${i}] is not a mapping`)
    return [i, e]
  })
}

/** Drops undefined fields, so objects compare equal to client-node's whatever path made them. */
function compact<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k]
  return o
}

function exists(path: string): boolean {
  try {
    accessSync(path)
    return true
  } catch {
    return false
  }
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (e) {
    throw new ConfigError(`kubeconfig: cannot read ${what} ${path}: ${(e as Error).message}`, { cause: e })
  }
}
