// WATCH streams: one JSON event per line over a chunked HTTP response.
// Invariants:
// - A watch registers for live events in the same tick as it reads its starting point (snapshot or
//   history), so no event is lost or repeated between the two.
// - Events reach each watch in version order; a bookmark carries the store's current version, which
//   is safe because delivery is synchronous: every event up to it was already queued on the stream.
// - A watch with bookmarks and a timeoutSeconds over 2 gets a bookmark 2 s before it ends.
// - Output is buffered per watch and flushed once per tick (one socket write for a burst of events).
// - Selector transitions follow the real server: an object entering the selection is ADDED, one
//   leaving it is DELETED with its previous content (the last state the watcher could select) and the
//   new resourceVersion, as the apiserver's watch cache sends it.
// - A custom kind's events are converted to the watched version (conversion.ts). A webhook makes it
//   asynchronous: lines then queue behind the pending conversion (bookmarks too), so the order of
//   the stream never changes; a conversion that fails ends the watch with an ERROR event (a 500
//   Status), as the apiserver's etcd watcher ends a watch whose object it cannot decode.
// - A watch from a version the server does not have yet (after a restart on the same port, or a
//   client that holds another server's version) is refused: one ERROR event with the 504 "Too large
//   resource version" Status, as kube-apiserver answers a watch-list (sendInitialEvents) there. For a
//   plain watch kube-apiserver waits for that version instead (docs/testserver.md, differences).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Store, StoreEvent } from './store.ts'
import type { ResourceType } from './resources.ts'
import { apiVersionOf } from './resources.ts'
import type { Matcher } from './selectors.ts'
import { expired, badRequest, tooLargeResourceVersion, type StatusError } from './status.ts'
import { conversionFailure, isPromise, type MaybePromise } from './conversion.ts'

export interface WatchRequest {
  type: ResourceType
  namespace?: string
  matcher?: Matcher
  resourceVersion?: string
  bookmarks: boolean
  timeoutSeconds?: number
  sendInitialEvents?: boolean
  /** Each event's object in another form (a server-side Table row, for `kubectl get -w`). */
  transform?: (obj: any) => unknown
  /** Each event's object in the watched version (a CRD's conversion; a promise when a webhook converts). */
  convert?: (obj: any) => MaybePromise<any>
}

interface Active {
  res: ServerResponse
  req: WatchRequest
  buf: string
  scheduled: boolean
  bookmarks: boolean
  close: () => void
  /** The last line still being converted: later lines wait for it (order is kept). */
  tail: Promise<void> | undefined
  /** A conversion failed: the watch has ended. */
  failed?: boolean
}

export class WatchHub {
  private readonly active = new Set<Active>()
  private bookmarkTimer: NodeJS.Timeout | undefined
  private bookmarkMs: number
  /** Send 410 Expired as an HTTP status instead of an ERROR event. */
  expiredAsHttp410 = false

  constructor(
    private readonly store: Store,
    bookmarkIntervalMs = 60_000,
  ) {
    this.bookmarkMs = bookmarkIntervalMs
  }

  get count(): number {
    return this.active.size
  }

  setBookmarkInterval(ms: number): void {
    this.bookmarkMs = ms
    if (this.bookmarkTimer) {
      clearInterval(this.bookmarkTimer)
      this.bookmarkTimer = undefined
    }
    this.armBookmarks()
  }
  private armBookmarks(): void {
    if (this.bookmarkTimer || ![...this.active].some((a) => a.bookmarks)) return
    this.bookmarkTimer = setInterval(() => this.sendBookmarks(), this.bookmarkMs)
    this.bookmarkTimer.unref()
  }
  /** Sends a bookmark on every watch that asked for them (also used by the interval). */
  sendBookmarks(): void {
    for (const a of this.active) if (a.bookmarks) this.put(a, bookmarkLine(a.req.type, this.store.rv, false))
  }

