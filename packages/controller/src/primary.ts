// PrimaryController: Kumori controllerruntime's and sample-controller's "primary / secondary"
// controller, on statewright's tables and reconciler instead of a hand-written workqueue.
//
// - Primaries are a statedb table (a NatsKvReflector's or a k8s Reflector's). Every primary has a
//   row in a work table (key, spec hash, what it owns, reconciler status) that a Reconciler drives:
//   dedup by key, per-key exponential backoff, at most `concurrency` syncs at once (batches with a
//   worker pool), never two at once for one key (one round at a time, a key once per round).
// - A primary change whose spec hash is unchanged (a status write-back) marks nothing: no loop.
// - sync(primary, ctx) returns the secondaries; each is stamped with the owner key and kind (labels
//   and annotations), and written through its target with an ownership check on what the target
//   reads: an object with our name but not our owner annotation is never adopted (ErrResourceExists:
//   a Warning event, an error status, a retry with backoff; it is created once the foreign object
//   is gone). Secondaries a primary stopped returning are deleted; a deleted primary's go too.
// - Secondaries are observed through tables (reflectors). A change of one of ours that is not our
//   own write (its version differs from the one our write returned) re-marks its owner pending
//   (HandleSecondary): an edit or a delete is repaired. Objects are mapped to their owner by the
//   owner-key annotation, which holds the exact key (the label holds it when it is a valid label
//   value, else a stable hash).
// - GarbageSecondaries: secondaries stamped with our owner kind whose owner key is not a primary are
//   deleted, at start (once every table is initialized) and at every resync. Objects without our
//   stamps are never touched.
// - Resync: every resyncIntervalMs all primaries are marked pending again and GC runs.
// - requeueAfterMs marks the key pending again later, without counting as an error.
// - Events (Normal "Synced", Warning "ErrResourceExists") go to an EventRecorder (aggregated and
//   rate-limited); a primary that is not a Kubernetes object is named by a pseudo-object in
//   `eventNamespace`.
import { ConfigError, InvalidObjectError, SyncError, UsageError } from './errors.ts'
import { createHash } from 'node:crypto'
import {
  Reconciler,
  newStatusIndex,
  statusPending,
  type BatchEntry,
  type OpContext,
  type RetryOptions,
  type Status,
  type StatusIndex,
} from '@statewright/reconciler'
import { Table, WatchSet, defineIndex, type ChangeIterator, type DB, type ReadTxn, type WriteTxn } from '@statewright/statedb'
import {
  ApiError,
  groupKind,
  isNotFound,
  objectPath,
  resolveKind,
  type Cluster,
  type InvolvedObject,
  type KindRef,
  type KubeObject,
} from '@statewright/k8s'

/** Labels and annotations that mark a secondary as owned by a primary. */
export interface OwnerStamps {
  labels: Record<string, string>
  annotations: Record<string, string>
}

export type SecondaryWriteResult = 'created' | 'updated' | 'unchanged' | 'foreign'

/**
 * Where secondaries of some kinds live (a cluster, a bucket). `apply` and `delete` run the
 * controller's ownership check (`owned`) on the object they read, inside their own
 * compare-and-swap or precondition, so an object somebody else made is never overwritten.
 * Implemented by KubeSecondaries (here) and KvSecondaries (@statewright/nats).
 */
