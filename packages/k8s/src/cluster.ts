// A Cluster: one API server as seen from this process. It owns
// - the kubeconfig that names the server and authenticates requests (./kubeconfig.ts, read without
//   @kubernetes/client-node; or a user's own client-node KubeConfig),
// - one keep-alive agent shared by every request (no socket per request),
// - one rate limiter (the reconciler's RateLimiter: a `{ qps, burst }` token bucket with a bottleneck
//   queue) shared by every request to the cluster,
// - a pause shared by every request when the server answers 429/503 with Retry-After.
// Invariants: every request has a timeout (watches: a client-side deadline past their server-side
// timeoutSeconds); every failed request rejects with an ApiError naming the method, path and object;
// close() destroys the agent's sockets and stops the limiter so a process can exit; a fenced write
// (RequestOptions.fence, or the cluster's write fence for every request that is not a GET) is
// checked right before it is handed to the HTTP client and cut off at its term's end (./fence.ts).
// This file: the Cluster and how it sends; its options are ./cluster-options.ts, its errors
// ./api-error.ts.
import { ConfigError, TimeoutError } from './errors.ts'
import http from 'node:http'
import https from 'node:https'
import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { RateLimiter } from '@statewright/reconciler'
import { credentialsOf, type Credentials } from './credentials.ts'
import { Kubeconfig, type KubeconfigView } from './kubeconfig.ts'
import { checkFence, FencedError, FencedWrites, fencedTimeout, NOT_VALID, type WriteFence } from './fence.ts'
import { ApiError, apiErrorOf, transportError } from './api-error.ts'
import type { ClusterOptions, RequestOptions, RequestRecord } from './cluster-options.ts'
import { inSpan, rememberCause, validSpanContext, type SpanLike, type TracerLike } from '@statewright/statedb'

interface AuthSnapshot {
  headers: Record<string, string>
  at: number
}

const AUTH_TTL_MS = 10_000

export class Cluster {
  readonly name: string
  readonly kubeConfig: KubeconfigView
  private readonly credentials: Credentials
  readonly server: URL
  readonly limiter: RateLimiter | undefined
  readonly requestTimeoutMs: number
  private readonly agent: http.Agent
  private readonly isHttps: boolean
  private readonly maxRetryAfterAttempts: number
  private readonly userAgent: string
  private readonly responseListeners = new Set<(r: RequestRecord) => void>()
  private auth: AuthSnapshot | undefined
  private authPending: Promise<AuthSnapshot> | undefined
  private pausedUntil = 0
  private readonly signals = new WeakSet<AbortSignal>()
  private closed = false
  /** Counters for health and metrics (`fenced`: writes refused or cut off because their term was over). */
  readonly stats = { requests: 0, errors: 0, throttled: 0, fenced: 0 }
  /** The fence of every request that names none and is not a GET (setWriteFence). */
  private writeFence: ((o: RequestOptions) => WriteFence | null | undefined) | undefined
  /** Per-cluster cache used by gvk.ts (discovery). */
  readonly discoveryCache = new Map<string, Promise<any>>()

  private tracing: TracerLike | undefined