  /** Ends every watch: gracefully (end of stream) or abruptly (socket reset). */
  closeAll(mode: 'graceful' | 'reset'): number {
    const n = this.active.size
    for (const a of [...this.active]) {
      if (mode === 'graceful') {
        this.flush(a)
        a.res.end()
      } else a.res.socket?.destroy()
      a.close()
    }
    return n
  }

  serve(_req: IncomingMessage, res: ServerResponse, w: WatchRequest): void {
    const sk = w.type.storageKey
    const rvParam = w.resourceVersion
    let startRv: number | undefined
    if (rvParam !== undefined && rvParam !== '' && rvParam !== '0') {
      if (!/^\d+$/.test(rvParam)) throw badRequest(`resourceVersion: Invalid value: "${rvParam}": must be a non-negative integer`)
      startRv = Number(rvParam)
    }
    if (startRv !== undefined && startRv > this.store.rv) {
      startStream(res)
      res.end(JSON.stringify({ type: 'ERROR', object: tooLargeResourceVersion(startRv, this.store.rv).status }) + '\n')
      return
    }
    const initial = w.sendInitialEvents ?? startRv === undefined
    let backlog: StoreEvent[] = []
    if (startRv !== undefined && !w.sendInitialEvents) {
      const evs = this.store.since(sk, startRv)
      if (evs === 'expired') {
        const err = expired(`too old resource version: ${startRv} (${this.store.compactedRv + 1})`)
        if (this.expiredAsHttp410) throw err
        startStream(res)
        res.end(JSON.stringify({ type: 'ERROR', object: err.status }) + '\n')
        return
      }
      backlog = evs
    }

    startStream(res)
    const a: Active = { res, req: w, buf: '', scheduled: false, bookmarks: w.bookmarks, close: () => {}, tail: undefined }
    const apiVersion = apiVersionOf(w.type)
    const transform = w.transform
    const serialize = transform
      ? (type: string, obj: any) => `{"type":"${type}","object":${JSON.stringify(transform({ ...obj, apiVersion, kind: w.type.kind }))}}\n`
      : (type: string, obj: any) => eventLine(type, obj, apiVersion, w.type.kind)
    const convert = w.convert
    const lineOf = (type: string, obj: any): MaybePromise<string> => {
      if (!convert) return serialize(type, obj)
      const c = convert(obj)
      return isPromise(c) ? c.then((o) => serialize(type, o)) : serialize(type, c)
    }

    if (initial) {
      const snap = this.store.snapshot()
      for (const [, obj] of this.store.scan(sk, w.namespace, undefined, snap)) {
        if (!w.matcher || w.matcher(obj)) this.put(a, lineOf('ADDED', obj), false)
      }
      if (w.sendInitialEvents) this.put(a, bookmarkLine(w.type, snap.rv, true), false)
      startRv = snap.rv
    } else {
      for (const ev of backlog) {
        const l = this.lineFor(ev, w, lineOf)
        if (l) this.put(a, l, false)
      }
    }
    const from = startRv ?? this.store.rv
    const unsubscribe = this.store.subscribe(sk, (ev) => {
      if (ev.rv <= from) return
      const l = this.lineFor(ev, w, lineOf)
      if (l) this.put(a, l)
    })
    let timeout: NodeJS.Timeout | undefined
    let preTimeout: NodeJS.Timeout | undefined
    if (w.timeoutSeconds && w.timeoutSeconds > 0) {
      timeout = setTimeout(() => {
        this.flush(a)
        res.end()
        a.close()
      }, w.timeoutSeconds * 1000)
      // a bookmark 2 s before the end, so that the client resumes from the newest version (the
      // apiserver's cacheWatcher.nextBookmarkTime sends it at the deadline minus 2 s)
      if (w.bookmarks && w.timeoutSeconds > 2)
        preTimeout = setTimeout(() => this.put(a, bookmarkLine(w.type, this.store.rv, false)), w.timeoutSeconds * 1000 - 2000)
    }
    let closed = false
    a.close = () => {
      if (closed) return
      closed = true
      unsubscribe()
      if (timeout) clearTimeout(timeout)
      if (preTimeout) clearTimeout(preTimeout)
      this.active.delete(a)
      if (this.bookmarkTimer && ![...this.active].some((x) => x.bookmarks)) {
        clearInterval(this.bookmarkTimer)
        this.bookmarkTimer = undefined
      }
    }
    res.on('close', a.close)
    this.active.add(a)
    this.armBookmarks()
    if (a.buf) this.schedule(a)
  }