export interface SecondaryTarget<S> {
  kindOf(s: S): string
  /** Identity, unique within the target (kind and name). */
  id(s: S): string
  /** The name events and errors use: "<namespace>/<name>", "<bucket>/<key>". */
  describe(s: S): string
  stampsOf(s: S): { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined
  /** The version of an observed object (resourceVersion, revision): tells our own writes from others'. */
  versionOf(s: S): string | undefined
  withStamps(s: S, stamps: OwnerStamps): S
  apply(s: S, owned: (existing: S) => boolean, signal?: AbortSignal): Promise<{ result: SecondaryWriteResult; version?: string }>
  /** Deletes s if it exists and is owned; true when deleted. */
  delete(s: S, owned: (existing: S) => boolean, signal?: AbortSignal): Promise<boolean>
}

export interface SecondarySpec<S = any> {
  /** The kinds (target.kindOf) this target takes. */
  kinds: string[]
  target: SecondaryTarget<S>
  /** The secondaries as they are (a reflector's table): for repair of edits and deletes, and GC. */
  observed: Table<S>
}

/** Writes a primary's status back (KvStatusWriter: CAS; kubeStatusWriter: SSA on /status). */
export interface PrimaryStatusWriter<P> {
  writeStatus(primary: P, status: unknown, signal?: AbortSignal): Promise<unknown>
}

/** Where events go: an EventRecorder of @statewright/k8s fits. */
export interface EventSink {
  normal(obj: InvolvedObject, reason: string, message: string): void
  warning(obj: InvolvedObject, reason: string, message: string): void
}

export interface SyncContext {
  /** The snapshot the primary was read from: read tertiary tables through it. */
  readonly txn: ReadTxn
  readonly signal: AbortSignal
  readonly key: string
}

export interface SyncResult<S = any> {
  secondaries: S[]
  /** Written back through `status` (when given). */
  status?: unknown
  /** Sync this key again after this long (not an error). */
  requeueAfterMs?: number
}

export interface PrimaryControllerOptions<P> {
  name: string
  /** The primaries' kind: the ownerkind stamp. */
  kind: string
  db: DB
  primaries: Table<P>
  /** The primary's key, the same as its key in the table's primary index (default: `key`, else namespace/name). */
  key?: (p: P) => string
  /** What a sync depends on; a change that leaves it equal (a status write) triggers nothing. Default: the primary without its status. */
  spec?: (p: P) => unknown
  secondaries: SecondarySpec[]
  sync: (p: P, ctx: SyncContext) => SyncResult | Promise<SyncResult>
  /** Most syncs at once (default 2). */
  concurrency?: number
  /** All primaries synced again and GC every this many ms (0: never; default 0). */
  resyncIntervalMs?: number
  events?: EventSink
  /** The namespace of events about primaries that are not Kubernetes objects (default "default"). */
  eventNamespace?: string
  status?: PrimaryStatusWriter<P>
  /** The status written when a sync fails (default `{ ...status, error }`). */
  errorStatus?: (message: string, status: unknown) => unknown
  /** Stamp prefix: "statewright.io" (default) gives statewright.io/ownerkey; "kumori" gives Kumori's kumori/ownerkey. */
  stampPrefix?: string
  retry?: RetryOptions
  onError?: (err: Error) => void
}

export interface PrimaryControllerStats {
  syncs: number
  syncErrors: number
  created: number
  updated: number
  deleted: number
  garbage: number
  foreign: number
  requeues: number
  repairs: number
}

interface OwnedRef {
  spec: number
  object: unknown
}

interface Work {
  readonly key: string
  readonly hash: string
  /** What the last successful sync applied. */
  readonly owned: readonly OwnedRef[]
  readonly status: Status
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** The owner-key label value: the key when it is a valid label value, else a stable hash. */
export function ownerKeyLabelValue(key: string): string {
  if (key.length <= 63 && LABEL_VALUE.test(key)) return key
  return `h-${createHash('sha256').update(key).digest('hex').slice(0, 40)}`
}

/** The stamp names: `<prefix>/ownerkey` and `<prefix>/ownerkind` (labels and annotations alike). */
export function ownerStampKeys(prefix = 'statewright.io'): { key: string; kind: string } {
  return { key: `${prefix}/ownerkey`, kind: `${prefix}/ownerkind` }
}

function defaultKey(p: unknown): string {
  const o = p as { key?: unknown; metadata?: { name?: string; namespace?: string } }
  if (typeof o.key === 'string') return o.key
  const m = o.metadata
  if (m?.name) return m.namespace ? `${m.namespace}/${m.name}` : m.name
  throw new ConfigError('PrimaryController: cannot tell the key of a primary: give options.key')
}

function defaultSpec(p: unknown): unknown {
  const o = p as Record<string, any>
  if (typeof o.key === 'string' && 'value' in o) {
    const v = o.value
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const { status: _s, ...rest } = v
      return rest
    }
    return v
  }
  const { status: _s, metadata, ...rest } = o
  if (metadata && typeof metadata === 'object') {
    const { resourceVersion: _rv, managedFields: _mf, generation: _g, ...meta } = metadata
    return { ...rest, metadata: meta }
  }
  return rest
}

function hashOf(v: unknown): string {
  return createHash('sha1')
    .update(JSON.stringify(v) ?? 'undefined')
    .digest('base64')
}

export class PrimaryController<P> {
  readonly name: string
  readonly stats: PrimaryControllerStats = {
    syncs: 0,
    syncErrors: 0,
    created: 0,
    updated: 0,
    deleted: 0,
    garbage: 0,
    foreign: 0,
    requeues: 0,
    repairs: 0,
  }
  private readonly o: PrimaryControllerOptions<P>
  private readonly keyOf: (p: P) => string
  private readonly specOf: (p: P) => unknown
  private readonly stampKeys: { key: string; kind: string }
  private readonly work: Table<Work>
  private readonly reconciler: Reconciler<Work>
  private readonly concurrency: number
  private readonly statusIndex: StatusIndex<Work>
  private markInitialized: ((txn: WriteTxn) => void) | undefined
  /** owner key -> id -> observed secondary (from the observed tables). */
  private readonly byOwner = new Map<string, Map<string, { spec: number; object: unknown }>>()
  /** id -> owner key, for what each observed secondary of ours belongs to. */
  private readonly ownerOfId = new Map<string, string>()
  /** id -> the version our last write returned. */
  private readonly lastWritten = new Map<string, string>()
  /** ids we deleted (their delete events are ours). */
  private readonly deletedByUs = new Set<string>()
  /** foreign id -> primary keys waiting for it to go. */
  private readonly blockedBy = new Map<string, Set<string>>()
  private readonly requeues = new Map<string, NodeJS.Timeout>()
  /** key -> what its last sync applied (kept here too: a row's write-back can lose a CAS race). */
  private readonly ownedByKey = new Map<string, readonly OwnedRef[]>()
  private readonly inflight = new Set<Promise<unknown>>()
  private follow: { ctrl: AbortController; done: Promise<void> } | undefined
  private resyncTimer: NodeJS.Timeout | undefined
  private gcDone = false
  /** Table revisions the follow loop has processed: primaries first, then each observed table. */
  private processed: number[] = []
  private lastGcError: string | undefined

