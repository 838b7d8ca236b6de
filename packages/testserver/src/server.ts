// The HTTP server: authentication, fault injection, request log, then dispatch to objects/watch.
// Invariants:
// - Every response is JSON with Content-Type application/json; errors are Status objects.
// - Faults apply before authentication and handlers, in a deterministic order (see faults.ts).
// - stop() ends every watch and destroys every socket, so a test process can exit.
// - Options are checked at construction (ConfigError naming the option): a NaN from a CLI flag would
//   otherwise grow the history without bound or send bookmarks in a tight loop.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { Socket } from 'node:net'
import { writeFileSync, rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from './store.ts'
import { Registry, type ResourceType, type ResourceTypeInput } from './resources.ts'
import { Objects } from './objects.ts'
import { GarbageCollector } from './gc.ts'
import { WatchHub } from './watch.ts'
import { Faults, prng, type FailRule, type DelayRule } from './faults.ts'
import { route } from './routes.ts'
import { apiGroup, apiGroupList, coreVersions, resourceList, versionInfo } from './discovery.ts'
import { openApiDocument, openApiIndex } from './openapi.ts'
import {
  StatusError,
  badRequest,
  methodNotAllowed,
  pathNotFound,
  toApiError,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
  serviceUnavailable,
} from './status.ts'
import { makeMatcher } from './selectors.ts'
import { checkDryRun, checkFieldValidation, checkListOptions, type OptionsKind } from './options.ts'
import { warningHeader } from './admission.ts'
import { installCrdAdmission } from './crd-admission.ts'
import { admitDelete, installWebhookAdmission, type WebhookSource } from './webhooks.ts'
import { NS_TYPE_KEY } from './namespaces.ts'
import { builtinDefaultsStep, ServiceAllocator } from './builtin-defaults.ts'
import { builtinValidationStep } from './builtin-validation.ts'
import { builtinPruneStep } from './builtin-openapi.ts'
import { scaleOf, writeScale } from './scale.ts'
import { toTable, wantsTable } from './table.ts'
import { drain, readJson } from './request-body.ts'
import type { Written } from './write-rules.ts'
import type { DeletionTiming } from './object-deletes.ts'
import { patchKindOf } from './patch.ts'
import { kubeconfigObject, kubeconfigYaml, type KubeconfigOptions } from './kubeconfig.ts'
import { generateTls, type TlsMaterial } from './tls.ts'
import type { ServiceResolver } from './webhook-client.ts'
import { then } from './conversion.ts'
import { ConfigError, TestServerError } from './errors.ts'

export interface TestServerOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number
  host?: string
  /** Bearer token clients must send; default a fixed random-looking token. `null` disables auth. */
  token?: string | null
  /** Seed for fault decisions, uids and generated names. */
  seed?: number
  /** Watch history kept for resumes (events); older resumes get 410 Expired. */
  historySize?: number
  bookmarkIntervalMs?: number
  /** Cluster/user/context name in the kubeconfig. */
  name?: string
  /** Write the kubeconfig here (default: a temporary file removed by stop()). */
  kubeconfigPath?: string
  /** Answer expired watch resumes with HTTP 410 instead of an ERROR event. */
  watchExpiredAsHttp410?: boolean
  /**
   * Serve HTTPS with a CA and a serving certificate generated at startup, in memory; the kubeconfig
   * carries the CA. Needed for kubectl/client-go, which never send a bearer token over plain HTTP.
   * Off by default for the library (client-node is fine with HTTP, and tests start many servers);
   * the CLI serves HTTPS unless `--insecure-http`.
   */
  tls?: boolean
  /** Kinds to register at start. */
  kinds?: ResourceTypeInput[]
  /**
   * Garbage collection by ownerReferences (default true): dependents whose owners are all gone are
   * deleted, Orphan and Foreground propagation are carried out. `false` behaves like envtest: nothing
   * is collected, and the `orphan`/`foregroundDeletion` finalizers stay until a client removes them.
   */
  gc?: boolean
  /**
   * How long the emulated namespace controller and kubelet take after a DELETE (ms): a deleted
   * namespace stays Terminating for `namespaceMs` (default 200) before it is emptied and removed; a
   * scheduled Pod deleted with a grace period stays Terminating for min(grace, `podMs`) (default 1000).
   * `control.finishDeletions()` fast-forwards both.
   */
  deletionTiming?: Partial<DeletionTiming>
  /**
   * Where a webhook's Service reference (`clientConfig.service`, admission and CRD conversion) is
   * reached: `(namespace, name, port) => 'https://127.0.0.1:8443'`, like kube-apiserver's
   * ServiceResolver; the reference's path is appended and the certificate must name
   * `<name>.<namespace>.svc`. Without it, calling a Service reference fails saying so.
   */
  serviceResolver?: ServiceResolver
  /** How long a CRD conversion webhook may take (default 30000 ms, kube-apiserver's). */
  conversionTimeoutMs?: number
}

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
}

