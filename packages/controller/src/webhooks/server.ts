// Admission webhooks served by the Manager, as controller-runtime's webhook server serves them: HTTPS
// (a certificate from a directory, as cert-manager mounts a Secret: tls.crt and tls.key, read again
// when they change; or given in memory), one path per webhook ("/validate-<group>-<version>-<kind>",
// "/mutate-..."), AdmissionReview v1 in and out.
// Invariants:
// - A validate function's message (or messages) is a denial (403 Forbidden, the messages joined);
//   nothing returned is an admission; warnings go back as the response's warnings.
// - A mutate function returns the object it wants stored; the response is the JSON Patch from the
//   object sent to that one (fast-json-patch's compare), none when equal.
// - A function that throws answers allowed=false with 500 and the error (the API server then refuses
//   the write, naming the webhook); a request that is not an AdmissionReview answers 400. Nothing a
//   request does stops the server.
// - TLS only: no plain-HTTP listener exists.
import { createServer, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import jsonpatch from 'fast-json-patch'
import type { KindRef, KubeObject } from '@statewright/k8s'
import { ConfigError } from '../errors.ts'
import type { Logger } from '../logging.ts'

export interface AdmissionContext<T> {
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT'
  /** The stored object an UPDATE replaces. */
  oldObject: T | undefined
  dryRun: boolean
  /** Add a warning for the client (`Warning` headers, kubectl prints them). */
  warn(text: string): void
}

export interface WebhookOptions<T extends object = KubeObject> {
  /** The kind it admits (its group, version and kind name the path). */
  for: KindRef<T>
  /** A message (or messages) refuses the object; nothing admits it. */
  validate?: (obj: T, ctx: AdmissionContext<T>) => string | readonly string[] | undefined | void
  /** The object to store instead (a changed copy); nothing or the same object: unchanged. */
  mutate?: (obj: T, ctx: AdmissionContext<T>) => T | undefined | void
}

export interface WebhookServerOptions {
  /** Port (default 9443, controller-runtime's). 0 picks a free one. */
  port?: number
  /** Bind address (default 0.0.0.0: the API server calls it through a Service). */
  host?: string
  /** Directory with tls.crt and tls.key (default /tmp/k8s-webhook-server/serving-certs, controller-runtime's). */
  certDir?: string
  /** The certificate and key in memory (tests), instead of certDir. */
  cert?: { certPem: string; keyPem: string }
}

/** A webhook's path, controller-runtime's way: /validate-backup-example-com-v1-backup. */
export function webhookPath(kind: KindRef<any>, what: 'validate' | 'mutate'): string {
  const [group, version] = kind.apiVersion.includes('/') ? kind.apiVersion.split('/') : ['core', kind.apiVersion]
  return `/${what}-${group!.replace(/\./g, '-')}-${version}-${kind.kind.toLowerCase()}`
}

export class WebhookServer {
  private server: Server | undefined
  private readonly hooks = new Map<
    string,
    { kind: string; what: 'validate' | 'mutate'; fn: (obj: any, ctx: AdmissionContext<any>) => unknown }
  >()
  private certStamp = ''

  constructor(
    private readonly options: WebhookServerOptions,
    private readonly log: Logger,
  ) {}

  /** Registers a webhook's paths; returns them. */
  add<T extends object>(o: WebhookOptions<T>): string[] {
    if (!o.validate && !o.mutate) throw new ConfigError(`webhook for ${o.for.kind}: give validate, mutate or both`)
    const paths: string[] = []
    for (const what of ['validate', 'mutate'] as const) {
      const fn = o[what]
      if (!fn) continue
      const path = webhookPath(o.for, what)
      if (this.hooks.has(path)) throw new ConfigError(`webhook for ${o.for.kind}: ${path} is registered twice`)
      this.hooks.set(path, { kind: o.for.kind, what, fn: fn as never })
      paths.push(path)
    }
    return paths
  }

  get size(): number {
    return this.hooks.size
  }

  /** Listens over TLS; a missing certificate or a port in use is a ConfigError that says so. */
  async listen(): Promise<string> {
    const port = this.options.port ?? 9443
    const host = this.options.host ?? '0.0.0.0'
    const server = createServer({ ...this.certificate(), minVersion: 'TLSv1.2' }, (req, res) => void this.handle(req, res))
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(
          new ConfigError(
            `webhook server: cannot listen on ${host}:${port}: ${e.code === 'EADDRINUSE' ? 'the port is in use' : e.message}`,
          ),
        ),
      )
      server.listen(port, host, () => resolve())
    })
    this.server = server
    // cert-manager renews the Secret in place: take the new pair for the next connections
    const dir = this.options.certDir
    if (!this.options.cert && dir) {
      const timer = setInterval(() => {
        const stamp = this.stamp()
        if (stamp !== this.certStamp) {
          try {
            server.setSecureContext(this.certificate())
            this.log.info({ certDir: dir }, 'webhook certificate reloaded')
          } catch (err) {
            this.log.warn({ err, certDir: dir }, 'webhook certificate could not be reloaded; keeping the old one')
          }
        }
      }, 10_000)
      timer.unref()
      server.once('close', () => clearInterval(timer))
    }
    const a = server.address() as AddressInfo
    return `https://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`
  }

  async close(): Promise<void> {
    const s = this.server
    this.server = undefined
    if (!s) return
    s.closeAllConnections()
    await new Promise<void>((resolve) => s.close(() => resolve()))
  }

  private stamp(): string {
    const dir = this.options.certDir ?? '/tmp/k8s-webhook-server/serving-certs'
    try {
      return ['tls.crt', 'tls.key'].map((f) => statSync(join(dir, f)).mtimeMs).join()
    } catch {
      return ''
    }
  }

  private certificate(): { cert: string; key: string } {
    if (this.options.cert) return { cert: this.options.cert.certPem, key: this.options.cert.keyPem }
    const dir = this.options.certDir ?? '/tmp/k8s-webhook-server/serving-certs'
    try {
      this.certStamp = this.stamp()
      return { cert: readFileSync(join(dir, 'tls.crt'), 'utf8'), key: readFileSync(join(dir, 'tls.key'), 'utf8') }
    } catch (err) {
      throw new ConfigError(
        `webhook server: no certificate in ${dir} (tls.crt and tls.key, as cert-manager's Secret mounts them): ${(err as Error).message}`,
      )
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (code: number, body: unknown) => {
      const json = JSON.stringify(body)
      res.writeHead(code, { 'content-type': 'application/json' })
      res.end(json)
    }
    try {
      const path = (req.url ?? '/').split('?')[0]!
      const hook = this.hooks.get(path)
      if (req.method !== 'POST' || !hook) return send(404, { error: 'not found', paths: [...this.hooks.keys()] })
      const chunks: Buffer[] = []
      let size = 0
      for await (const c of req as AsyncIterable<Buffer>) {
        size += c.length
        if (size > 3 * 1024 * 1024) return send(413, { error: 'an AdmissionReview is at most 3 MiB' })
        chunks.push(c)
      }
      let review: any
      try {
        review = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        return send(400, { error: 'the body is not JSON' })
      }
      const r = review?.request
      if (review?.kind !== 'AdmissionReview' || typeof r?.uid !== 'string')
        return send(400, { error: 'not an AdmissionReview with a request.uid' })
      const warnings: string[] = []
      const ctx: AdmissionContext<any> = {
        operation: r.operation,
        oldObject: r.oldObject ?? undefined,
        dryRun: !!r.dryRun,
        warn: (t) => void warnings.push(String(t)),
      }
      const obj = r.object ?? r.oldObject
      const answer = (response: Record<string, unknown>) =>
        send(200, {
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: r.uid, ...response, ...(warnings.length ? { warnings } : {}) },
        })
      const what = `${hook.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name ?? ''}`
      let out: unknown
      try {
        out = hook.fn(hook.what === 'mutate' ? structuredClone(obj) : obj, ctx)
      } catch (err) {
        this.log.warn({ err, path, object: what }, 'webhook failed')
        return answer({ allowed: false, status: { code: 500, reason: 'InternalError', message: (err as Error)?.message ?? String(err) } })
      }
      if (hook.what === 'validate') {
        const msgs = out === undefined || out === null ? [] : Array.isArray(out) ? out.map(String) : [String(out)]
        if (msgs.length === 0) return answer({ allowed: true })
        return answer({ allowed: false, status: { code: 403, reason: 'Forbidden', message: msgs.join('; ') } })
      }
      const ops = out === undefined || out === null ? [] : jsonpatch.compare(obj, out as object)
      if (ops.length === 0) return answer({ allowed: true })
      return answer({ allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') })
    } catch (err) {
      this.log.error({ err }, 'webhook request failed')
      if (!res.headersSent) send(500, { error: 'internal error' })
      else res.destroy()
    }
  }
}