  constructor(opts: PrimaryControllerOptions<P>) {
    if (!opts?.name) throw new ConfigError('PrimaryController: name is required')
    if (!opts.kind) throw new ConfigError(`PrimaryController "${opts.name}": kind is required`)
    if (!opts.db || !opts.primaries) throw new ConfigError(`PrimaryController "${opts.name}": db and primaries (a table) are required`)
    if (typeof opts.sync !== 'function') throw new ConfigError(`PrimaryController "${opts.name}": sync(primary, ctx) is required`)
    for (const [i, s] of (opts.secondaries ?? []).entries()) {
      if (!s.target || !s.observed || !Array.isArray(s.kinds) || s.kinds.length === 0) {
        throw new ConfigError(`PrimaryController "${opts.name}": secondaries[${i}] needs kinds, target and observed`)
      }
    }
    this.o = opts
    this.name = opts.name
    this.keyOf = opts.key ?? defaultKey
    this.specOf = opts.spec ?? defaultSpec
    this.stampKeys = ownerStampKeys(opts.stampPrefix)
    this.concurrency = Math.max(1, opts.concurrency ?? 2)
    const statusIndex = newStatusIndex<Work>((w) => w.status)
    this.statusIndex = statusIndex
    const byKey = defineIndex<Work, string>({ name: 'key', key: (w) => w.key, unique: true })
    this.work = new Table<Work>({
      name: `primary-${opts.name.replace(/[^A-Za-z0-9._-]/g, '_')}`.slice(0, 60),
      primary: byKey,
      indexes: [statusIndex],
    })
    opts.db.register(this.work)
    this.reconciler = new Reconciler<Work>({
      db: opts.db,
      table: this.work,
      statusIndex,
      name: this.work.name,
      getObjectStatus: (w) => w.status,
      setObjectStatus: (w, status) => ({ ...w, status }),
      retry: opts.retry ?? { minMs: 100, maxMs: 30_000, jitter: 0.1 },
      operations: {
        update: (w, ctx) => this.track(this.syncOne(w as { -readonly [K in keyof Work]: Work[K] }, ctx)),
        delete: (w, ctx) => this.track(this.removeOwned(w, ctx)),
      },
      batchOperations: {
        updateBatch: (entries, ctx) => this.pool(entries, (w) => this.syncOne(w as { -readonly [K in keyof Work]: Work[K] }, ctx)),
        deleteBatch: (entries, ctx) => this.pool(entries, (w) => this.removeOwned(w, ctx)),
      },
    })
  }

  /** The work table (one row per primary, with the reconciler's status): errors, pending keys. */
  get table(): Table<Work> {
    return this.work
  }

  /** Stamps for a primary key. */
  stamps(key: string): OwnerStamps {
    return {
      labels: { [this.stampKeys.key]: ownerKeyLabelValue(key), [this.stampKeys.kind]: ownerKeyLabelValue(this.o.kind) },
      annotations: { [this.stampKeys.key]: key, [this.stampKeys.kind]: this.o.kind },
    }
  }

  /** The owner key of a secondary stamped with our kind (from the annotation), else undefined. */
  ownerKeyOf(target: SecondaryTarget<any>, s: unknown): string | undefined {
    const a = target.stampsOf(s)?.annotations
    if (!a || a[this.stampKeys.kind] !== this.o.kind) return undefined
    const k = a[this.stampKeys.key]
    return typeof k === 'string' ? k : undefined
  }

  async start(): Promise<this> {
    if (this.follow) throw new UsageError(`PrimaryController "${this.name}": already started`)
    const txn = await this.o.db.writeTxn(this.work)
    this.markInitialized = this.work.registerInitializer(txn, `primary-controller ${this.name}`)
    txn.commit()
    const ctrl = new AbortController()
    this.follow = { ctrl, done: this.followLoop(ctrl.signal) }
    this.reconciler.start()
    const every = this.o.resyncIntervalMs ?? 0
    if (every > 0) {
      const tick = () => {
        this.resyncTimer = setTimeout(() => {
          void this.resync()
            .catch((e) => this.report(e))
            .finally(() => {
              if (this.follow) tick()
            })
        }, every)
      }
      tick()
    }
    return this
  }