export interface KindRef {
  apiVersion: string
  kind: string
}

export class TestServer {
  readonly store: Store
  readonly registry = new Registry()
  readonly objects: Objects
  readonly watches: WatchHub
  readonly faults: Faults
  readonly token: string | null
  private readonly log: RequestLogEntry[] = []
  private readonly sockets = new Set<Socket>()
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
    this.webhookSource = { store: this.store, namespaceLabels: (name) => this.store.get(NS_TYPE_KEY, '', name)?.metadata?.labels }
    if (opts.serviceResolver) this.webhookSource.resolveService = this.objects.conversion.resolveService = opts.serviceResolver
    if (opts.conversionTimeoutMs !== undefined) this.objects.conversion.timeoutMs = opts.conversionTimeoutMs
    installWebhookAdmission(this.objects.pipeline, this.webhookSource)
    // DELETEs (one object, each item of a deletecollection, the garbage collector's) are admitted in the request's version
    this.objects.admitDelete = (t, stored, dry) =>
      then(this.objects.conversion.toType(t, stored), (o) => admitDelete(this.webhookSource, t, o, dry))
    this.watches = new WatchHub(this.store, opts.bookmarkIntervalMs ?? 60_000)
    this.watches.expiredAsHttp410 = !!opts.watchExpiredAsHttp410
    this.faults = new Faults(seed)
    this.token = opts.token === undefined ? 'statewright-test-token' : opts.token
    for (const k of opts.kinds ?? []) this.registry.register(k)
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      this.objects.create(this.type('v1', 'Namespace'), '', { metadata: { name: ns } }, { manager: 'kube-apiserver' })
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
      if (fail) return this.sendError(res, failureError(fail))
      if (this.token !== null && token !== this.token && !/^\/(healthz|livez|readyz)$/.test(u.pathname))
        return this.sendError(res, unauthorized())
      this.handle(req, res, method, u.pathname, query, watch).catch((e) => this.sendError(res, toApiError(e)))
    }
    // A request given a `timeout` that it spent waiting (a held request) is not carried out: 504, as
    // kube-apiserver answers a request whose deadline passed in its queue.
    const deadline = !watch && query.timeout !== undefined ? parseDuration(query.timeout) : undefined
    if (delay > 0 && deadline !== undefined && delay >= deadline)
      setTimeout(() => {
        if (!req.socket.destroyed)
          this.sendError(res, new StatusError(504, 'Timeout', 'Timeout: request did not complete within the allotted timeout'))
      }, deadline)
    else if (delay > 0) setTimeout(go, delay)
    else go()
  }

  private sendJson(res: ServerResponse, code: number, body: string, headers: Record<string, string> = {}): void {
    if (res.headersSent || res.destroyed) {
      if (!res.writableEnded) res.end()
      return
    }
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers })
    res.end(body)
  }
  private sendError(res: ServerResponse, e: StatusError): void {
    this.sendJson(res, e.code, JSON.stringify(e.status), e.headers)
  }

  private async handle(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    path: string,
    q: Record<string, string>,
    watch: boolean,
  ): Promise<void> {
    const r = route(this.registry, path)
    const ok = (v: unknown, code = 200) => this.sendJson(res, code, typeof v === 'string' ? v : JSON.stringify(v))
    const written = (w: Written, code = 200) =>
      this.sendJson(res, code, JSON.stringify(w.object), w.warnings.length ? { Warning: w.warnings.map(warningHeader).join(', ') } : {})
    if (r.kind === 'unknown') {
      await drain(req)
      throw pathNotFound()
    }
    if (r.kind !== 'object') {
      await drain(req)
      if (method !== 'GET') throw methodNotAllowed()
      if (r.kind === 'discovery') {
        if (r.doc === 'health') return this.sendJson(res, 200, '"ok"')
        return ok(
          r.doc === 'version' ? versionInfo() : r.doc === 'api' ? coreVersions(`${this.host}:${this.port}`) : apiGroupList(this.registry),
        )
      }
      if (r.kind === 'openapi') {
        const doc = r.version === undefined ? openApiIndex(this.registry) : openApiDocument(this.registry, r.group ?? '', r.version)
        if (!doc) throw pathNotFound()
        return ok(doc)
      }
      const doc = r.kind === 'group' ? apiGroup(this.registry, r.group) : resourceList(this.registry, r.group, r.version)
      if (!doc) throw pathNotFound()
      return ok(doc)
    }
    const t = r.type
    const ns = r.namespace ?? ''
    if (t.namespaced && r.namespace === undefined && (r.name !== undefined || (method !== 'GET' && method !== 'DELETE'))) {
      await drain(req)
      throw pathNotFound()
    }
    const manager = q.fieldManager ?? defaultManager(req.headers['user-agent'])
    const dryRun = checkDryRun(OPTIONS_KIND[method] ?? 'ListOptions', q.dryRun)
    const allowedFields = t.selectableFields
    const fieldValidation = checkFieldValidation(q.fieldValidation)
    switch (method) {
      case 'GET': {
        await drain(req)
        const table = r.subresource === undefined && wantsTable(req.headers.accept)
        if (r.name !== undefined) {
          const obj = await this.objects.get(t, ns, r.name)
          if (table) return ok(toTable(t, [obj], obj.metadata.resourceVersion))
          return ok(r.subresource === 'scale' ? scaleOf(t, obj) : obj)
        }
        checkListOptions(q, watch)
        const matcher = makeMatcher(q.labelSelector, q.fieldSelector, allowedFields)
        if (watch) {
          const w: Parameters<WatchHub['serve']>[2] = {
            type: t,
            bookmarks: q.allowWatchBookmarks === 'true' || q.allowWatchBookmarks === '1',
          }
          if (r.namespace !== undefined) w.namespace = ns
          if (matcher) w.matcher = matcher
          if (q.resourceVersion !== undefined) w.resourceVersion = q.resourceVersion
          if (q.timeoutSeconds) w.timeoutSeconds = Number(q.timeoutSeconds)
          if (q.sendInitialEvents !== undefined) w.sendInitialEvents = q.sendInitialEvents === 'true' || q.sendInitialEvents === '1'
          // kubectl get -w asks for Tables: each event carries a one-row Table
          if (wantsTable(req.headers.accept)) w.transform = (obj) => toTable(t, [obj], obj.metadata.resourceVersion)
          if (t.crd) w.convert = (obj) => this.objects.conversion.toType(t, obj)
          this.watches.serve(req, res, w)
          return
        }
        const lo: Parameters<Objects['listJson']>[2] = { selected: !!matcher }
        if (matcher) lo.matcher = matcher
        if (q.limit) lo.limit = Math.max(0, Number(q.limit) | 0)
        if (q.continue) lo.continue = q.continue
        if (q.resourceVersion !== undefined) lo.resourceVersion = q.resourceVersion
        if (q.resourceVersionMatch) lo.resourceVersionMatch = q.resourceVersionMatch
        const list = await this.objects.listJson(t, r.namespace, lo)
        if (table) {
          const { metadata, items } = JSON.parse(list)
          const { resourceVersion, ...rest } = metadata
          return ok(toTable(t, items, resourceVersion, rest))
        }
        return ok(list)
      }
      case 'POST': {
        const body = await readJson(req)
        if (r.name !== undefined) throw methodNotAllowed()
        return written(await this.objects.create(t, ns, body, { manager, dryRun, fieldValidation }), 201)
      }
      case 'PUT': {
        const body = await readJson(req)
        if (r.name === undefined) throw methodNotAllowed()
        if (r.subresource === 'scale') return written(await writeScale(this.objects, t, ns, r.name, body, 'put', { manager, dryRun }))
        return written(
          await this.objects.update(t, ns, r.name, body, {
            manager,
            dryRun,
            fieldValidation,
            ...(r.subresource ? { subresource: r.subresource } : {}),
          }),
        )
      }
      case 'PATCH': {
        const contentType = req.headers['content-type'] ?? ''
        const kind = patchKindOf(contentType)
        const body = await readJson(req)
        if (r.name === undefined) throw methodNotAllowed()
        if (r.subresource === 'scale') {
          if (!kind) throw unsupportedMediaType(contentType)
          return written(await writeScale(this.objects, t, ns, r.name, body, kind, { manager, dryRun }))
        }
        const applyManager = kind === 'apply' ? (q.fieldManager ?? '__default__') : manager
        const existed = this.store.get(t.storageKey, t.namespaced ? ns : '', r.name) !== undefined
        const out = await this.objects.patch(t, ns, r.name, kind, body, {
          manager: applyManager,
          dryRun,
          fieldValidation,
          force: q.force === 'true',
          contentType,
          ...(r.subresource ? { subresource: r.subresource } : {}),
        })
        return written(out, kind === 'apply' && !existed ? 201 : 200)
      }
      case 'DELETE': {
        const body = await readJson(req, true)
        if (r.name === undefined)
          return ok(
            await this.objects.deleteCollection(t, r.namespace, makeMatcher(q.labelSelector, q.fieldSelector, allowedFields), dryRun),
          )
        const pre = { ...(body?.preconditions ?? {}) }
        const prop = body?.propagationPolicy ?? q.propagationPolicy
        const dry = dryRun || checkDryRun('DeleteOptions', Array.isArray(body?.dryRun) ? body.dryRun[0] : undefined)
        const graceRaw = body?.gracePeriodSeconds ?? q.gracePeriodSeconds
        const grace = graceRaw === undefined ? undefined : Number(graceRaw)
        const stored = this.store.get(t.storageKey, t.namespaced ? ns : '', r.name)
        if (stored) await this.objects.admitDelete?.(t, stored, dry)
        return ok(
          await this.objects.delete(t, ns, r.name, {
            preconditions: pre,
            dryRun: dry,
            ...(prop ? { propagationPolicy: prop } : {}),
            ...(grace !== undefined && Number.isFinite(grace) ? { gracePeriodSeconds: Math.max(0, grace) } : {}),
          }),
        )
      }
      default:
        await drain(req)
        throw methodNotAllowed()
    }
  }

  // ---------- control API ----------
  failRequests(rule: FailRule): () => void {
    return this.faults.failRequests(rule)
  }
  delayResponses(rule: DelayRule): () => void {
    return this.faults.delayResponses(rule)
  }
  kind(ref: KindRef | ResourceType): ResourceType {
    return 'storageKey' in ref ? ref : this.type(ref.apiVersion, ref.kind)
  }
}