  constructor(opts: ClusterOptions = {}) {
    this.tracing = opts.tracer
    const kc: KubeconfigView =
      opts.kubeConfig ?? (opts.kubeconfig !== undefined ? Kubeconfig.fromString(opts.kubeconfig) : Kubeconfig.fromDefault())
    this.kubeConfig = kc
    this.credentials = credentialsOf(kc)
    const c = kc.getCurrentCluster()
    if (!c) throw new ConfigError('cluster: the kubeconfig has no current cluster')
    this.server = new URL(c.server)
    this.isHttps = this.server.protocol === 'https:'
    if (!this.isHttps && !c.skipTLSVerify) {
      throw new ConfigError(`cluster: ${c.server} is plain HTTP: the kubeconfig's cluster must set insecure-skip-tls-verify`)
    }
    this.name = opts.name ?? (kc.getCurrentContext() || c.name)
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30_000
    this.maxRetryAfterAttempts = opts.maxRetryAfterAttempts ?? 10
    this.userAgent = opts.userAgent ?? 'statewright/0.1'
    if (opts.onResponse) this.responseListeners.add(opts.onResponse)
    const maxSockets = opts.maxSockets ?? 64
    if (this.isHttps) {
      // TLS material comes from the kubeconfig (files and inline data).
      const tls = this.credentials.tls()
      this.agent = new https.Agent({
        keepAlive: true,
        maxSockets,
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        pfx: tls.pfx,
        passphrase: tls.passphrase,
        rejectUnauthorized: c.skipTLSVerify ? false : (tls.rejectUnauthorized ?? true),
        servername: c.tlsServerName,
      })
    } else {
      this.agent = new http.Agent({ keepAlive: true, maxSockets })
    }
    const qps = opts.qps ?? 100
    if (qps > 0 && Number.isFinite(qps)) this.limiter = new RateLimiter({ qps, burst: Math.max(1, Math.round(opts.burst ?? qps * 2)) })
  }

  /** Authentication headers from the kubeconfig (tokens, exec plugins), cached briefly. */
  private async authHeaders(): Promise<Record<string, string>> {
    const now = Date.now()
    if (this.auth && now - this.auth.at < AUTH_TTL_MS) return this.auth.headers
    if (!this.authPending) {
      this.authPending = (async () => {
        const headers = await this.credentials.headers()
        const snap = { headers, at: Date.now() }
        this.auth = snap
        return snap
      })().finally(() => {
        this.authPending = undefined
      })
    }
    return (await this.authPending).headers
  }

  /** Waits for a limiter token and for any shared Retry-After pause. */
  private async admit(signal?: AbortSignal): Promise<void> {
    // One operation's signal is shared by many concurrent requests (a batch): no leak warning.
    if (signal && !this.signals.has(signal)) {
      this.signals.add(signal)
      setMaxListeners(0, signal)
    }
    if (this.closed) throw new ApiError(`cluster ${this.name}: closed`, 0, 'ClusterClosed')
    if (this.limiter) await this.limiter.take()
    for (;;) {
      const wait = this.pausedUntil - Date.now()
      if (wait <= 0) return
      await sleep(wait, undefined, { signal })
    }
  }

