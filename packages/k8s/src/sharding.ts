// Sharding across replicas with Leases: `shards` shard leases `<name>-shard-<i>` and one member lease
// per replica `<name>-member-<identity>`, all labelled `statewright.dev/lease-group: <name>`.
// - A key belongs to shard fnv1a(key) % shards (stable across processes and versions).
// - Every retryPeriod each replica renews its member lease and its shard leases, lists the group's
//   leases (one LIST) and computes the live members: itself and every member lease whose record
//   changed within its lease duration (observed on the local clock, as leader election does).
// - Members sorted by identity; the one at rank r gets floor(S/M) shards, plus one when r < S % M.
//   A replica over its share releases shards (the term closed to new writes, the writes sent under
//   it answered, callbacks, then the lease is cleared so the next replica takes it at once); a
//   replica under its share takes free or expired shard leases.
// - A round never lets a held term lapse: renewals go first, all at once; acquisitions and releases
//   then run concurrently, each bounded by the renew deadline, and their callbacks run beside the
//   round rather than inside it (a callback that awaits a re-derivation or a prune never delays the
//   next renewal). A shard being released is neither renewed nor taken again until its lease is clear.
// - Member leases of identities gone for `memberGcMs` (default 4 lease durations) are deleted by
//   whoever sees them (with their resourceVersion as precondition: a member that came back keeps its).
// - Each shard held is a term with LeaderElector's guarantees: a fencing token (leaseTransitions),
//   a renew deadline after which the replica stops acting on it, never two owners acting at once.
// - A replica that dies stops renewing: after a lease duration its member lease is no longer live
//   (the others' shares grow) and its shard leases expire (the others take them).
import { ConfigError, StoppedError, UsageError } from './errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cluster } from './cluster.ts'
import { LeaseLock } from './lease.ts'
import { leasePath, type LeaseObject } from './lease-record.ts'
import { Term, type LeaseTerm } from './lease-term.ts'
import { wallNow } from './wallclock.ts'
import { isConflict, isNotFound } from './api-error.ts'
import { nextOrStop, noteFailure } from './callbacks.ts'
import type { Health, Lifecycle, Logger } from '@statewright/statedb'

export const LEASE_GROUP_LABEL = 'statewright.dev/lease-group'

