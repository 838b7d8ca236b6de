// Watch on demand (after Flux's pipeline controller, PR #201): owners (say pipelines) ask to watch
// targets {cluster, kind, namespace/name}; the first ask for a {cluster, kind} starts one reflector
// (a cache: its own statedb DB and table) shared by every owner of that cluster and kind; an index
// from target to owners (ondemand-targets.ts) turns a target's change into "these owners are pending
// again".
// - ensureWatch(owner, target) registers the pair, starts the cache if needed and (by default)
//   resolves once the cache is synced, so get(target) reads it;
// - setTargets(owner, targets) replaces an owner's whole set (targets it no longer names are
//   dropped); forget(owner) drops them all (the owner was deleted);
// - a cache nobody needs any more is stopped after `graceMs` (asked again in the meantime: kept);
// - changes are delivered per cache, in batches: onChange(owners, targets) is awaited before the
//   next batch; the initial list counts as changes (owners of existing targets are told once);
// - caches follow the registry: a cluster removed closes its caches (their owners are told), a
//   cluster of that name added again reopens them on its new credentials (credential rotation);
// - cache health reaches the owners: a cache that syncs, loses its watch or recovers is reported
//   (onCacheEvent, with cluster and kind) and its owners are told (onChange), so their status moves;
// - ensureWatch/setTargets do not wait for a cache to sync unless asked (waitSynced): one owner
//   whose cluster is down must not hold up the others; the sync itself tells the owners;
// - stop() stops every reflector and timer; the registry's clusters stay open (it owns them).
import { InvalidObjectError, StoppedError } from './errors.ts'
import type { DB as DBType, Index, Table as TableType } from '@statewright/statedb'
import { DB, Table, defineIndex } from '@statewright/statedb'
import type { ClusterRegistry, RegistryEvent } from './registry.ts'
import { Reflector } from './reflector.ts'
import type { ReflectorHealth } from './reflector-health.ts'
import type { ReflectorOptions } from './reflector-options.ts'
import { namespacedName, type KubeObject } from './gvk.ts'
import { logTo, type Logger } from '@statewright/statedb'
import { TargetIndex, cacheKeyOf, objKeyOf, targetString, type TargetRef } from './ondemand-targets.ts'

export interface WatchOnDemandOptions {
  registry: ClusterRegistry
  /** Owners whose targets changed (awaited; a throw is logged at error). */
  onChange: (owners: string[], targets: TargetRef[]) => void | Promise<void>
  /** How long an unneeded cache lives on (default 60 000 ms). */
  graceMs?: number
  /** Options for every reflector (retry, page size, metrics, ...); their logger defaults to `logger`. */
  reflector?: Partial<Omit<ReflectorOptions, 'cluster' | 'db' | 'table' | 'kind' | 'name'>>
  /**
   * Logs failures at error with `err`, the cluster and the kind: an onChange that threw, a cache
   * that failed to start or stop; and, unless `reflector.logger` is given, its reflectors' failures.
   */
  logger?: Logger
  /** A cache changed state (see CacheEvent); its owners also get onChange. */
  onCacheEvent?: (e: CacheEvent) => void
  /** How often caches' health is looked at (default 1000 ms). */
  healthIntervalMs?: number
}

/**
 * What happened to a {cluster, kind} cache: `synced` (first complete list), `lost` (its list/watch
 * has been failing; `message` says why), `recovered`, `closed` (its cluster left the registry),
 * `reopened` (a cluster of that name came back), `stopped` (nobody needed it).
 */
export interface CacheEvent {
  type: 'synced' | 'lost' | 'recovered' | 'closed' | 'reopened' | 'stopped'
  cluster: string
  apiVersion: string
  kind: string
  /** The owners of targets in this cache. */
  owners: string[]
  message?: string
}

export interface CacheInfo {
  cluster: string
  apiVersion: string
  kind: string
  /** (owner, target) pairs using it. */
  refs: number
  /** Set while the cache waits out its grace period. */
  stopsAt: number | undefined
  health: ReflectorHealth
}