  /** Stops following, stops the reconciler, and waits for syncs in flight. */
  async stop(): Promise<void> {
    const f = this.follow
    if (!f) return
    this.follow = undefined
    clearTimeout(this.resyncTimer)
    for (const t of this.requeues.values()) clearTimeout(t)
    this.requeues.clear()
    f.ctrl.abort()
    await f.done.catch(() => {})
    const inflight = [...this.inflight]
    await this.reconciler.stop()
    await Promise.allSettled(inflight)
    while (this.inflight.size) await Promise.allSettled([...this.inflight])
  }

  /** Every primary synced again, and GC. */
  async resync(): Promise<void> {
    await this.o.db.write(this.work, (txn) => {
      const s = statusPending()
      const all = this.work.all(txn).toArray()
      for (const w of all) this.work.insert(txn, { ...w, status: s })
    })
    await this.gc()
  }

  health(): { level: 'ok' | 'degraded' | 'stopped'; message: string; ready: boolean; errors: Array<{ key: string; error: string }> } {
    const txn = this.o.db.readTxn()
    const errors: Array<{ key: string; error: string }> = []
    for (const w of this.work.all(txn)) if (w.status.kind === 'error') errors.push({ key: w.key, error: w.status.error ?? '' })
    const ready = this.follow !== undefined && this.work.initialized(txn)[0]
    if (!this.follow) return { level: 'stopped', message: 'stopped', ready: false, errors }
    const problems = [...errors.slice(0, 3).map((e) => `${e.key}: ${e.error}`), ...(this.lastGcError ? [`gc: ${this.lastGcError}`] : [])]
    return {
      level: problems.length ? 'degraded' : 'ok',
      message: problems.length ? `${errors.length} errors: ${problems.join('; ')}` : `${this.work.count(txn)} primaries`,
      ready,
      errors,
    }
  }

  /** Resolves when every primary change so far is synced (or failed); returns the keys in error. */
  async waitIdle(signal?: AbortSignal): Promise<Array<{ key: string; error: string }>> {
    for (;;) {
      signal?.throwIfAborted()
      const txn = this.o.db.readTxn()
      const [pending, w] = this.work.listWatch(txn, this.statusIndex.kind('pending'))
      const caughtUp = [this.o.primaries, ...this.o.secondaries.map((s) => s.observed)].every(
        (t, i) => (this.processed[i] ?? -1) >= t.revision(txn),
      )
      if (caughtUp && pending.count() === 0 && this.gcDone && this.requeues.size === 0 && this.inflight.size === 0) {
        // the reconciler has acted on every change of the work table, deletes of rows included
        const rev = this.work.revision(txn)
        await this.reconciler.waitForRevision(rev, { signal })
        if (this.work.revision(this.o.db.readTxn()) === rev && this.inflight.size === 0) {
          const failedDeletes = this.reconciler.failedDeletes().map((f) => ({ key: String(f.object.key), error: `delete: ${f.error}` }))
          return [...this.health().errors, ...failedDeletes]
        }
        continue
      }
      const ws = new WatchSet().add(w, this.o.primaries.allWatch(txn)[1], this.work.allWatch(txn)[1])
      await Promise.race([ws.wait(signal), new Promise((r) => setTimeout(r, 20))])
    }
  }

  // ---- following primaries and secondaries ----

  private async followLoop(signal: AbortSignal): Promise<void> {
    const db = this.o.db
    const txn0 = db.readTxn()
    const primaryIter = this.o.primaries.changes(txn0)
    const observedIters = this.o.secondaries.map((s) => s.observed.changes(txn0))
    try {
      while (!signal.aborted) {
        const txn = db.readTxn()
        const ws = new WatchSet()
        for (const [i, it] of observedIters.entries()) ws.add(await this.observe(i, it, txn))
        ws.add(await this.primaryChanges(primaryIter, txn))
        this.processed = [this.o.primaries.revision(txn), ...this.o.secondaries.map((s) => s.observed.revision(txn))]
        if (this.markInitialized && this.allInitialized(txn)) {
          const mark = this.markInitialized
          this.markInitialized = undefined
          await db.write(this.work, (w) => mark(w))
          await this.gc().catch((e) => this.report(e))
        }
        const watches: Promise<unknown>[] = [ws.wait(signal)]
        if (this.markInitialized) {
          // only the tables still waiting (an initialized table's watch has fired already)
          for (const t of [this.o.primaries, ...this.o.secondaries.map((s) => s.observed)]) {
            const [ready, w] = t.initialized(txn)
            if (!ready) watches.push(w.wait(signal))
          }
        }
        await Promise.race(watches).catch(() => {})
      }
    } finally {
      primaryIter.close()
      for (const it of observedIters) it.close()
    }
  }