/** The options kind a verb's query parameters are validated as (dryRun's 422 names it). */
const OPTIONS_KIND: Record<string, OptionsKind> = {
  POST: 'CreateOptions',
  PUT: 'UpdateOptions',
  PATCH: 'PatchOptions',
  DELETE: 'DeleteOptions',
}

function checkOptions(o: TestServerOptions): void {
  const bad = (what: string, v: unknown) => new ConfigError(`TestServer: ${what}, got ${String(v)}`)
  if (o.port !== undefined && !(Number.isInteger(o.port) && o.port >= 0 && o.port <= 65535))
    throw bad('port must be a whole number from 0 to 65535', o.port)
  if (o.historySize !== undefined && !(Number.isInteger(o.historySize) && o.historySize >= 0))
    throw bad('historySize must be a whole number of events, 0 or more', o.historySize)
  if (o.bookmarkIntervalMs !== undefined && !(o.bookmarkIntervalMs > 0 && Number.isFinite(o.bookmarkIntervalMs)))
    throw bad('bookmarkIntervalMs must be a positive number of ms', o.bookmarkIntervalMs)
  if (o.seed !== undefined && !Number.isFinite(o.seed)) throw bad('seed must be a finite number', o.seed)
  if (o.conversionTimeoutMs !== undefined && !(o.conversionTimeoutMs > 0 && Number.isFinite(o.conversionTimeoutMs)))
    throw bad('conversionTimeoutMs must be a positive number of ms', o.conversionTimeoutMs)
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

function defaultManager(ua: string | undefined): string {
  if (!ua) return 'unknown'
  return ua.split('/')[0]!.slice(0, 128) || 'unknown'
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