interface Cache {
  key: string
  cluster: string
  apiVersion: string
  kind: string
  db: DBType
  table: TableType<KubeObject>
  byName: Index<KubeObject, string>
  reflector: Reflector
  refs: number
  gc: NodeJS.Timeout | undefined
  stopsAt: number | undefined
  ctrl: AbortController
  loop: Promise<void>
  stopped: Promise<void> | undefined
  /** The last state reported (health changes are reported once). */
  state: 'starting' | 'synced' | 'lost'
}

export class WatchOnDemand {
  private readonly options: WatchOnDemandOptions
  private readonly graceMs: number
  private readonly caches = new Map<string, Cache>()
  /** Who watches what (ondemand-targets.ts). */
  private readonly targets = new TargetIndex()
  private readonly stopping = new Set<Promise<void>>()
  private stopped = false
  private readonly unsubscribe: () => void
  private healthTimer: NodeJS.Timeout | undefined

  constructor(o: WatchOnDemandOptions) {
    this.options = o
    this.graceMs = o.graceMs ?? 60_000
    this.unsubscribe = o.registry.subscribe((e) => this.followRegistry(e))
  }

  /**
   * Makes sure `owner` hears about changes to `target`, starting the {cluster, kind} cache if
   * needed. With `waitSynced: true` it resolves once the cache is synced (rejects on abort: give a
   * bounded signal); by default it returns at once and the owner is told when the cache syncs.
   */
  async ensureWatch(owner: string, target: TargetRef, opts: { waitSynced?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    const cache = this.add(owner, target)
    if (!opts.waitSynced) return
    await cache.reflector.waitSynced(opts.signal)
  }

  /**
   * Replaces the owner's targets; caches for dropped targets may be torn down after the grace period.
   * Returns at once unless `waitSynced` (see ensureWatch).
   */
  async setTargets(owner: string, targets: TargetRef[], opts: { waitSynced?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    const want = new Map(targets.map((t) => [targetString(t), t]))
    for (const [k, t] of [...(this.targets.targetsOf(owner) ?? [])]) if (!want.has(k)) this.unwatch(owner, t)
    const caches = targets.map((t) => this.add(owner, t))
    if (!opts.waitSynced) return
    await Promise.all(caches.map((c) => c.reflector.waitSynced(opts.signal)))
  }

  /** The owner no longer watches the target. */
  unwatch(owner: string, target: TargetRef): void {
    if (!this.targets.remove(owner, target)) return
    const ck = cacheKeyOf(target)
    const cache = this.caches.get(ck)
    if (cache) {
      cache.refs--
      if (cache.refs === 0) this.scheduleGc(cache)
    }
  }

  /** Drops every target of the owner. */
  forget(owner: string): void {
    for (const t of [...(this.targets.targetsOf(owner)?.values() ?? [])]) this.unwatch(owner, t)
  }

  /** The target as cached (undefined when absent or its cache is not synced/started). */
  get(target: TargetRef): KubeObject | undefined {
    const c = this.caches.get(cacheKeyOf(target))
    if (!c) return undefined
    return c.table.get(c.db.readTxn(), c.byName.query(objKeyOf(target)))
  }

  /** Whether the target's cache has completed its first list (get() answers from it). */
  isSynced(target: TargetRef): boolean {
    return this.caches.get(cacheKeyOf(target))?.reflector.health().synced ?? false
  }

  /** The owners using a {cluster, kind} cache. */
  usersOf(cache: { cluster: string; apiVersion: string; kind: string }): string[] {
    return this.targets.usersWithTargets(cacheKeyOf(cache)).owners
  }

  /** The targets an owner watches. */
  targetsOf(owner: string): TargetRef[] {
    return [...(this.targets.targetsOf(owner)?.values() ?? [])]
  }

  /** The owners of a target. */
  ownersOf(target: TargetRef): string[] {
    return this.targets.ownersOf(target)
  }

  /** Running caches. */
  cacheInfo(): CacheInfo[] {
    return [...this.caches.values()].map((c) => ({
      cluster: c.cluster,
      apiVersion: c.apiVersion,
      kind: c.kind,
      refs: c.refs,
      stopsAt: c.stopsAt,
      health: c.reflector.health(),
    }))
  }

  /** Stops every cache and timer. ensureWatch fails afterwards. */
  async stop(): Promise<void> {
    this.stopped = true
    this.unsubscribe()
    clearInterval(this.healthTimer)
    const all = [...this.caches.values()]
    this.caches.clear()
    await Promise.all(all.map((c) => this.stopCache(c)))
    await Promise.all([...this.stopping])
  }

  // ---- internals ----

  private report(err: Error, c: { cluster: string; kind: string; apiVersion: string }, msg: string): void {
    logTo(this.options.logger, 'error', { err, cluster: c.cluster, kind: `${c.kind}.${c.apiVersion}` }, msg)
  }

  private add(owner: string, target: TargetRef): Cache {
    if (this.stopped) throw new StoppedError('watch on demand: stopped')
    if (!target.name) throw new InvalidObjectError(`watch on demand: target ${targetString(target)} has no name`)
    const ck = cacheKeyOf(target)
    let cache = this.caches.get(ck)
    if (!cache) cache = this.startCache(target)
    if (this.targets.add(owner, target)) cache.refs++
    if (cache.gc) {
      clearTimeout(cache.gc)
      cache.gc = undefined
      cache.stopsAt = undefined
    }
    return cache
  }

  private startCache(t: TargetRef): Cache {
    const cluster = this.options.registry.require(t.cluster)
    const byName = defineIndex<KubeObject, string>({ name: 'name', key: namespacedName, unique: true })
    const tableName = `c_${t.cluster}_${t.kind}_${t.apiVersion}`.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 63)
    const table = new Table<KubeObject>({ name: tableName, primary: byName })
    const db = new DB({ tables: [table] })
    const reflector = new Reflector({
      ...this.options.reflector,
      cluster,
      db,
      table,
      kind: { apiVersion: t.apiVersion, kind: t.kind },
      name: `${t.cluster}/${t.kind}.${t.apiVersion}`,
      ...(this.options.reflector?.logger || this.options.logger ? { logger: this.options.reflector?.logger ?? this.options.logger } : {}),
    })
    const ctrl = new AbortController()
    const cache: Cache = {
      key: cacheKeyOf(t),
      cluster: t.cluster,
      apiVersion: t.apiVersion,
      kind: t.kind,
      db,
      table,
      byName,
      reflector,
      refs: 0,
      gc: undefined,
      stopsAt: undefined,
      ctrl,
      loop: Promise.resolve(),
      stopped: undefined,
      state: 'starting',
    }
    this.caches.set(cache.key, cache)
    this.watchHealth()
    cache.loop = (async () => {
      await reflector.start()
      await this.deliver(cache)
    })().catch((err) => {
      if (!ctrl.signal.aborted) this.report(err as Error, t, 'watch on demand: a cache failed')
    })
    return cache
  }

  /** Turns the cache's table changes into owner notifications, batch by batch. */
  private async deliver(cache: Cache): Promise<void> {
    const { db, table, ctrl } = cache
    const iter = table.changes(db.readTxn())
    try {
      while (!ctrl.signal.aborted) {
        const [batch, watch] = iter.next(db.readTxn())
        const owners = new Set<string>()
        const targets: TargetRef[] = []
        const objs = this.targets.objectsOf(cache.key)
        if (objs) {
          for (const ch of batch) {
            const os = objs.get(namespacedName(ch.object))
            if (!os) continue
            for (const [owner, target] of os) {
              owners.add(owner)
              targets.push(target)
            }
          }
        }
        if (owners.size) {
          try {
            await this.options.onChange([...owners].sort(), targets)
          } catch (err) {
            this.report(err as Error, cache, 'watch on demand: onChange failed')
          }
        }
        await watch.wait(ctrl.signal).catch(() => {})
      }
    } finally {
      iter.close()
    }
  }

  /** Reports a cache's new state and tells its owners (their status depends on it). */
  private cacheEvent(
    c: { key: string; cluster: string; apiVersion: string; kind: string },
    type: CacheEvent['type'],
    message?: string,
  ): void {
    const { owners, targets } = this.targets.usersWithTargets(c.key)
    try {
      this.options.onCacheEvent?.({
        type,
        cluster: c.cluster,
        apiVersion: c.apiVersion,
        kind: c.kind,
        owners,
        ...(message ? { message } : {}),
      })
    } catch (err) {
      this.report(err as Error, c, 'watch on demand: onCacheEvent failed')
    }
    if (owners.length && type !== 'synced' && type !== 'stopped')
      void Promise.resolve()
        .then(() => this.options.onChange(owners, targets))
        .catch((err) => this.report(err as Error, c, 'watch on demand: onChange failed'))
  }

  /** Looks at every cache's health now and then: synced, lost and recovered are reported once each. */
  private watchHealth(): void {
    if (this.healthTimer) return
    this.healthTimer = setInterval(() => {
      for (const c of this.caches.values()) {
        const h = c.reflector.health()
        if (c.state === 'starting' && h.synced) {
          c.state = 'synced'
          this.cacheEvent(c, 'synced')
        } else if (c.state === 'synced' && !h.ready && h.state !== 'stopped') {
          c.state = 'lost'
          this.cacheEvent(c, 'lost', h.lastError ?? h.message)
        } else if (c.state === 'lost' && h.ready) {
          c.state = 'synced'
          this.cacheEvent(c, 'recovered')
        }
      }
    }, this.options.healthIntervalMs ?? 1000)
    this.healthTimer.unref()
  }

  /** Caches follow their cluster: closed when it leaves the registry, reopened when it comes back. */
  private followRegistry(e: RegistryEvent): void {
    if (this.stopped) return
    if (e.type === 'removed') {
      for (const c of [...this.caches.values()]) {
        if (c.cluster !== e.name) continue
        this.retire(c)
        this.cacheEvent(c, 'closed', `cluster ${e.name} was removed from the registry`)
      }
      return
    }
    for (const [key, objs] of this.targets.caches()) {
      if (this.caches.has(key) || objs.size === 0) continue
      const first = objs.values().next().value!.values().next().value as TargetRef
      if (first.cluster !== e.name) continue
      const cache = this.startCache(first)
      for (const os of objs.values()) cache.refs += os.size
      this.cacheEvent(cache, 'reopened')
    }
  }

  private scheduleGc(cache: Cache): void {
    if (cache.gc || this.stopped) return
    cache.stopsAt = Date.now() + this.graceMs
    cache.gc = setTimeout(() => {
      cache.gc = undefined
      cache.stopsAt = undefined
      if (cache.refs > 0 || this.caches.get(cache.key) !== cache) return
      this.retire(cache)
      this.cacheEvent(cache, 'stopped')
    }, this.graceMs)
  }

  /** Takes a cache out of use and stops it (stop() waits for that). */
  private retire(c: Cache): void {
    this.caches.delete(c.key)
    const p = this.stopCache(c)
    this.stopping.add(p)
    void p.finally(() => this.stopping.delete(p))
  }

  private stopCache(c: Cache): Promise<void> {
    if (!c.stopped) {
      clearTimeout(c.gc)
      c.gc = undefined
      c.ctrl.abort(new StoppedError(`cache ${c.cluster}/${c.kind} stopped`))
      c.stopped = (async () => {
        await c.loop
        await c.reflector.stop()
      })().catch((err) => this.report(err as Error, c, 'watch on demand: stopping a cache failed'))
    }
    return c.stopped
  }
}
