// Sharding across replicas with Leases: `shards` shard leases `<name>-shard-<i>` and one member lease
// per replica `<name>-member-<identity>`, all labelled `statewright.dev/lease-group: <name>`.
// - A key belongs to shard fnv1a(key) % shards (stable across processes and versions).
// - Every retryPeriod each replica renews its member lease and its shard leases, lists the group's
//   leases (one LIST) and computes the live members: itself and every member lease whose record
//   changed within its lease duration (observed on the local clock, as leader election does).
// - Members sorted by identity; the one at rank r gets floor(S/M) shards, plus one when r < S % M.
//   A replica over its share releases shards (callbacks first, then the lease is cleared so the next
//   replica takes it at once); a replica under its share takes free or expired shard leases.
// - Each shard held is a term with LeaderElector's guarantees: a fencing token (leaseTransitions),
//   a renew deadline after which the replica stops acting on it, never two owners acting at once.
// - A replica that dies stops renewing: after a lease duration its member lease is no longer live
//   (the others' shares grow) and its shard leases expire (the others take them).
import { ConfigError, StoppedError } from './errors.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cluster } from './cluster.ts'
import { LeaseLock, Term, leasePath, wallNow, type LeaseObject, type LeaseTerm } from './lease.ts'
import { noteFailure } from './callbacks.ts'
import type { Logger } from '@statewright/reconciler'

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
  /** A shard's term ended; awaited before the lease is released. */
  onShardReleased?: (shard: number, term: LeaseTerm, reason: string) => void | Promise<void>
  /** Logs every failed API request at warn, with `err` and the lease group and cluster (the group retries anyway). */
  logger?: Logger
}

export interface ShardedLeasesStatus {
  identity: string
  members: string[]
  target: number
  owned: number[]
  errors: number
  lastError: string | undefined
}

export class ShardedLeases {
  readonly identity: string
  readonly shards: number
  private readonly options: ShardedLeasesOptions
  private readonly retryMs: number
  private readonly leaseMs: number
  private readonly member: LeaseLock
  private readonly locks: LeaseLock[]
  private readonly held = new Map<number, Term>()
  private readonly releasing = new Set<Promise<void>>()
  /** Observers of other members' leases (identity is ours: heldByOther = alive). */
  private readonly memberObs = new Map<string, LeaseLock>()
  private readonly ctrl = new AbortController()
  private loop: Promise<void> | undefined
  private live: string[] = []
  private target = 0
  private readonly st = { errors: 0, lastError: undefined as string | undefined }

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

  start(): this {
    if (!this.loop) this.loop = this.run()
    return this
  }

  shardOf(key: string): number {
    return shardOf(key, this.shards)
  }

  /** This replica may act on the key now (its shard's term is valid). */
  owns(key: string): boolean {
    return this.held.get(this.shardOf(key))?.valid() ?? false
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

  status(): ShardedLeasesStatus {
    return { identity: this.identity, members: [...this.live], target: this.target, owned: this.ownedShards(), ...this.st }
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
      try {
        await this.step(signal)
      } catch (err) {
        if (!signal.aborted) this.failed(err as Error)
      }
      if (signal.aborted) break
      await sleep(this.retryMs * (1 + Math.random() * 0.2), undefined, { signal }).catch(() => {})
    }
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

    // 3. rebalance: give back what is over the share, take free shards up to it
    const mine = [...this.held.keys()].sort((a, b) => b - a)
    while (mine.length > this.target) await this.release(mine.shift()!, `over the fair share of ${this.target}`)
    let need = this.target - this.held.size
    if (need <= 0) return
    const start = Math.floor((rank * this.shards) / Math.max(1, this.live.length))
    for (let k = 0; k < this.shards && need > 0 && !signal.aborted; k++) {
      const i = (start + k) % this.shards
      if (this.held.has(i)) continue
      const lock = this.locks[i]
      if (lock.heldByOther(wallNow())) continue
      try {
        const r = await lock.tryAcquireOrRenew(signal)
        if (r === 'acquired' && lock.isHolding()) {
          need--
          await this.begin(i)
        } else if (r === 'acquired') lock.drop()
      } catch (err) {
        if (!signal.aborted) this.failed(err as Error)
      }
    }
  }

  private async begin(i: number): Promise<void> {
    const term = new Term(this.locks[i], (t) => {
      void this.end(i, t, 'renew deadline passed')
    })
    this.held.set(i, term)
    try {
      await this.options.onShardAcquired?.(i, term)
    } catch (err) {
      this.failed(err as Error)
    }
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
    const p = (async () => {
      if (term.end(reason)) {
        try {
          await this.options.onShardReleased?.(i, term, reason)
        } catch (err) {
          this.failed(err as Error)
        }
      }
      await this.locks[i].release()
    })()
    this.releasing.add(p)
    await p.finally(() => this.releasing.delete(p))
  }
}