  private url(path: string, query?: RequestOptions['query']): URL {
    const u = new URL(this.server.href.replace(/\/$/, '') + path)
    if (query) for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v))
    return u
  }

  /**
   * Sends a request and returns the parsed JSON body. Retries 429 (and 5xx with Retry-After) up to
   * maxRetryAfterAttempts times, honouring Retry-After for every request to this cluster. Other failures
   * reject with an ApiError.
   */
  async request<T = any>(o: RequestOptions): Promise<T> {
    if (!this.tracing) {
      const text = await this.requestTextOf(o, undefined)
      return (text.length ? JSON.parse(text) : undefined) as T
    }
    return inSpan(this.tracing, 'k8s.request', async (span) => {
      const text = await this.requestTextOf(o, span)
      const answer = text.length ? JSON.parse(text) : undefined
      // the answer's cause is this request: a run that reads it (our own write, in the tables) links here
      rememberCause(answer, validSpanContext(span))
      return answer as T
    })
  }

  /** Like request, but resolves with the body as text (for callers that parse it themselves). */
  requestText(o: RequestOptions): Promise<string> {
    if (!this.tracing) return this.requestTextOf(o, undefined)
    return inSpan(this.tracing, 'k8s.request', (span) => this.requestTextOf(o, span))
  }

  /** The tracer of this cluster's requests, watch events and writes, or undefined. */
  get tracer(): TracerLike | undefined {
    return this.tracing
  }

  /**
   * Traces this cluster's requests (ClusterOptions.tracer), or stops (undefined); a tracer set
   * already is kept (the first Manager to set one wins).
   */
  setTracer(tracer: TracerLike | undefined): void {
    if (tracer === undefined || this.tracing === undefined) this.tracing = tracer
  }

  private async requestTextOf(o: RequestOptions, span: SpanLike | undefined): Promise<string> {
    let traceparent: string | undefined
    if (span?.isRecording()) {
      const method = o.method ?? 'GET'
      span.setAttribute('http.request.method', method)
      span.setAttribute('url.path', o.path)
      span.setAttribute('k8s.request', `${method} ${o.path}`)
      if (o.what) span.setAttribute('statewright.what', o.what)
      // a recording span only: the API's no-op tracer has the invalid (all-zero) context
      const sc = validSpanContext(span)
      if (sc) traceparent = `00-${sc.traceId}-${sc.spanId}-01`
    }
    for (let attempt = 0; ; attempt++) {
      await this.admit(o.signal)
      try {
        const { status, headers, body } = await this.send(o, traceparent)
        span?.setAttribute('http.response.status_code', status)
        if (status >= 200 && status < 300) return body.toString('utf8')
        const err = apiErrorOf(o, status, headers, body)
        if (err.retryAfterMs !== undefined && (status === 429 || status >= 500) && attempt < this.maxRetryAfterAttempts) {
          this.stats.throttled++
          this.pauseFor(err.retryAfterMs)
          continue
        }
        throw err
      } catch (err) {
        this.stats.errors++
        throw err
      }
    }
  }

  /**
   * Fences every write that names no fence of its own (`fence` undefined; GETs are never fenced):
   * `fence(o)` is asked right before each such request is sent. A leader-elected Manager sets its
   * term here, so every write of its parts and of your code through this cluster stops with the
   * term. Returns a function that removes it.
   */
  setWriteFence(fence: (o: RequestOptions) => WriteFence | null | undefined): () => void {
    this.writeFence = fence
    return () => {
      if (this.writeFence === fence) this.writeFence = undefined
    }
  }

  /** Everyone waits until `ms` from now before sending anything (a 429 is about the whole client). */
  pauseFor(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms)
  }

  /** Opens a streaming GET (a watch). Resolves with the response once headers arrived with 2xx. */
  async stream(o: RequestOptions & { deadlineMs: number }): Promise<http.IncomingMessage> {
    await this.admit(o.signal)
    const headers = await this.authHeaders()
    const u = this.url(o.path, o.query)
    return new Promise((resolve, reject) => {
      const req = (this.isHttps ? https : http).request(u, {
        method: 'GET',
        agent: this.agent,
        headers: { ...headers, Accept: 'application/json', 'User-Agent': this.userAgent },
        signal: o.signal,
      })
      this.stats.requests++
      const started = performance.now()
      const record = (code: number) => this.record('GET', code, started, true)
      const deadline = setTimeout(
        () => req.destroy(new ApiError(`watch ${u.pathname}: no end after ${o.deadlineMs} ms`, 0, 'Timeout')),
        o.deadlineMs,
      )
      deadline.unref()
      req.on('close', () => clearTimeout(deadline))
      req.on('error', (e) => {
        clearTimeout(deadline)
        this.stats.errors++
        record(0)
        reject(transportError('GET', u.pathname, o.what, e))
      })
      req.on('response', (res) => {
        const status = res.statusCode ?? 0
        record(status)
        if (status >= 200 && status < 300) {
          resolve(res)
          return
        }
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', (e) => reject(transportError('GET', u.pathname, o.what, e)))
        res.on('end', () => {
          this.stats.errors++
          const err = apiErrorOf({ ...o, method: 'GET' }, status, res.headers, Buffer.concat(chunks))
          if (err.retryAfterMs !== undefined && status === 429) this.pauseFor(err.retryAfterMs)
          reject(err)
        })
      })
      req.end()
    })
  }

  private async send(
    o: RequestOptions,
    traceparent?: string,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
    const auth = await this.authHeaders()
    const u = this.url(o.path, o.query)
    const method = o.method ?? 'GET'
    // The last moment before the request is handed to the HTTP client: nothing is awaited from here on.
    const fence = (o.fence !== undefined ? o.fence : method === 'GET' ? undefined : this.writeFence?.(o)) ?? undefined
    if (fence && !fence.valid()) {
      this.stats.fenced++
      checkFence(NOT_VALID, `${o.what ? `${o.what}: ` : ''}${method} ${u.pathname}`, fence)
    }
    const payload = o.body === undefined ? undefined : Buffer.from(typeof o.body === 'string' ? o.body : JSON.stringify(o.body))
    const headers: Record<string, string | number> = { ...auth, Accept: 'application/json', 'User-Agent': this.userAgent }
    if (traceparent) headers.traceparent = traceparent
    if (payload) {
      headers['Content-Type'] = o.contentType ?? 'application/json'
      headers['Content-Length'] = payload.length
    }
    this.stats.requests++
    const started = performance.now()
    const requestedMs = o.timeoutMs ?? this.requestTimeoutMs
    const timeoutMs = fence ? fencedTimeout(fence, requestedMs) : requestedMs
    const cutAtTerm = fence !== undefined && timeoutMs < requestedMs // the timer is the term's deadline
    // The server keeps the deadline too (kube-apiserver's `timeout` parameter): a write it holds (a
    // busy server, a queue) past the term is not carried out, even if this process is too starved
    // to cut the request off itself.
    if (fence) u.searchParams.set('timeout', `${timeoutMs}ms`)
    const signal = fence ? (o.signal ? AbortSignal.any([o.signal, fence.signal]) : fence.signal) : o.signal
    const sent = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const req = (this.isHttps ? https : http).request(u, { method, agent: this.agent, headers, signal })
      const timer = setTimeout(
        () =>
          req.destroy(
            cutAtTerm
              ? new FencedError(`${method} ${u.pathname}: cut off at the end of the term of lease ${fence.lease} (${fence.transitions})`)
              : new TimeoutError(`no answer after ${timeoutMs} ms`),
          ),
        timeoutMs,
      )
      timer.unref()
      req.on('error', (e) => {
        clearTimeout(timer)
        this.record(method, 0, started, false)
        if (fence && (e instanceof FencedError || (fence.signal.aborted && !o.signal?.aborted))) {
          this.stats.fenced++
          reject(
            e instanceof FencedError
              ? e
              : new FencedError(
                  `${o.what ? `${o.what}: ` : ''}${method} ${u.pathname}: cut off: the term of lease ${fence.lease} (${fence.transitions}) ended`,
                ),
          )
          return
        }
        reject(transportError(method, u.pathname, o.what, e))
      })
      req.on('response', (res) => {
        this.record(method, res.statusCode ?? 0, started, false)
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', (e) => {
          clearTimeout(timer)
          reject(transportError(method, u.pathname, o.what, e))
        })
        res.on('end', () => {
          clearTimeout(timer)
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })
        })
      })
      req.end(payload)
    })
    return this.onTheWire.track(fence, sent)
  }

  /** Fenced requests on the wire, by their fence (see settled). */
  private readonly onTheWire = new FencedWrites()

  /**
   * Resolves once every request sent under `fence` has been answered or cut off (each is bounded by
   * its term's deadline). A term given up on purpose is closed to new writes, then waits here, so
   * that no write it sent lands after its Lease is released.
   */
  settled(fence: WriteFence): Promise<void> {
    return this.onTheWire.settled(fence)
  }

  /** Calls fn when each request is answered (REST client metrics). Returns the unsubscribe function. */
  onResponse(fn: (r: RequestRecord) => void): () => void {
    this.responseListeners.add(fn)
    return () => {
      this.responseListeners.delete(fn)
    }
  }

  private record(method: string, code: number, started: number, watch: boolean): void {
    if (this.responseListeners.size === 0) return
    const r: RequestRecord = { method, code, host: this.server.host, seconds: (performance.now() - started) / 1000, watch }
    for (const fn of this.responseListeners) {
      try {
        fn(r)
      } catch {
        // a metrics hook must never break a request
      }
    }
  }

  /** Stops the limiter and destroys every socket. Requests after close() fail. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.agent.destroy()
    if (this.limiter) await this.limiter.stop()
  }
}
