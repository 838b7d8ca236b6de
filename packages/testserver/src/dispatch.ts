// What the server does with a request once it is let in: the route (routes.ts) decides what a path
// names, and each verb on an object path is carried out on the objects (objects.ts) or the watches
// (watch.ts); discovery and OpenAPI documents are answered read-only.
// Invariants:
// - Every response is JSON with Content-Type application/json; errors are Status objects.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Store } from './store.ts'
import type { Registry } from './resources.ts'
import type { Objects } from './objects.ts'
import type { WatchHub } from './watch.ts'
import { route } from './routes.ts'
import { apiGroup, apiGroupList, coreVersions, resourceList, versionInfo } from './discovery.ts'
import { openApiDocument, openApiIndex } from './openapi.ts'
import { methodNotAllowed, pathNotFound, unsupportedMediaType, type StatusError } from './status.ts'
import { makeMatcher } from './selectors.ts'
import { checkDryRun, checkFieldValidation, checkListOptions, type OptionsKind } from './options.ts'
import { warningHeader } from './admission.ts'
import { scaleOf, writeScale } from './scale.ts'
import { toTable, wantsTable } from './table.ts'
import { drain, readJson } from './request-body.ts'
import type { Written } from './write-rules.ts'
import { patchKindOf } from './patch.ts'

/** What a request's handler reads and writes. */
export interface DispatchContext {
  readonly registry: Registry
  readonly store: Store
  readonly objects: Objects
  readonly watches: WatchHub
  /** host:port the server is reached at (the core API versions document names it). */
  address(): string
}

export function sendJson(res: ServerResponse, code: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) {
    if (!res.writableEnded) res.end()
    return
  }
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers })
  res.end(body)
}
export function sendError(res: ServerResponse, e: StatusError): void {
  sendJson(res, e.code, JSON.stringify(e.status), e.headers)
}

/** Carries out one request the server let in (authenticated, past its faults). */
export async function dispatch(
  c: DispatchContext,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  path: string,
  q: Record<string, string>,
  watch: boolean,
): Promise<void> {
  const r = route(c.registry, path)
  const ok = (v: unknown, code = 200) => sendJson(res, code, typeof v === 'string' ? v : JSON.stringify(v))
  // a deprecated version warns on every response (deprecation.ts); a write's own warnings follow it
  const deprecation = r.kind === 'object' ? r.type.deprecationWarning : undefined
  if (deprecation !== undefined) res.setHeader('Warning', warningHeader(deprecation))
  const written = (w: Written, code = 200) => {
    const warnings = deprecation !== undefined ? [deprecation, ...w.warnings] : w.warnings
    sendJson(res, code, JSON.stringify(w.object), warnings.length ? { Warning: warnings.map(warningHeader).join(', ') } : {})
  }
  if (r.kind === 'unknown') {
    await drain(req)
    throw pathNotFound()
  }
  if (r.kind !== 'object') {
    await drain(req)
    if (method !== 'GET') throw methodNotAllowed()
    if (r.kind === 'discovery') {
      if (r.doc === 'health') return sendJson(res, 200, '"ok"')
      return ok(r.doc === 'version' ? versionInfo() : r.doc === 'api' ? coreVersions(c.address()) : apiGroupList(c.registry))
    }
    if (r.kind === 'openapi') {
      const doc = r.version === undefined ? openApiIndex(c.registry) : openApiDocument(c.registry, r.group ?? '', r.version)
      if (!doc) throw pathNotFound()
      return ok(doc)
    }
    const doc = r.kind === 'group' ? apiGroup(c.registry, r.group) : resourceList(c.registry, r.group, r.version)
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
        const obj = await c.objects.get(t, ns, r.name)
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
        if (t.crd) w.convert = (obj) => c.objects.conversion.toType(t, obj)
        c.watches.serve(req, res, w)
        return
      }
      const lo: Parameters<Objects['listJson']>[2] = { selected: !!matcher }
      if (matcher) lo.matcher = matcher
      if (q.limit) lo.limit = Math.max(0, Number(q.limit) | 0)
      if (q.continue) lo.continue = q.continue
      if (q.resourceVersion !== undefined) lo.resourceVersion = q.resourceVersion
      if (q.resourceVersionMatch) lo.resourceVersionMatch = q.resourceVersionMatch
      const list = await c.objects.listJson(t, r.namespace, lo)
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
      return written(await c.objects.create(t, ns, body, { manager, dryRun, fieldValidation }), 201)
    }
    case 'PUT': {
      const body = await readJson(req)
      if (r.name === undefined) throw methodNotAllowed()
      if (r.subresource === 'scale') return written(await writeScale(c.objects, t, ns, r.name, body, 'put', { manager, dryRun }))
      return written(
        await c.objects.update(t, ns, r.name, body, {
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
        return written(await writeScale(c.objects, t, ns, r.name, body, kind, { manager, dryRun }))
      }
      const applyManager = kind === 'apply' ? (q.fieldManager ?? '__default__') : manager
      const existed = c.store.get(t.storageKey, t.namespaced ? ns : '', r.name) !== undefined
      const out = await c.objects.patch(t, ns, r.name, kind, body, {
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
        return ok(await c.objects.deleteCollection(t, r.namespace, makeMatcher(q.labelSelector, q.fieldSelector, allowedFields), dryRun))
      const pre = { ...(body?.preconditions ?? {}) }
      const prop = body?.propagationPolicy ?? q.propagationPolicy
      const dry = dryRun || checkDryRun('DeleteOptions', Array.isArray(body?.dryRun) ? body.dryRun[0] : undefined)
      const graceRaw = body?.gracePeriodSeconds ?? q.gracePeriodSeconds
      const grace = graceRaw === undefined ? undefined : Number(graceRaw)
      const stored = c.store.get(t.storageKey, t.namespaced ? ns : '', r.name)
      if (stored) await c.objects.admitDelete?.(t, stored, dry)
      return ok(
        await c.objects.delete(t, ns, r.name, {
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

/** The options kind a verb's query parameters are validated as (dryRun's 422 names it). */
const OPTIONS_KIND: Record<string, OptionsKind> = {
  POST: 'CreateOptions',
  PUT: 'UpdateOptions',
  PATCH: 'PatchOptions',
  DELETE: 'DeleteOptions',
}

function defaultManager(ua: string | undefined): string {
  if (!ua) return 'unknown'
  return ua.split('/')[0]!.slice(0, 128) || 'unknown'
}