  private allInitialized(txn: ReadTxn): boolean {
    if (!this.o.primaries.initialized(txn)[0]) return false
    return this.o.secondaries.every((s) => s.observed.initialized(txn)[0])
  }

  private async primaryChanges(iter: ChangeIterator<P>, txn: ReadTxn) {
    const [changes, watch] = iter.next(txn)
    const marks: Array<{ key: string; hash?: string }> = []
    for (const c of changes) {
      let key: string
      try {
        key = this.keyOf(c.object)
      } catch (err) {
        this.report(err as Error)
        continue
      }
      if (c.deleted) marks.push({ key })
      else {
        let hash: string
        try {
          hash = hashOf(this.specOf(c.object))
        } catch (err) {
          this.report(new InvalidObjectError(`primary "${key}": spec failed: ${(err as Error).message}`))
          continue
        }
        marks.push({ key, hash })
      }
    }
    if (marks.length) {
      await this.o.db.write(this.work, (w) => {
        const s = statusPending()
        for (const m of marks) {
          const cur = this.work.get(w, this.work.primary.query(m.key))
          if (m.hash === undefined) {
            if (cur) this.work.delete(w, cur)
            const t = this.requeues.get(m.key)
            if (t) {
              clearTimeout(t)
              this.requeues.delete(m.key)
            }
          } else if (!cur || cur.hash !== m.hash) {
            this.work.insert(w, { key: m.key, hash: m.hash, owned: cur?.owned ?? [], status: s })
          }
        }
      })
    }
    return watch
  }

  private async observe(spec: number, iter: ChangeIterator<unknown>, txn: ReadTxn) {
    const [changes, watch] = iter.next(txn)
    const target = this.o.secondaries[spec]!.target
    const repair = new Set<string>()
    let orphans = false
    for (const c of changes) {
      let id: string
      try {
        id = target.id(c.object)
      } catch {
        continue
      }
      const owner = this.ownerKeyOf(target, c.object)
      const prevOwner = this.ownerOfId.get(id)
      if (c.deleted) {
        // the owner we knew, or the deleted object's own stamp (made and deleted between two reads,
        // it was never seen alive)
        const was = prevOwner ?? owner
        if (was !== undefined) {
          this.byOwner.get(was)?.delete(id)
          this.ownerOfId.delete(id)
          if (this.deletedByUs.has(id)) this.deletedByUs.delete(id)
          else repair.add(was)
        }
        this.lastWritten.delete(id)
        const waiting = this.blockedBy.get(id)
        if (waiting) {
          this.blockedBy.delete(id)
          for (const k of waiting) repair.add(k)
        }
        continue
      }
      if (prevOwner !== undefined && prevOwner !== owner) {
        this.byOwner.get(prevOwner)?.delete(id)
        this.ownerOfId.delete(id)
        repair.add(prevOwner) // our stamp was removed or changed: the owner puts it back
      }
      if (owner === undefined) continue
      if (this.o.primaries.get(txn, this.o.primaries.primary.query(owner as never)) === undefined) orphans = true
      let m = this.byOwner.get(owner)
      if (!m) this.byOwner.set(owner, (m = new Map()))
      m.set(id, { spec, object: c.object })
      this.ownerOfId.set(id, owner)
      const v = target.versionOf(c.object)
      if (v === undefined || this.lastWritten.get(id) !== v) repair.add(owner)
    }
    if (repair.size) {
      await this.o.db.write(this.work, (w) => {
        const s = statusPending()
        for (const k of repair) {
          // a new pending mark even on a row being synced: the reconciler drops that sync's result
          // (it saw the secondary before this change) and syncs again
          const cur = this.work.get(w, this.work.primary.query(k))
          if (cur) {
            this.work.insert(w, { ...cur, status: s })
            this.stats.repairs++
          }
        }
      })
    }
    // a secondary whose owner is gone (its sync made it just before the owner's delete ran, say)
    if (orphans && !this.markInitialized) await this.gc().catch((e) => this.report(e))
    return watch
  }