/** FNV-1a, 32 bits, over the UTF-16 code units of the key. */
export function fnv1a(key: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** The shard of a key: stable across processes. */
export function shardOf(key: string, shards: number): number {
  return fnv1a(key) % shards
}

/** How many shards the member at `rank` of `members` should hold. */
export function fairShare(shards: number, members: number, rank: number): number {
  if (members <= 0 || rank < 0) return 0
  return Math.floor(shards / members) + (rank < shards % members ? 1 : 0)
}

export interface ShardedLeasesOptions {
  cluster: Cluster
  namespace: string
  /** The group's name: leases `<name>-shard-<i>` and `<name>-member-<identity>`. */
  name: string
  /** Number of shards (fixed for the group's life). */
  shards: number
  /** Unique per replica (a valid part of a Lease name: lowercase, digits, '-', '.'). */
  identity: string
  leaseDurationMs?: number
  renewDeadlineMs?: number
  retryPeriodMs?: number
  /** A shard's term began: start acting on its keys (stop when `term.signal` aborts). */
  onShardAcquired?: (shard: number, term: LeaseTerm) => void | Promise<void>
  /**
   * A shard is being given up (over the fair share, or stop): its term is closed to new writes
   * (`valid()` is false) but not yet ended, so what was sent under it can be answered; awaited
   * before the term ends (onShardReleased) and the lease is released. Not called for a term lost or
   * expired (nothing may be awaited then: its writes are cut off).
   */
  onShardDraining?: (shard: number, term: LeaseTerm) => void | Promise<void>
  /** A shard's term ended; awaited before the lease is released. */
  onShardReleased?: (shard: number, term: LeaseTerm, reason: string) => void | Promise<void>
  /** Logs every failed API request at warn, with `err` and the lease group and cluster (the group retries anyway). */
  logger?: Logger
  /** Delete member leases unchanged for this long (default 4 × leaseDurationMs). */
  memberGcMs?: number
}

/** Sharded leases' health: the shared shape, the members, the target share and the shards held. Degraded while the last round failed. */
export interface ShardedLeasesHealth extends Health {
  identity: string
  members: string[]
  target: number
  owned: number[]
  errors: number
  lastError: string | undefined
  /** Member leases of departed identities deleted by this replica. */
  membersCollected: number
}

export class ShardedLeases implements Lifecycle {
  readonly identity: string
  readonly shards: number
  private readonly options: ShardedLeasesOptions
  private readonly retryMs: number
  private readonly leaseMs: number
  private readonly member: LeaseLock
  private readonly locks: LeaseLock[]
  private readonly held = new Map<number, Term>()
  private readonly releasing = new Set<Promise<void>>()
  /** Shards whose release is under way (callbacks, then the lease cleared): not taken again meanwhile. */
  private readonly releasingShards = new Set<number>()
  /** Callbacks of acquired shards still running (awaited by stop). */
  private readonly beginning = new Set<Promise<void>>()
  /** Observers of other members' leases (identity is ours: heldByOther = alive). */
  private readonly memberObs = new Map<string, LeaseLock>()
  private readonly ctrl = new AbortController()
  private loop: Promise<void> | undefined
  private live: string[] = []
  private target = 0
  private readonly st = { errors: 0, lastError: undefined as string | undefined, membersCollected: 0 }
  /** The last round failed (health is degraded until one succeeds). */
  private failing = false
  private roundDone: Array<() => void> = []

  constructor(o: ShardedLeasesOptions) {
    if (!(o.shards >= 1) || !Number.isInteger(o.shards)) throw new ConfigError('sharding: shards must be a positive integer')
    this.options = o
    this.identity = o.identity
    this.shards = o.shards
    this.retryMs = o.retryPeriodMs ?? 2000
    this.leaseMs = o.leaseDurationMs ?? 15_000
    const labels = { [LEASE_GROUP_LABEL]: o.name }
    const common = {
      cluster: o.cluster,
      namespace: o.namespace,
      identity: o.identity,
      leaseDurationMs: o.leaseDurationMs,
      renewDeadlineMs: o.renewDeadlineMs,
      labels,
    }
    this.member = new LeaseLock({ ...common, name: `${o.name}-member-${o.identity}` })
    this.locks = Array.from({ length: o.shards }, (_, i) => new LeaseLock({ ...common, name: `${o.name}-shard-${i}` }))
    if (!(this.retryMs < this.member.renewDeadlineMs)) throw new ConfigError('sharding: retryPeriodMs must be below renewDeadlineMs')
  }

  /** Starts the rounds; resolves at once (settled() waits for the first round). */
  async start(): Promise<void> {
    if (this.ctrl.signal.aborted) throw new UsageError('sharding stopped: make a new ShardedLeases')
    this.loop ??= this.run()
  }

  /** Resolves once a round (heartbeat, renewals, membership, rebalance) has run since the call. */
  async settled(signal?: AbortSignal): Promise<void> {
    if (!this.loop) throw new StoppedError('sharding is not running')
    await nextOrStop((done) => this.roundDone.push(done), this.ctrl.signal, signal)
  }

  shardOf(key: string): number {
    return shardOf(key, this.shards)
  }

  /** This replica may act on the key now (its shard's term is valid). */
  owns(key: string): boolean {
    return this.held.get(this.shardOf(key))?.valid() ?? false
  }

  /** The term this replica holds for a shard (valid or just ended), if any: a write fence. */
  termOfShard(shard: number): LeaseTerm | undefined {
    return this.held.get(shard)
  }

  /** The term of the key's shard when held. */
  termFor(key: string): LeaseTerm | undefined {
    const t = this.held.get(this.shardOf(key))
    return t && t.valid() ? t : undefined
  }

  /** Shards held with a valid term, ascending. */
  ownedShards(): number[] {
    return [...this.held]
      .filter(([, t]) => t.valid())
      .map(([i]) => i)
      .sort((a, b) => a - b)
  }

  health(): ShardedLeasesHealth {
    const running = this.loop !== undefined && !this.ctrl.signal.aborted
    const owned = this.ownedShards()
    const level = !running ? 'stopped' : this.failing ? 'degraded' : 'ok'
    const message = !running
      ? 'stopped'
      : this.failing
        ? `sharding round failed: ${this.st.lastError}`
        : `${owned.length} of ${this.shards} shards held; ${this.live.length} members`
    return { level, message, ready: running, identity: this.identity, members: [...this.live], target: this.target, owned, ...this.st }
  }

  /** Stops: ends every shard term (callbacks awaited), releases the shard leases and the member lease. */
  async stop(): Promise<void> {
    this.ctrl.abort(new StoppedError('sharding stopped'))
    await this.loop
  }

  private failed(err: Error): void {
    noteFailure(
      this.st,
      this.options.logger,
      err,
      { leases: this.options.name, cluster: this.options.cluster.name },
      'shard lease request failed',
    )
  }

  private async run(): Promise<void> {
    const signal = this.ctrl.signal
    while (!signal.aborted) {
      const errors = this.st.errors
      try {
        await this.step(signal)
      } catch (err) {
        if (!signal.aborted) this.failed(err as Error)
      }
      this.failing = this.st.errors > errors
      for (const done of this.roundDone.splice(0)) done()
      if (signal.aborted) break
      await sleep(this.retryMs * (1 + Math.random() * 0.2), undefined, { signal }).catch(() => {})
    }
    await Promise.all([...this.beginning])
    await Promise.all([...this.held.keys()].map((i) => this.release(i, 'stopped')))
    await Promise.all([...this.releasing])
    await this.member.release()
  }

  /** One round: member heartbeat, renewals, membership, rebalance. */
  private async step(signal: AbortSignal): Promise<void> {
    // 1. heartbeat and renewals (in parallel)
    const renewals = [...this.held].map(async ([i, term]) => {
      try {
        const r = await this.locks[i].tryAcquireOrRenew(AbortSignal.any([signal, term.signal]))
        if (r === 'renewed') term.arm()
        else if (r === 'lost') await this.end(i, term, `taken by ${this.locks[i].observedHolder() || 'nobody'}`)
      } catch (err) {
        if (!signal.aborted && !term.ended) this.failed(err as Error)
      }
    })
    const beat = this.member.tryAcquireOrRenew(signal).catch((err) => {
      if (!signal.aborted) this.failed(err as Error)
    })
    await Promise.all([...renewals, beat])
    if (signal.aborted) return

    // 2. observe the group
    const list = await this.options.cluster.request<{ items: LeaseObject[] }>({
      path: leasePath(this.options.namespace),
      query: { labelSelector: `${LEASE_GROUP_LABEL}=${this.options.name}` },
      signal,
      what: `leases of group ${this.options.name}`,
    })
    const now = wallNow()
    const shardPrefix = `${this.options.name}-shard-`
    const memberPrefix = `${this.options.name}-member-`
    const seenMembers = new Set<string>()
    for (const lease of list.items) {
      const n = lease.metadata.name
      if (n.startsWith(shardPrefix)) {
        const i = Number(n.slice(shardPrefix.length))
        if (Number.isInteger(i) && i >= 0 && i < this.shards) this.locks[i].observe(lease, now)
      } else if (n.startsWith(memberPrefix) && n !== this.member.name) {
        let obs = this.memberObs.get(n)
        if (!obs) {
          obs = new LeaseLock({
            cluster: this.options.cluster,
            namespace: this.options.namespace,
            name: n,
            identity: this.identity,
            leaseDurationMs: this.leaseMs,
            renewDeadlineMs: this.member.renewDeadlineMs,
          })
          this.memberObs.set(n, obs)
        }
        obs.observe(lease, now)
        seenMembers.add(n)
      }
    }
    for (const n of this.memberObs.keys()) if (!seenMembers.has(n)) this.memberObs.delete(n)
    const members = new Set<string>([this.identity])
    for (const obs of this.memberObs.values()) {
      if (obs.heldByOther(now)) members.add(obs.observedHolder()!)
    }
    this.live = [...members].sort()
    const rank = this.live.indexOf(this.identity)
    this.target = this.member.isHolding() ? fairShare(this.shards, this.live.length, rank) : 0

    // 3. member leases of identities long gone
    await this.collectMembers(list.items, now, signal)

    // 4. rebalance: give back what is over the share, take free shards up to it, all at once; the
    // callbacks run beside the round (see the top of the file)
    const mine = [...this.held.keys()].sort((a, b) => b - a)
    while (mine.length > this.target) this.track(this.release(mine.shift()!, `over the fair share of ${this.target}`))
    let need = this.target - this.held.size
    if (need <= 0) return
    const start = Math.floor((rank * this.shards) / Math.max(1, this.live.length))
    const candidates: number[] = []
    for (let k = 0; k < this.shards && candidates.length < need; k++) {
      const i = (start + k) % this.shards
      if (this.held.has(i) || this.releasingShards.has(i) || this.locks[i]!.heldByOther(wallNow())) continue
      candidates.push(i)
    }
    // bounded: an acquisition still waiting when the next renewals are due is given up
    const bound = AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, this.member.renewDeadlineMs - this.retryMs))])
    await Promise.all(
      candidates.map(async (i) => {
        const lock = this.locks[i]!
        try {
          const r = await lock.tryAcquireOrRenew(bound)
          if (r === 'acquired' && lock.isHolding() && !signal.aborted && need > 0) {
            need--
            this.begin(i)
          } else if (r === 'acquired') await lock.release()
        } catch (err) {
          if (!signal.aborted && !bound.aborted) this.failed(err as Error)
        }
      }),
    )
  }

  /** Deletes member leases unchanged for memberGcMs (not ours; with their resourceVersion as precondition). */
  private async collectMembers(items: LeaseObject[], now: number, signal: AbortSignal): Promise<void> {
    const gcMs = this.options.memberGcMs ?? 4 * this.leaseMs
    const memberPrefix = `${this.options.name}-member-`
    for (const lease of items) {
      const n = lease.metadata.name
      if (!n.startsWith(memberPrefix) || n === this.member.name) continue
      const seen = this.memberObs.get(n)?.observedLease()
      if (!seen || now - seen.changedAt < gcMs) continue
      try {
        await this.options.cluster.request({
          method: 'DELETE',
          path: leasePath(this.options.namespace, n),
          body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: lease.metadata.resourceVersion } },
          signal,
          fence: null,
          what: `member Lease ${this.options.namespace}/${n} (gone for ${Math.round((now - seen.changedAt) / 1000)} s)`,
        })
        this.memberObs.delete(n)
        this.st.membersCollected++
      } catch (err) {
        if (!signal.aborted && !isConflict(err) && !isNotFound(err)) this.failed(err as Error)
      }
    }
  }

  /** Runs a callback chain beside the round; stop() awaits it. */
  private track(p: Promise<void>): void {
    this.beginning.add(p)
    void p.finally(() => this.beginning.delete(p))
  }

  /** A term began: held at once (renewed from the next round on); its callback runs beside the round. */
  private begin(i: number): void {
    const term = new Term(this.locks[i]!, (t) => {
      void this.end(i, t, 'renew deadline passed')
    })
    this.held.set(i, term)
    this.track(
      (async () => {
        try {
          await this.options.onShardAcquired?.(i, term)
        } catch (err) {
          this.failed(err as Error)
        }
      })(),
    )
  }

  /** Ends a term (callbacks) and forgets the holding without releasing (lost or expired). */
  private async end(i: number, term: Term, reason: string): Promise<void> {
    if (!term.end(reason)) return
    if (this.held.get(i) === term) this.held.delete(i)
    this.locks[i].drop()
    try {
      await this.options.onShardReleased?.(i, term, reason)
    } catch (err) {
      this.failed(err as Error)
    }
  }

  /** Ends a term (callbacks awaited), then clears the lease so another replica takes it at once. */
  private async release(i: number, reason: string): Promise<void> {
    const term = this.held.get(i)
    if (!term) return
    this.held.delete(i)
    this.releasingShards.add(i)
    const p = (async () => {
      // closed first: no new write passes the fence, and the ones sent are answered before the
      // release (an aborted request the server already took would land after it)
      if (term.close(reason)) {
        try {
          await this.options.onShardDraining?.(i, term)
        } catch (err) {
          this.failed(err as Error)
        }
      }
      if (term.end(reason)) {
        try {
          await this.options.onShardReleased?.(i, term, reason)
        } catch (err) {
          this.failed(err as Error)
        }
      }
      await this.locks[i]!.release()
    })()
    this.releasing.add(p)
    await p.finally(() => {
      this.releasing.delete(p)
      this.releasingShards.delete(i)
    })
  }
}
