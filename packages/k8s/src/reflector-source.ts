// The Kubernetes source of a Reflector (statedb's reflector core does the rest): one session is a
// paginated list (when the core has no position) and then a watch, client-go's way.
// Invariants:
// - the watch asks for bookmarks and a randomized server-side timeout in [s, 2s) (`watchTimeoutSeconds`,
//   default 300 s like client-go); kube-apiserver then sends a bookmark about every minute, which is
//   what keeps a quiet watch from looking silent to the core's inactivity bound;
// - 410 Gone / Expired (an HTTP status, an ERROR event, an expired continue token) and "Too large
//   resource version" (the server went back in time: restarted with a new history, or restored) refuse
//   the resume: the core relists, as client-go does on both;
// - a refused connection lists next time: a server that comes back on the same address may hold
//   another history, where our resourceVersion means nothing;
// - any other failure is an ApiError, or a ReflectorError with the cause kept, for the core to back off;
// - the label selector is read at each list and watch (a sharded replica changes it);
// - with the cluster's tracer, each watch event's receipt is a span `reflector.event` of its own (a new
//   trace) and each list one `reflector.list`; the object remembers it as its cause, so the run it
//   causes links to it (statedb's rememberCause). Without a tracer, nothing is made.
import {
  inSpan,
  rememberCause,
  validSpanContext,
  type ReflectorSource,
  type SessionContext,
  type SourceEvent,
  type TracerLike,
} from '@statewright/statedb'
import { ReflectorError } from './errors.ts'
import { ApiError, isGone } from './api-error.ts'
import { collectionPath, namespacedName, resolveKind, type KubeObject, type ResourceRef } from './gvk.ts'
import { LineDecoder, parseEvent } from './ndjson.ts'
import { listAll } from './list.ts'
import type { ReflectorOptions } from './reflector-options.ts'

type Event = SourceEvent<KubeObject, string>

/** A Status that says "Too large resource version" (504 Timeout, cause ResourceVersionTooLarge). */
function isTooLargeResourceVersion(st: any): boolean {
  if (st?.code !== 504 && st?.reason !== 'Timeout') return false
  const causes: Array<{ reason?: string }> = Array.isArray(st?.details?.causes) ? st.details.causes : []
  return causes.some((c) => c?.reason === 'ResourceVersionTooLarge') || /too large resource version/i.test(String(st?.message ?? ''))
}

/** An ERROR event that refuses the resume (410, too large): the session ends, the core relists. */
class Relist extends Error {
  override name = 'Relist'
}

export class KubeSource implements ReflectorSource<KubeObject, string> {
  private resource: ResourceRef | undefined

  constructor(
    private readonly o: ReflectorOptions<any>,
    private readonly name: string,
    private readonly labelSelector: () => string | undefined,
  ) {}

  async *session(from: string | undefined, ctx: SessionContext): AsyncGenerator<Event> {
    try {
      if (!this.resource) this.resource = await resolveKind(this.o.cluster, this.o.kind)
      if (from === undefined) {
        const { items, resourceVersion } = await listAll(this.o.cluster, this.resource, {
          namespace: this.o.namespace,
          labelSelector: this.labelSelector(),
          fieldSelector: this.o.fieldSelector,
          pageSize: this.o.pageSize,
          signal: ctx.signal,
        })
        const tracer = this.o.cluster.tracer
        if (tracer)
          inSpan(
            tracer,
            'reflector.list',
            (span) => {
              const sc = validSpanContext(span)
              if (sc) for (const item of items) rememberCause(item, sc)
            },
            {
              root: true,
              attributes: {
                'statewright.reflector': this.name,
                'k8s.object.kind': this.resource.kind,
                'k8s.resource_version': resourceVersion ?? '',
                'statewright.objects': items.length,
              },
            },
          )
        yield { type: 'list', items, position: resourceVersion ?? '' }
        if (this.o.stateOfWorld || ctx.signal.aborted) return
        from = resourceVersion ?? ''
      }
      yield* this.watch(this.resource, from, ctx.signal)
    } catch (err) {
      if (ctx.signal.aborted) throw err
      const tooLarge = err instanceof ApiError && err.code === 504 && /too large resource version/i.test(err.message)
      // The version we resume from is gone (or not there yet): relist at once, not a failure to back off from.
      if (err instanceof Relist || isGone(err) || tooLarge) return ctx.listNext((err as Error).message)
      if (err instanceof ApiError && err.code === 0 && err.reason === 'ECONNREFUSED') ctx.listNext()
      // health and logs show it as the reflector's failure, with the cause kept
      throw err instanceof ApiError
        ? err
        : new ReflectorError(`reflector ${this.name}: ${(err as Error)?.message ?? String(err)}`, { cause: err })
    }
  }