  // ---- syncing ----

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p)
    void p.finally(() => this.inflight.delete(p)).catch(() => {})
    return p
  }

  private async pool(entries: BatchEntry<Work>[], fn: (w: Work) => Promise<unknown>): Promise<void> {
    let next = 0
    const worker = async () => {
      while (next < entries.length) {
        const e = entries[next++]!
        try {
          await this.track(fn(e.object))
        } catch (err) {
          e.error = err
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(this.concurrency, entries.length) }, worker))
  }

  private specFor(kind: string): number {
    const i = this.o.secondaries.findIndex((s) => s.kinds.includes(kind))
    if (i < 0)
      throw new ConfigError(`no secondary target takes kind "${kind}" (kinds: ${this.o.secondaries.flatMap((s) => s.kinds).join(', ')})`)
    return i
  }

  private ownedBy(key: string, target: SecondaryTarget<any>): (existing: unknown) => boolean {
    return (existing) => this.ownerKeyOf(target, existing) === key
  }

  private involved(p: P | undefined, key: string): InvolvedObject {
    const o = p as KubeObject | undefined
    if (o && typeof o === 'object' && typeof o.apiVersion === 'string' && typeof o.kind === 'string' && o.metadata?.name) return o
    return {
      apiVersion: 'statewright.io/v1',
      kind: this.o.kind,
      metadata: {
        namespace: this.o.eventNamespace ?? 'default',
        name: ownerKeyLabelValue(key)
          .toLowerCase()
          .replace(/[^a-z0-9.-]/g, '-'),
      },
    }
  }

  private async syncOne(w: { -readonly [K in keyof Work]: Work[K] }, ctx: OpContext): Promise<boolean> {
    const key = w.key
    const t = this.requeues.get(key)
    if (t) {
      clearTimeout(t)
      this.requeues.delete(key)
    }
    const p = this.o.primaries.get(ctx.txn, this.o.primaries.primary.query(key as never))
    if (p === undefined) return false // deleted since: its delete comes next
    this.stats.syncs++
    let res: SyncResult
    try {
      res = await this.o.sync(p, { txn: ctx.txn, signal: ctx.signal, key })
      if (!res || !Array.isArray(res.secondaries)) throw new InvalidObjectError('sync must return { secondaries: [...] }')
    } catch (err) {
      this.stats.syncErrors++
      const msg = `sync of ${this.o.kind} "${key}" failed: ${(err as Error).message}`
      await this.writeErrorStatus(p, msg, undefined, ctx)
      throw new SyncError(msg)
    }
    const events = this.o.events
    const involved = this.involved(p, key)
    const stamps = this.stamps(key)
    const applied: OwnedRef[] = []
    const appliedIds = new Set<string>()
    const failures: string[] = []
    let changed = false
    for (const s of res.secondaries) {
      let spec: number
      let stamped: unknown
      let target: SecondaryTarget<any>
      try {
        spec = this.specFor(this.kindOfAny(s))
        target = this.o.secondaries[spec]!.target
        stamped = target.withStamps(s, stamps)
      } catch (err) {
        failures.push((err as Error).message)
        continue
      }
      const id = target.id(stamped)
      const what = target.describe(stamped)
      appliedIds.add(id)
      try {
        const r = await target.apply(stamped, this.ownedBy(key, target), ctx.signal)
        if (r.result === 'foreign') {
          this.stats.foreign++
          const msg = `Resource "${what}" already exists and is not managed by this controller`
          events?.warning(involved, 'ErrResourceExists', msg)
          let waiting = this.blockedBy.get(id)
          if (!waiting) this.blockedBy.set(id, (waiting = new Set()))
          waiting.add(key)
          failures.push(msg)
          continue
        }
        if (r.version !== undefined) this.lastWritten.set(id, r.version)
        this.deletedByUs.delete(id) // a delete of ours whose event never came (already gone) is no longer pending
        applied.push({ spec, object: stamped })
        if (r.result === 'created' || r.result === 'updated') {
          changed = true
          this.stats[r.result]++
          events?.normal(involved, 'Synced', `"${what}" synced successfully (${r.result})`)
        }
      } catch (err) {
        failures.push(`${what}: ${(err as Error).message}`)
        // keep what we had for it: a failed write is retried, not deleted
        const prev = w.owned.find((o) => this.o.secondaries[o.spec]!.target.id(o.object) === id)
        if (prev) applied.push(prev)
      }
    }
    // secondaries this primary no longer returns: what it owned before and what is observed with its stamp
    const stale = new Map<string, OwnedRef>()
    for (const o of [...w.owned, ...(this.ownedByKey.get(key) ?? [])]) stale.set(this.o.secondaries[o.spec]!.target.id(o.object), o)
    for (const [id, o] of this.byOwner.get(key) ?? []) stale.set(id, o)
    for (const [id, o] of stale) {
      if (appliedIds.has(id)) continue
      const target = this.o.secondaries[o.spec]!.target
      try {
        this.deletedByUs.add(id)
        if (await target.delete(o.object, this.ownedBy(key, target), ctx.signal)) {
          changed = true
          this.stats.deleted++
          events?.normal(involved, 'Synced', `"${target.describe(o.object)}" synced successfully (deleted)`)
        } else this.deletedByUs.delete(id)
      } catch (err) {
        this.deletedByUs.delete(id)
        failures.push(`${target.describe(o.object)}: delete failed: ${(err as Error).message}`)
        applied.push(o)
      }
    }
    w.owned = applied
    this.ownedByKey.set(key, applied)
    if (failures.length) {
      this.stats.syncErrors++
      const msg = failures.join('; ')
      await this.writeErrorStatus(p, msg, res.status, ctx)
      throw new SyncError(msg)
    }
    if (res.status !== undefined && this.o.status) await this.o.status.writeStatus(p, res.status, ctx.signal)
    if (res.requeueAfterMs !== undefined && res.requeueAfterMs >= 0) this.requeueAfter(key, res.requeueAfterMs)
    return changed
  }

  private kindOfAny(s: unknown): string {
    for (const spec of this.o.secondaries) {
      try {
        const k = spec.target.kindOf(s)
        if (spec.kinds.includes(k)) return k
      } catch {
        /* not this target's shape */
      }
    }
    return this.o.secondaries[0]!.target.kindOf(s)
  }

  private async writeErrorStatus(p: P, msg: string, status: unknown, ctx: OpContext): Promise<void> {
    if (!this.o.status) return
    const s = this.o.errorStatus
      ? this.o.errorStatus(msg, status)
      : { ...(status !== null && typeof status === 'object' ? status : {}), error: msg }
    await this.o.status
      .writeStatus(p, s, ctx.signal)
      .catch((e) => this.report(new SyncError(`status of "${this.keyOf(p)}": ${(e as Error).message}`)))
  }

  private requeueAfter(key: string, ms: number): void {
    const old = this.requeues.get(key)
    if (old) clearTimeout(old)
    this.stats.requeues++
    this.requeues.set(
      key,
      setTimeout(() => {
        this.requeues.delete(key)
        if (!this.follow) return
        void this.o.db
          .write(this.work, (w) => {
            const cur = this.work.get(w, this.work.primary.query(key))
            if (cur) this.work.insert(w, { ...cur, status: statusPending() })
          })
          .catch((e) => this.report(e))
      }, ms),
    )
  }

  /** A primary is gone: delete what it owned and what is observed with its stamp. */
  private async removeOwned(w: Work, ctx: OpContext): Promise<void> {
    const t = this.requeues.get(w.key)
    if (t) {
      clearTimeout(t)
      this.requeues.delete(w.key)
    }
    if (this.o.primaries.get(ctx.txn, this.o.primaries.primary.query(w.key as never)) !== undefined) return // back again
    const all = new Map<string, OwnedRef>()
    for (const o of [...w.owned, ...(this.ownedByKey.get(w.key) ?? [])]) all.set(this.o.secondaries[o.spec]!.target.id(o.object), o)
    for (const [id, o] of this.byOwner.get(w.key) ?? []) all.set(id, o)
    const failures: string[] = []
    for (const [, o] of all) {
      const target = this.o.secondaries[o.spec]!.target
      try {
        // not marked as our own delete: a primary made again meanwhile is re-marked by the deletion
        if (await target.delete(o.object, this.ownedBy(w.key, target), ctx.signal)) {
          this.stats.deleted++
          this.o.events?.normal(this.involved(undefined, w.key), 'Synced', `"${target.describe(o.object)}" synced successfully (deleted)`)
        }
      } catch (err) {
        failures.push(`${target.describe(o.object)}: ${(err as Error).message}`)
      }
    }
    for (const [id, keys] of this.blockedBy) {
      keys.delete(w.key)
      if (keys.size === 0) this.blockedBy.delete(id)
    }
    if (failures.length) throw new SyncError(`secondaries of deleted ${this.o.kind} "${w.key}": ${failures.join('; ')}`)
    this.ownedByKey.delete(w.key)
  }

  /**
   * GarbageSecondaries: deletes observed secondaries stamped with our kind whose owner key is not a
   * primary. Runs only once every table is initialized.
   */
  async gc(): Promise<number> {
    if (!this.allInitialized(this.o.db.readTxn()) || this.markInitialized) return 0
    let n = 0
    const failures: string[] = []
    for (const [owner, objs] of [...this.byOwner]) {
      for (const [, o] of [...objs]) {
        // the latest snapshot for each object: a primary that appeared since keeps its secondaries.
        // (Not marked as our own delete: should its primary appear while the delete is on its way,
        // the observed deletion re-marks it and the secondary is made again.)
        const now = this.o.db.readTxn()
        if (this.o.primaries.get(now, this.o.primaries.primary.query(owner as never)) !== undefined) break
        if (this.work.get(now, this.work.primary.query(owner)) !== undefined) break // its delete is still running
        const target = this.o.secondaries[o.spec]!.target
        try {
          if (await target.delete(o.object, this.ownedBy(owner, target))) {
            n++
            this.stats.garbage++
          }
        } catch (err) {
          failures.push(`${target.describe(o.object)}: ${(err as Error).message}`)
        }
      }
    }
    this.gcDone = true
    this.lastGcError = failures.length ? failures.slice(0, 3).join('; ') : undefined
    if (failures.length) throw new SyncError(`garbage secondaries of ${this.o.kind}: ${failures.length} failure(s): ${this.lastGcError}`)
    return n
  }

  private report(err: Error): void {
    if (this.o.onError) {
      try {
        this.o.onError(err)
      } catch {
        /* not ours */
      }
    }
  }
}

