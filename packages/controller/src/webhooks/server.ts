// Admission webhooks served by the Manager, as controller-runtime's webhook server serves them: HTTPS
// (a certificate from a directory, as cert-manager mounts a Secret: tls.crt and tls.key, read again
// when they change; or given in memory), one path per webhook ("/validate-<group>-<version>-<kind>",
// "/mutate-..."), AdmissionReview v1 in and out; and /convert, the CRD conversion webhook of the kinds
// given whose versions convert (conversion.ts).
// Invariants:
// - A validate function's message (or messages) is a denial (403 Forbidden, the messages joined);
//   nothing returned is an admission; warnings go back as the response's warnings.
// - A mutate function returns the object it wants stored; the response is the JSON Patch from the
//   object sent to that one (fast-json-patch's compare), none when equal.
// - A function that throws answers allowed=false with 500 and the error (the API server then refuses
//   the write, naming the webhook); a request that is not an AdmissionReview answers 400. Nothing a
//   request does stops the server.
// - TLS only: no plain-HTTP listener exists.
// - fast-json-patch is loaded at the first mutation, not at import: an operator with validating
//   webhooks only (most) never loads it, and none pays for it on its cold start.
// - A body over the limit (3 MiB for an AdmissionReview, the API server's object limit;
//   maxConversionReviewBytes for a ConversionReview, which holds a list's objects) is a 413.
import { createServer, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { X509Certificate } from 'node:crypto'
import type { KindRef, KubeObject } from '@statewright/k8s'
import { ConfigError } from '../errors.ts'
import { closeServer } from '../http.ts'
import type { Logger } from '@statewright/statedb'
import { CONVERT_PATH, ConversionWebhook, webhookConversionOf } from './conversion.ts'

export interface AdmissionContext<T> {
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT'
  /** The stored object an UPDATE replaces. */
  oldObject: T | undefined
  dryRun: boolean
  /** Add a warning for the client (`Warning` headers, kubectl prints them). */
  warn(text: string): void
}

export interface WebhookOptions<T extends object = KubeObject> {
  /**
   * The kind it admits (its group, version and kind name the path). A custom kind whose versions
   * convert (customKind(...).withVersion) is also converted at /convert, with or without validate and mutate.
   */
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
  /**
   * The certificate and key in memory (tests), instead of certDir; caPem, the CA that signed it, is
   * the caBundle of the CRDs installCrds installs with a conversion webhook (with certDir: its ca.crt).
   */
  cert?: { certPem: string; keyPem: string; caPem?: string }
  /**
   * The base URL the API server calls this server at, for the CRDs installCrds installs with a
   * conversion webhook (development: e.g. "https://host.docker.internal:9443"); default: the address it listens on.
   */
  url?: string
  /** The largest ConversionReview accepted (default 64 MiB: a list's objects come in one review). */
  maxConversionReviewBytes?: number
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
  /** The kinds converted at /convert. */
  readonly conversions = new ConversionWebhook()

  constructor(
    private readonly options: WebhookServerOptions,
    private readonly log: Logger,
  ) {}

  /** Registers a webhook's paths; returns them. */
  add<T extends object>(o: WebhookOptions<T>): string[] {
    const conversion = webhookConversionOf(o.for)
    if (!o.validate && !o.mutate && !conversion)
      throw new ConfigError(`webhook for ${o.for?.kind}: give validate, mutate or both (or a custom kind whose versions convert)`)
    const paths: string[] = []
    if (conversion) {
      this.conversions.add(conversion)
      paths.push(CONVERT_PATH)
    }
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
    return this.hooks.size + this.conversions.size
  }

  /**
   * `crd` as installCrds installs it: with a conversion webhook (strategy Webhook) and no clientConfig,
   * pointed at this server's /convert (`url` option, else `listenUrl`) with the CA as caBundle; a
   * ConfigError when this server does not convert its kind (the API server could not read it).
   */
  installable(crd: KubeObject, listenUrl: string | undefined): KubeObject {
    const spec = crd.spec as { group?: string; names?: { kind?: string }; conversion?: { strategy?: string; webhook?: any } } | undefined
    if (spec?.conversion?.strategy !== 'Webhook' || spec.conversion.webhook?.clientConfig) return crd
    const name = String(crd.metadata.name)
    const base = this.options.url ?? listenUrl
    if (!this.conversions.get(spec.group ?? '', spec.names?.kind ?? '') || !base)
      throw new ConfigError(
        `installCrds: CustomResourceDefinition ${name} converts through a webhook, but this Manager does not serve /convert for ${spec.names?.kind}: add m.webhook({ for: ${spec.names?.kind} }) and the webhooks option`,
      )
    const ca = this.caPem()
    const clientConfig = {
      url: `${base.replace(/\/$/, '')}${CONVERT_PATH}`,
      ...(ca ? { caBundle: Buffer.from(ca).toString('base64') } : {}),
    }
    return { ...crd, spec: { ...spec, conversion: { ...spec.conversion, webhook: { ...spec.conversion.webhook, clientConfig } } } }
  }

  private caPem(): string | undefined {
    if (this.options.cert) return this.options.cert.caPem
    try {
      return readFileSync(join(this.options.certDir ?? '/tmp/k8s-webhook-server/serving-certs', 'ca.crt'), 'utf8')
    } catch {
      return undefined
    }
  }

  /** Listens over TLS; a missing certificate or a port in use is a ConfigError that says so. */
  async listen(): Promise<string> {
    const port = this.options.port ?? 9443
    const host = this.options.host ?? '0.0.0.0'
    const cert = this.certificate()
    const server = createServer({ ...cert, minVersion: 'TLSv1.2' }, (req, res) => void this.handle(req, res))
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
    const h = advertisedHost(a.address, cert.cert)
    return `https://${h.includes(':') ? `[${h}]` : h}:${a.port}`
  }

  async close(): Promise<void> {
    const s = this.server
    this.server = undefined
    await closeServer(s)
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
      const converts = path === CONVERT_PATH && this.conversions.size > 0
      const paths = [...this.hooks.keys(), ...(this.conversions.size ? [CONVERT_PATH] : [])]
      if (req.method !== 'POST' || (!hook && !converts)) return send(404, { error: 'not found', paths })
      const limit = converts ? (this.options.maxConversionReviewBytes ?? 64 * 1024 * 1024) : 3 * 1024 * 1024
      const chunks: Buffer[] = []
      let size = 0
      for await (const c of req as AsyncIterable<Buffer>) {
        size += c.length
        if (size > limit) {
          res.setHeader('connection', 'close') // the rest of the body is not read
          return send(413, { error: `a ${converts ? 'ConversionReview' : 'AdmissionReview'} is at most ${limit} bytes` })
        }
        chunks.push(c)
      }
      let review: any
      try {
        review = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        return send(400, { error: 'the body is not JSON' })
      }
      if (converts) {
        const a = this.conversions.review(review)
        const result = (a.body.response as { result?: { status?: string; message?: string } } | undefined)?.result
        if (result?.status === 'Failure') this.log.warn({ path, message: result.message }, 'conversion failed')
        return send(a.code, a.body)
      }
      if (!hook) return send(404, { error: 'not found', paths })
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
      const ops = out === undefined || out === null ? [] : (await jsonPatch()).compare(obj, out as object)
      if (ops.length === 0) return answer({ allowed: true })
      return answer({ allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') })
    } catch (err) {
      this.log.error({ err }, 'webhook request failed')
      if (!res.headersSent) send(500, { error: 'internal error' })
      else res.destroy()
    }
  }
}

let jsonPatchModule: Promise<typeof import('fast-json-patch')> | undefined
/** fast-json-patch, imported once, at the first mutation. */
function jsonPatch(): Promise<typeof import('fast-json-patch')> {
  jsonPatchModule ??= import('fast-json-patch').then((m) => (m as { default?: typeof import('fast-json-patch') }).default ?? m)
  return jsonPatchModule
}

/**
 * The host the server's URL names: the address it is bound to, or, bound to every address (0.0.0.0,
 * ::), a name its certificate holds (the loopback IP or localhost first), so that a client checking
 * the certificate (the API server calling /convert) can reach it by that name.
 */
export function advertisedHost(bound: string, certPem: string): string {
  if (bound !== '0.0.0.0' && bound !== '::') return bound
  let sans: string[] = []
  try {
    sans = (new X509Certificate(certPem).subjectAltName ?? '').split(/,\s*/).filter(Boolean)
  } catch {}
  const ips = sans.filter((x) => x.startsWith('IP Address:')).map((x) => x.slice('IP Address:'.length))
  const dns = sans.filter((x) => x.startsWith('DNS:')).map((x) => x.slice('DNS:'.length))
  if (ips.includes('127.0.0.1')) return '127.0.0.1'
  if (dns.includes('localhost')) return 'localhost'
  return ips[0] ?? dns.find((d) => !d.includes('*')) ?? '127.0.0.1'
}