  private lineFor(ev: StoreEvent, w: WatchRequest, lineOf: (t: string, o: any) => MaybePromise<string>): MaybePromise<string> | undefined {
    if (w.namespace !== undefined && ev.namespace !== w.namespace) return undefined
    if (!w.matcher) return lineOf(ev.type, ev.object)
    const now = w.matcher(ev.object)
    if (ev.type !== 'MODIFIED') return now ? lineOf(ev.type, ev.object) : undefined
    const before = w.matcher(ev.prev)
    if (now && before) return lineOf('MODIFIED', ev.object)
    if (now) return lineOf('ADDED', ev.object)
    if (before)
      return lineOf('DELETED', { ...ev.prev, metadata: { ...ev.prev.metadata, resourceVersion: ev.object.metadata.resourceVersion } })
    return undefined
  }

  /** Queues a line in stream order: at once, or after the conversions before it (`flush`: schedule a write). */
  private put(a: Active, line: MaybePromise<string>, flush = true): void {
    if (a.failed) return
    if (!a.tail && !isPromise(line)) {
      a.buf += line
      if (flush) this.schedule(a)
      return
    }
    if (isPromise(line)) line.catch(() => {}) // handled in order below; not an unhandled rejection meanwhile
    const prev = a.tail ?? Promise.resolve()
    const mine: Promise<void> = prev
      .then(() => line)
      .then(
        (l) => {
          if (a.tail === mine) a.tail = undefined
          if (a.failed) return
          a.buf += l
          this.schedule(a)
        },
        (err) => this.fail(a, err),
      )
    a.tail = mine
  }
  /** A conversion failed: the watch ends with an ERROR event carrying its 500 Status. */
  private fail(a: Active, err: unknown): void {
    if (a.failed) return
    a.failed = true
    a.tail = undefined
    this.flush(a)
    if (!a.res.writableEnded && !a.res.destroyed) a.res.end(JSON.stringify({ type: 'ERROR', object: conversionFailure(err).status }) + '\n')
    a.close()
  }
  private schedule(a: Active): void {
    if (a.scheduled) return
    a.scheduled = true
    setImmediate(() => {
      a.scheduled = false
      this.flush(a)
    })
  }
  private flush(a: Active): void {
    if (!a.buf || a.res.writableEnded || a.res.destroyed) {
      a.buf = ''
      return
    }
    a.res.write(a.buf)
    a.buf = ''
  }
}

function startStream(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' })
  res.flushHeaders()
}

// Serialized objects are cached per (object, apiVersion): fan-out to N watchers serializes once.
const cache = new WeakMap<object, { apiVersion: string; json: string }>()
function objectJson(obj: any, apiVersion: string, kind: string): string {
  const c = cache.get(obj)
  if (c && c.apiVersion === apiVersion) return c.json
  const out = obj.apiVersion === apiVersion && obj.kind === kind ? obj : { ...obj, apiVersion, kind }
  const json = JSON.stringify(out)
  cache.set(obj, { apiVersion, json })
  return json
}
export function eventLine(type: string, obj: any, apiVersion: string, kind: string): string {
  return `{"type":"${type}","object":${objectJson(obj, apiVersion, kind)}}\n`
}
function bookmarkLine(t: ResourceType, rv: number, initialEnd: boolean): string {
  const metadata: Record<string, unknown> = { resourceVersion: String(rv) }
  if (initialEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true' }
  return JSON.stringify({ type: 'BOOKMARK', object: { kind: t.kind, apiVersion: apiVersionOf(t), metadata } }) + '\n'
}
export type { StatusError }
export { objectJson }