// ---- Kubernetes adapters ----

/**
 * Secondaries in a Kubernetes cluster. apply reads the object: absent, it is created (POST, so an
 * object somebody creates meanwhile is a 409, read again, never overwritten); present and owned, it
 * is server-side applied (force) as `fieldManager`; present and not owned, nothing is written
 * ("foreign"). delete deletes only what is owned, with the read uid as a precondition.
 */
export class KubeSecondaries implements SecondaryTarget<KubeObject> {
  private readonly cluster: Cluster
  private readonly fieldManager: string

  constructor(o: { cluster: Cluster; fieldManager: string }) {
    this.cluster = o.cluster
    this.fieldManager = o.fieldManager
  }

  kindOf(s: KubeObject): string {
    return String(s.kind)
  }
  id(s: KubeObject): string {
    return `${groupKind(s as KindRef)}|${s.metadata.namespace ?? ''}|${s.metadata.name}`
  }
  describe(s: KubeObject): string {
    return s.metadata.namespace ? `${s.metadata.namespace}/${s.metadata.name}` : String(s.metadata.name)
  }
  stampsOf(s: KubeObject) {
    return s.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> }
  }
  versionOf(s: KubeObject): string | undefined {
    return s.metadata.resourceVersion
  }
  withStamps(s: KubeObject, st: OwnerStamps): KubeObject {
    const m = s.metadata
    return {
      ...s,
      metadata: { ...m, labels: { ...(m.labels ?? {}), ...st.labels }, annotations: { ...(m.annotations ?? {}), ...st.annotations } },
    }
  }

  private async read(s: KubeObject, signal?: AbortSignal): Promise<{ path: string; cur: KubeObject | undefined }> {
    const r = await resolveKind(this.cluster, s as KindRef)
    const path = objectPath(r, String(s.metadata.name), s.metadata.namespace)
    try {
      return { path, cur: await this.cluster.request({ path, signal, what: this.describe(s) }) }
    } catch (err) {
      if (isNotFound(err)) return { path, cur: undefined }
      throw err
    }
  }

  async apply(
    s: KubeObject,
    owned: (existing: KubeObject) => boolean,
    signal?: AbortSignal,
  ): Promise<{ result: SecondaryWriteResult; version?: string }> {
    const { resourceVersion: _rv, uid: _uid, managedFields: _mf, creationTimestamp: _ct, generation: _g, ...meta } = s.metadata
    const body = { ...s, metadata: meta }
    for (let attempt = 1; ; attempt++) {
      const { path, cur } = await this.read(s, signal)
      if (cur === undefined) {
        const coll = path.slice(0, path.lastIndexOf('/'))
        try {
          const res: KubeObject = await this.cluster.request({
            method: 'POST',
            path: coll,
            query: { fieldManager: this.fieldManager },
            body,
            signal,
            what: this.describe(s),
          })
          return { result: 'created', version: res?.metadata?.resourceVersion }
        } catch (err) {
          if (err instanceof ApiError && err.code === 409 && attempt < 5) continue // created meanwhile: read it
          throw err
        }
      }
      if (!owned(cur)) return { result: 'foreign' }
      const res: KubeObject = await this.cluster.request({
        method: 'PATCH',
        path,
        query: { fieldManager: this.fieldManager, force: true },
        body,
        contentType: 'application/apply-patch+yaml',
        signal,
        what: this.describe(s),
      })
      const v = res?.metadata?.resourceVersion
      return { result: v !== undefined && v === cur.metadata.resourceVersion ? 'unchanged' : 'updated', version: v }
    }
  }

  async delete(s: KubeObject, owned: (existing: KubeObject) => boolean, signal?: AbortSignal): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const { path, cur } = await this.read(s, signal)
      if (cur === undefined || !owned(cur)) return false
      try {
        await this.cluster.request({
          method: 'DELETE',
          path,
          body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background', preconditions: { uid: cur.metadata.uid } },
          signal,
          what: this.describe(s),
        })
        return true
      } catch (err) {
        if (isNotFound(err)) return false
        if (err instanceof ApiError && err.code === 409 && attempt < 5) continue
        throw err
      }
    }
  }
}

/** Status write-back of Kubernetes primaries through a StatusWriter (server-side apply on /status). */
export function kubeStatusWriter(writer: {
  apply(obj: KubeObject, status: any, opts?: { signal?: AbortSignal }): Promise<unknown>
}): PrimaryStatusWriter<KubeObject> {
  return { writeStatus: (p, status, signal) => writer.apply(p, status as Record<string, unknown>, { signal }) }
}