  private async *watch(r: ResourceRef, from: string, signal: AbortSignal): AsyncGenerator<Event> {
    const timeoutSeconds = Math.floor((this.o.watchTimeoutSeconds ?? 300) * (1 + Math.random()))
    yield { type: 'watch' }
    const res = await this.o.cluster.stream({
      path: collectionPath(r, this.o.namespace),
      query: {
        watch: 1,
        resourceVersion: from || undefined,
        allowWatchBookmarks: true,
        timeoutSeconds,
        labelSelector: this.labelSelector(),
        fieldSelector: this.o.fieldSelector,
      },
      signal,
      what: `watch ${r.kind}`,
      deadlineMs: timeoutSeconds * 1000 + 30_000,
    })
    try {
      yield { type: 'connected' }
      const lines = new LineDecoder()
      for await (const chunk of res) {
        for (const line of lines.push(chunk as Buffer)) {
          const ev = this.event(r, line)
          if (ev) yield ev
        }
      }
      for (const line of lines.end()) {
        const ev = this.event(r, line)
        if (ev) yield ev
      }
    } finally {
      res.destroy()
    }
  }

  /** The receipt of a watch event: a span of its own (a new trace), remembered as the object's cause. */
  private traceEvent(tracer: TracerLike, type: string, obj: KubeObject): void {
    const attributes = {
      'statewright.reflector': this.name,
      'k8s.event.type': type,
      'k8s.object.kind': String(obj.kind),
      'k8s.object.key': namespacedName(obj),
      'k8s.resource_version': String(obj.metadata?.resourceVersion ?? ''),
    }
    inSpan(tracer, 'reflector.event', (span) => rememberCause(obj, validSpanContext(span)), { root: true, attributes })
  }

  /** One watch line as an event for the core (undefined: a type we do not reflect). */
  private event(r: ResourceRef, line: string): Event | undefined {
    const ev = parseEvent(line)
    const obj = ev.object as KubeObject
    if (ev.type === 'ERROR') {
      const st = ev.object as any
      if (st?.code === 410 || st?.reason === 'Expired' || st?.reason === 'Gone') throw new Relist(String(st?.message ?? 'expired'))
      if (isTooLargeResourceVersion(st)) throw new Relist(String(st?.message ?? 'too large resource version'))
      throw new ApiError(
        `watch ${r.kind}: ERROR event: ${st?.code} ${st?.reason}: ${st?.message}`,
        Number(st?.code) || 0,
        String(st?.reason ?? 'Error'),
        st,
      )
    }
    const rv: string | undefined = obj?.metadata?.resourceVersion
    if (ev.type === 'BOOKMARK') return { type: 'bookmark', position: rv || undefined }
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return undefined
    this.o.metrics?.reflectorEvents.inc({ reflector: this.name, cluster: this.o.cluster.name, type: ev.type })
    if (obj.kind === undefined) obj.kind = r.kind
    if (obj.apiVersion === undefined) obj.apiVersion = r.apiVersion
    const tracer = this.o.cluster.tracer
    if (tracer) this.traceEvent(tracer, ev.type, obj)
    return { type: ev.type === 'DELETED' ? 'delete' : 'upsert', key: namespacedName(obj), item: obj, position: rv || undefined }
  }
}
