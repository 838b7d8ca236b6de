// What a Cluster sends: TLS material (synchronously, for its one agent) and authentication headers
// (asynchronously, refreshed by the caller). From a Kubeconfig (./kubeconfig.ts) they are computed
// here; only a user with an exec credential plugin or an auth provider (OIDC, Azure, GCP) needs
// @kubernetes/client-node, loaded then and handed the same objects. A user's own client-node
// KubeConfig is asked as before (applyToHTTPSOptions).
// Invariants: the headers and TLS fields are client-node's for the same kubeconfig (test/kubeconfig.test.ts
// loads fixtures both ways); client-node is never imported unless a user needs it.
import type https from 'node:https'
import type * as ClientNode from '@kubernetes/client-node'
import { loadClientNode } from './clientnode.ts'
import { fileOrData, Kubeconfig, userToken, type KubeconfigUser, type KubeconfigView } from './kubeconfig.ts'

export interface TlsOptions {
  ca?: Buffer
  cert?: Buffer
  key?: Buffer
  pfx?: https.RequestOptions['pfx']
  passphrase?: string
  rejectUnauthorized?: boolean
  servername?: string
}

export interface Credentials {
  /** TLS material for the agent (read once: files are read now). */
  tls(): TlsOptions
  /** Authorization (and impersonation) headers, computed afresh (tokens rotate, plugins expire). */
  headers(): Promise<Record<string, string>>
}

/** Credentials of a kubeconfig: in-house for a Kubeconfig, client-node's for its own KubeConfig. */
export function credentialsOf(kc: KubeconfigView): Credentials {
  return kc instanceof Kubeconfig ? new KubeconfigCredentials(kc) : new ClientNodeCredentials(kc as ClientNode.KubeConfig)
}

/** Does this user need client-node (exec plugin, auth provider)? */
export function needsClientNode(user: KubeconfigUser | null): boolean {
  return !!user && (!!user.exec || !!user.authProvider)
}

class KubeconfigCredentials implements Credentials {
  private delegate: Promise<ClientNodeCredentials> | undefined
  constructor(private readonly kc: Kubeconfig) {}

  tls(): TlsOptions {
    const c = this.kc.getCurrentCluster()
    const u = this.kc.getCurrentUser()
    const out: TlsOptions = {}
    // client-node applies nothing of the cluster's when the context has no user; nor do we.
    if (!u) return out
    if (c?.skipTLSVerify) out.rejectUnauthorized = false
    if (c?.tlsServerName) out.servername = c.tlsServerName
    const ca = c ? fileOrData(c.caFile, c.caData, 'certificate-authority') : undefined
    if (ca) out.ca = ca
    const cert = fileOrData(u.certFile, u.certData, 'client-certificate')
    if (cert) out.cert = cert
    const key = fileOrData(u.keyFile, u.keyData, 'client-key')
    if (key) out.key = key
    return out
  }

  async headers(): Promise<Record<string, string>> {
    const u = this.kc.getCurrentUser()
    if (!u) return {}
    if (needsClientNode(u)) {
      this.delegate ??= loadClientNode().then((cn) => {
        const kc = new cn.KubeConfig()
        const ctx = this.kc.getContextObject(this.kc.currentContext)!
        const cluster = this.kc.getCurrentCluster()
        kc.loadFromOptions({ clusters: cluster ? [cluster] : [], users: [u], contexts: [ctx], currentContext: ctx.name })
        return new ClientNodeCredentials(kc)
      })
      return (await this.delegate).headers()
    }
    const headers: Record<string, string> = {}
    if (u.impersonateUser != null) headers['Impersonate-User'] = u.impersonateUser
    const token = userToken(u)
    if (token) headers.Authorization = `Bearer ${token}`
    if (u.username) headers.Authorization = 'Basic ' + Buffer.from(`${u.username}:${u.password}`).toString('base64')
    return headers
  }
}

class ClientNodeCredentials implements Credentials {
  constructor(private readonly kc: ClientNode.KubeConfig) {}

  tls(): TlsOptions {
    // applyToHTTPSOptions is async only because of token providers; the TLS fields are set before
    // its first await. We start it and read the fields; errors surface from headers().
    const opts: https.RequestOptions = {}
    void this.kc.applyToHTTPSOptions(opts).catch(() => {})
    return {
      ca: opts.ca as Buffer,
      cert: opts.cert as Buffer,
      key: opts.key as Buffer,
      pfx: opts.pfx,
      passphrase: opts.passphrase,
      rejectUnauthorized: opts.rejectUnauthorized,
      servername: opts.servername,
    }
  }

  async headers(): Promise<Record<string, string>> {
    const opts: https.RequestOptions = {}
    await this.kc.applyToHTTPSOptions(opts)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v)
    if (opts.auth) headers.Authorization = 'Basic ' + Buffer.from(opts.auth).toString('base64')
    return headers
  }
}
