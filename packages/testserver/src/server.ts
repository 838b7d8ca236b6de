// The HTTP server: its lifecycle (listen, stop, refuse connections), and in front of every request
// authentication, fault injection and the request log; then dispatch.ts carries the request out.
// Invariants:
// - Every response is JSON with Content-Type application/json; errors are Status objects.
// - Faults apply before authentication and handlers, in a deterministic order (see faults.ts).
// - stop() ends every watch, destroys every socket and drops the timers of held (delayed) requests,
//   so a test process can exit.
// - Options are checked at construction (server-options.ts).
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { Socket } from 'node:net'
import { writeFileSync, rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from './store.ts'
import { Registry, type ResourceType } from './resources.ts'
import { Objects } from './objects.ts'
import { GarbageCollector } from './gc.ts'
import { WatchHub } from './watch.ts'
import { Faults, prng, type FailRule, type DelayRule } from './faults.ts'
import { StatusError, toApiError, tooManyRequests, unauthorized, serviceUnavailable } from './status.ts'
import { installCrdAdmission } from './crd-admission.ts'
import { admitDelete, installWebhookAdmission, type WebhookSource } from './webhooks.ts'
import { admitByPolicies, installPolicyAdmission, type PolicySource } from './vap.ts'
import { NS_TYPE_KEY } from './namespaces.ts'
import { builtinDefaultsStep, ServiceAllocator } from './builtin-defaults.ts'
import { builtinValidationStep } from './builtin-validation.ts'
import { builtinPruneStep } from './builtin-openapi.ts'
import { kubeconfigObject, kubeconfigYaml, type KubeconfigOptions } from './kubeconfig.ts'
import { Rbac, type RbacStore } from './rbac.ts'
import { route } from './routes.ts'
import { generateTls, type TlsMaterial } from './tls.ts'
import { then } from './conversion.ts'
import { ConfigError, TestServerError } from './errors.ts'
import { drain } from './request-body.ts'
import { checkOptions, type TestServerOptions } from './server-options.ts'
import { dispatch, sendError, type DispatchContext } from './dispatch.ts'

export interface RequestLogEntry {
  time: number
  method: string
  path: string
  query: Record<string, string>
  status: number
  watch: boolean
  userAgent?: string
  /** The bearer token sent, if any. */
  token?: string
  contentType?: string
  /** The W3C `traceparent` header sent, if any (a traced client's request span). */
  traceparent?: string
}

/** What a control call names a kind by (apimachinery's TypeMeta; a @statewright/k8s KindRef or kind constant is one). */
export interface TypeMeta {
  apiVersion: string
  kind: string
}

export class TestServer {
  /** @internal The store's parts, for the package's own modules and its tests (`control` is the contract). */
  readonly store: Store
  /** @internal The store's parts, for the package's own modules and its tests (`control` is the contract). */
  readonly registry = new Registry()
  /** @internal The store's parts, for the package's own modules and its tests (`control` is the contract). */
  readonly objects: Objects
  /** @internal The store's parts, for the package's own modules and its tests (`control` is the contract). */
  readonly watches: WatchHub
  /** @internal The store's parts, for the package's own modules and its tests (`control` is the contract). */
  readonly faults: Faults
  readonly token: string | null
  /** RBAC (the `rbac` option), else undefined: the token alone decides. */
  /** @internal */
  readonly rbac: Rbac | undefined
  private readonly log: RequestLogEntry[] = []
  private readonly sockets = new Set<Socket>()
  /** Timers of requests held by a delay fault (stop() clears them). */
  private readonly held = new Set<NodeJS.Timeout>()
  private readonly http: Server
  private port = 0
  private refusing = false
  private kubeconfigFile: string | undefined
  /** The generated CA and serving certificate (TLS only). */
  tls: TlsMaterial | undefined
  private tmpDir: string | undefined
  private readonly opts: TestServerOptions
  logLimit = 100_000
  /** What the admission webhooks read (webhooks.ts). */
  private readonly webhookSource: WebhookSource
  /** What a request's handler reads and writes (dispatch.ts). */
  private readonly dispatchContext: DispatchContext

  constructor(opts: TestServerOptions = {}) {
    checkOptions(opts)
    this.opts = opts
    const seed = opts.seed ?? 1
    this.store = new Store(opts.historySize ?? 10_000)
    this.objects = new Objects(this.store, this.registry, prng(seed ^ 0x5eed))
    this.objects.timing = { ...this.objects.timing, ...(opts.deletionTiming ?? {}) }
    if (opts.gc !== false) this.objects.gc = new GarbageCollector(this.objects)
    // admission in kube-apiserver's order: defaults (built-in, then a CRD's pruning and defaults), then validation
    this.objects.pipeline.mutating.push(builtinPruneStep, builtinDefaultsStep(new ServiceAllocator()))
    this.objects.pipeline.validating.push(builtinValidationStep)
    installCrdAdmission(this.objects.pipeline)
    // webhooks after the built-in and schema steps, as kube-apiserver's admission chain runs them
    this.webhookSource = {
      store: this.store,
      namespaceLabels: (name) => this.store.get(NS_TYPE_KEY, '', name)?.metadata?.labels,
      equivalents: (t) => this.registry.siblings(t).filter((o) => o !== t),
      toVersion: (t, obj) => this.objects.conversion.toType(t, obj),
    }
    if (opts.serviceResolver) this.webhookSource.resolveService = this.objects.conversion.resolveService = opts.serviceResolver
    if (opts.conversionTimeoutMs !== undefined) this.objects.conversion.timeoutMs = opts.conversionTimeoutMs
    // ValidatingAdmissionPolicies before the webhooks, as kube-apiserver's plugin order has them
    const policySource: PolicySource = {
      store: this.store,
      namespaceLabels: (name) => this.store.get(NS_TYPE_KEY, '', name)?.metadata?.labels,
      namespace: (name) => this.store.get(NS_TYPE_KEY, '', name),
      objectsOf: (apiVersion, kind, ns) => {
        const t = this.registry.byKind(apiVersion, kind)
        return t
          ? [...this.store.scan(t.storageKey, t.namespaced ? ns : undefined, undefined, this.store.snapshot())].map(([, o]) => o)
          : []
      },
    }
    installPolicyAdmission(this.objects.pipeline, policySource)
    installWebhookAdmission(this.objects.pipeline, this.webhookSource)
    // DELETEs (one object, each item of a deletecollection, the garbage collector's) are admitted in the request's version
    this.objects.admitDelete = (t, stored, dry) =>
      then(this.objects.conversion.toType(t, stored), (o) =>
        then(
          admitByPolicies(
            { type: t, operation: 'DELETE', object: undefined, oldObject: o, dryRun: dry, fieldValidation: 'Ignore', warnings: [] },
            policySource,
          ),
          () => admitDelete(this.webhookSource, t, o, dry),
        ),
      )
    this.watches = new WatchHub(this.store, opts.bookmarkIntervalMs ?? 60_000)
    this.watches.expiredAsHttp410 = !!opts.watchExpiredAsHttp410
    this.faults = new Faults(seed)
    this.token = opts.token === undefined ? 'statewright-test-token' : opts.token
    this.rbac = opts.rbac ? new Rbac(this.rbacStore()) : undefined
    for (const k of opts.kinds ?? []) this.registry.register(k)
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      this.objects.create(this.type('v1', 'Namespace'), '', { metadata: { name: ns } }, { manager: 'kube-apiserver' })
    }
    this.dispatchContext = {
      registry: this.registry,
      store: this.store,
      objects: this.objects,
      watches: this.watches,
      address: () => `${this.host}:${this.port}`,
    }
    const handler = (req: IncomingMessage, res: ServerResponse) => this.onRequest(req, res)
    // with TLS, the certificate is set by listen() once generated
    this.http = opts.tls
      ? createHttpsServer({ keepAlive: true, requestTimeout: 0 }, handler)
      : createServer({ keepAlive: true, requestTimeout: 0 }, handler)
    this.http.keepAliveTimeout = 60_000
    this.http.on('connection', (s: Socket) => {
      if (this.refusing) {
        s.destroy()
        return
      }
      this.sockets.add(s)
      s.on('close', () => this.sockets.delete(s))
    })
  }

  get url(): string {
    return `${this.opts.tls ? 'https' : 'http'}://${this.host}:${this.port}`
  }
  private get host(): string {
    return this.opts.host ?? '127.0.0.1'
  }

  async listen(port = this.opts.port ?? 0): Promise<void> {
    if (this.opts.tls && !this.tls) {
      this.tls = await generateTls([this.host])
      ;(this.http as HttpsServer).setSecureContext({ key: this.tls.keyPem, cert: this.tls.certPem })
      this.objects.setRootCa(this.tls.caPem)
    }
    await new Promise<void>((resolve, reject) => {
      const onErr = (e: Error) => reject(e)
      this.http.once('error', onErr)
      this.http.listen(port, this.host, () => {
        this.http.off('error', onErr)
        resolve()
      })
    })
    const addr = this.http.address()
    this.port = typeof addr === 'object' && addr ? addr.port : port
  }

  /** @internal */
  get kubeconfigOptions(): KubeconfigOptions {
    const o: KubeconfigOptions = { server: this.url, token: this.token ?? 'none', name: this.opts.name ?? `statewright-${this.port}` }
    if (this.tls) o.caPem = this.tls.caPem
    return o
  }
  get kubeconfig(): string {
    return kubeconfigYaml(this.kubeconfigOptions)
  }
  get kubeconfigObject(): Record<string, unknown> {
    return kubeconfigObject(this.kubeconfigOptions)
  }
  get kubeconfigPath(): string {
    if (!this.kubeconfigFile) {
      if (this.opts.kubeconfigPath) this.kubeconfigFile = this.opts.kubeconfigPath
      else {
        this.tmpDir = mkdtempSync(join(tmpdir(), 'statewright-testserver-'))
        this.kubeconfigFile = join(this.tmpDir, 'kubeconfig')
      }
      writeFileSync(this.kubeconfigFile, this.kubeconfig, { mode: 0o600 })
    }
    return this.kubeconfigFile
  }

  async stop(): Promise<void> {
    this.objects.lifecycle.stop()
    for (const t of this.held) clearTimeout(t)
    this.held.clear()
    this.watches.closeAll('reset')
    const closed = new Promise<void>((resolve) => this.http.close(() => resolve()))
    for (const s of this.sockets) s.destroy()
    this.http.closeAllConnections?.()
    if (this.http.listening) await closed
    if (this.tmpDir) rmSync(this.tmpDir, { recursive: true, force: true })
  }

  /** Stops accepting connections for `ms` (connections are refused, open ones reset), then listens again. */
  async refuseConnections(ms: number): Promise<void> {
    this.refusing = true
    this.watches.closeAll('reset')
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve())
      for (const s of this.sockets) s.destroy()
    })
    await new Promise((r) => setTimeout(r, ms))
    this.refusing = false
    await this.listen(this.port)
  }

  /** The stored RBAC objects, as the authorizer reads them (rbac.ts). */
  private rbacStore(): RbacStore {
    const key = (kind: string) => this.type('rbac.authorization.k8s.io/v1', kind).storageKey
    const scan = (kind: string, ns: string | undefined) => {
      const snap = this.store.snapshot()
      return [...this.store.scan(key(kind), ns, undefined, snap)].map(([, o]) => o)
    }
    return {
      clusterRoleBindings: () => scan('ClusterRoleBinding', undefined),
      roleBindings: (ns) => scan('RoleBinding', ns),
      clusterRole: (name) => this.store.get(key('ClusterRole'), '', name),
      role: (ns, name) => this.store.get(key('Role'), ns, name),
    }
  }

  /** A kubeconfig that authenticates as a ServiceAccount (with `rbac`: its bindings decide what it may do). */
  kubeconfigFor(namespace: string, name: string): string {
    if (!this.rbac) throw new ConfigError('kubeconfigFor: the server runs without RBAC (start it with rbac: true)')
    return kubeconfigYaml({
      ...this.kubeconfigOptions,
      token: this.rbac.serviceAccountToken(namespace, name),
      name: `${namespace}-${name}`,
    })
  }

  // ---------- control helpers ----------
  type(apiVersion: string, kind: string): ResourceType {
    const t = this.registry.byKind(apiVersion, kind)
    if (!t)
      throw new TestServerError(`unknown kind ${apiVersion} ${kind} (register it first: control.registerKind or a CRD)`, 'UnknownKind')
    return t
  }
  requestLog(): RequestLogEntry[] {
    return this.log.slice()
  }
  clearRequestLog(): void {
    this.log.length = 0
  }

  // ---------- HTTP ----------
  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    // cheaper than new URL() on the hot path: split once, parse a query only when there is one
    const raw = req.url ?? '/'
    const qi = raw.indexOf('?')
    const u = { pathname: qi < 0 ? raw : raw.slice(0, qi) }
    const query: Record<string, string> = {}
    if (qi >= 0) for (const [k, v] of new URLSearchParams(raw.slice(qi + 1))) query[k] = v
    const method = (req.method ?? 'GET').toUpperCase()
    const watch = method === 'GET' && (query.watch === 'true' || query.watch === '1')
    const auth = req.headers.authorization
    const token = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined
    const entry: RequestLogEntry = { time: Date.now(), method, path: u.pathname, query, status: 0, watch }
    if (req.headers['user-agent']) entry.userAgent = req.headers['user-agent']
    if (token !== undefined) entry.token = token
    if (req.headers['content-type']) entry.contentType = req.headers['content-type']
    if (typeof req.headers.traceparent === 'string') entry.traceparent = req.headers.traceparent
    if (this.log.length >= this.logLimit) this.log.splice(0, this.log.length >> 1)
    this.log.push(entry)
    res.on('finish', () => {
      entry.status = res.statusCode
    })
    if (watch) entry.status = 200

    const info = { method, path: u.pathname, watch }
    const fail = this.faults.failureFor(info)
    const delay = this.faults.delayFor(info)
    const go = () => {
      // a client that gave up while its request was held is not served (as a real server drops a
      // queued request whose context is cancelled): a write cut off by its lease term never lands late
      if (req.socket.destroyed) return
      if (fail) return sendError(res, failureError(fail))
      const open = /^\/(healthz|livez|readyz)$/.test(u.pathname)
      if (this.rbac) {
        const user = this.rbac.userOf(token, this.token)
        if (!user) {
          if (!open) return sendError(res, unauthorized())
        } else {
          const denied = this.rbac.authorize(user, method, u.pathname, route(this.registry, u.pathname), query, watch)
          if (denied) return void drain(req).then(() => sendError(res, denied))
        }
      } else if (this.token !== null && token !== this.token && !open) return sendError(res, unauthorized())
      dispatch(this.dispatchContext, req, res, method, u.pathname, query, watch).catch((e) => sendError(res, toApiError(e)))
    }
    // A request given a `timeout` that it spent waiting (a held request) is not carried out: 504, as
    // kube-apiserver answers a request whose deadline passed in its queue.
    const deadline = !watch && query.timeout !== undefined ? parseDuration(query.timeout) : undefined
    // A held request's timer is dropped by stop() (its socket is gone): a test that held a request
    // for a minute must not keep its process alive that long after the server stopped.
    const hold = (fn: () => void, ms: number) => {
      const t = setTimeout(() => {
        this.held.delete(t)
        fn()
      }, ms)
      this.held.add(t)
    }
    if (delay > 0 && deadline !== undefined && delay >= deadline)
      hold(() => {
        if (!req.socket.destroyed)
          sendError(res, new StatusError(504, 'Timeout', 'Timeout: request did not complete within the allotted timeout'))
      }, deadline)
    else if (delay > 0) hold(go, delay)
    else go()
  }

  // ---------- control API ----------
  failRequests(rule: FailRule): () => void {
    return this.faults.failRequests(rule)
  }
  delayResponses(rule: DelayRule): () => void {
    return this.faults.delayResponses(rule)
  }
  kind(ref: TypeMeta | ResourceType): ResourceType {
    return 'storageKey' in ref ? ref : this.type(ref.apiVersion, ref.kind)
  }
}

function failureError(f: FailRule): StatusError {
  const status = f.status ?? 500
  if (status === 429) return tooManyRequests(f.retryAfterSeconds ?? 1)
  if (status === 503) {
    const e = serviceUnavailable()
    return new StatusError(
      503,
      e.status.reason!,
      e.message,
      { retryAfterSeconds: f.retryAfterSeconds ?? 1 },
      { 'Retry-After': String(f.retryAfterSeconds ?? 1) },
    )
  }
  return new StatusError(status, 'InternalError', 'Internal error occurred: injected fault')
}

/** A Go duration ("1500ms", "2s", "1.5m") in ms; undefined when it is not one. */
function parseDuration(text: string): number | undefined {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
  let total = 0
  let rest = text
  if (!rest) return undefined
  while (rest.length) {
    const m = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/.exec(rest)
    if (!m) return undefined
    total += Number(m[1]) * units[m[2]!]!
    rest = rest.slice(m[0].length)
  }
  return total
}
