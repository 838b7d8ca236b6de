// Who works, when a Manager runs on several replicas: one leader at a time (a Lease, LeaderElector),
// or every replica on the shards whose Lease it holds (ShardedLeases).
// Invariants:
// - With leader election, the leader-only parts start when a term starts, one after the other in
//   their order (a derivation registers its output's initializer before the reconciler that prunes
//   against that table starts), and are stopped (awaited, after their start) when it ends; a part
//   that fails to start is logged, not fatal to the term.
// - A term's work starts on caches refreshed after the term began (Reflector.refresh): a new
//   leader or shard holder never acts on an older view of its inputs than its predecessor did.
// - With sharding, an acquired or released shard derives its own inputs again (./shards.ts): inputs
//   of a shard this replica no longer holds derive nothing, so it stops applying them (and never
//   deletes them); a released shard's work is done before its Lease is released.
import { LeaderElector, ShardedLeases, type Cluster, type LeaseTerm } from '@statewright/k8s'
import type { ShardWork } from './shards.ts'
import type { Logger } from '@statewright/statedb'
import type { ManagerOptions } from './options.ts'

/** A part that runs only while this replica leads (or, sharded, while it works at all). */
export interface LeaderPart {
  name: string
  start(): unknown
  stop(): Promise<void>
}

/** The shard leases of a sharded manager (not started): `held` follows the shards this replica holds. */
export function newShardLeases(o: {
  cluster: Cluster
  name: string
  sharding: NonNullable<ManagerOptions['sharding']>
  logger: Logger
  work: ShardWork
}): ShardedLeases {
  const sh = o.sharding
  return new ShardedLeases({
    cluster: o.cluster,
    namespace: sh.namespace,
    name: o.name,
    shards: sh.shards,
    identity: sh.identity ?? defaultIdentity(),
    ...(sh.leaseDurationMs ? { leaseDurationMs: sh.leaseDurationMs } : {}),
    ...(sh.renewDeadlineMs ? { renewDeadlineMs: sh.renewDeadlineMs } : {}),
    ...(sh.retryPeriodMs ? { retryPeriodMs: sh.retryPeriodMs } : {}),
    ...(sh.memberGcMs ? { memberGcMs: sh.memberGcMs } : {}),
    onShardAcquired: (shard, term) => o.work.acquired(shard, term),
    onShardDraining: (shard, term) => o.work.draining(shard, term),
    onShardReleased: (shard, term, reason) => o.work.released(shard, term, reason),
    logger: o.logger, // failed requests at warn, with the lease group and cluster
  })
}

/** The leader elector of a manager (not started): runs `parts` during each term; `leading` follows the terms. */
export function newLeaderElector(o: {
  cluster: Cluster
  name: string
  leaderElection: NonNullable<ManagerOptions['leaderElection']>
  logger: Logger
  parts: readonly LeaderPart[]
  /** The term while leading, undefined between terms. */
  leading: (term: LeaseTerm | undefined) => void
  /** Brings the caches up to date before the parts start (Reflector.refresh): resolves or rejects on the term's end. */
  catchUp: (term: LeaseTerm) => Promise<unknown>
  /** Resolves once the writes sent under a term given up on purpose are answered. */
  drain: (term: LeaseTerm) => Promise<unknown>
  /** The parts of a term have started (its work runs). */
  started: (term: LeaseTerm) => void
}): LeaderElector {
  const le = o.leaderElection
  // the parts of a term start in order, each awaited; a stop waits for the starts to end first
  let starting: Promise<void> = Promise.resolve()
  const startParts = async (term: LeaseTerm) => {
    for (const p of o.parts) {
      if (term.signal.aborted) return
      try {
        await p.start()
      } catch (err) {
        o.logger.error({ err, part: p.name }, 'a part failed to start')
      }
    }
    if (!term.signal.aborted) o.started(term)
  }
  return new LeaderElector({
    cluster: o.cluster,
    namespace: le.namespace,
    name: le.name ?? o.name,
    ...(le.identity ? { identity: le.identity } : {}),
    ...(le.leaseDurationMs ? { leaseDurationMs: le.leaseDurationMs } : {}),
    ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
    ...(le.retryPeriodMs ? { retryPeriodMs: le.retryPeriodMs } : {}),
    ...(le.releaseOnStop === false ? { releaseOnStop: false } : {}),
    onStartedLeading: (term) => {
      o.leading(term)
      o.logger.info({}, 'started leading')
      // The parts start once the caches hold every change made before the term (a new leader never
      // acts on an older view than its predecessor did); renewals go on meanwhile.
      void o
        .catchUp(term)
        .catch((err) => {
          if (!term.signal.aborted) o.logger.error({ err }, 'caches failed to catch up; starting anyway')
        })
        .then(() => {
          if (term.signal.aborted) return // an ended term's stop already ran
          starting = startParts(term)
        })
    },
    onStoppedLeading: async (term, reason) => {
      o.leading(undefined)
      o.logger.info({ reason }, 'stopped leading')
      await starting
      await Promise.all(o.parts.map((p) => p.stop()))
    },
    onDraining: async (term) => void (await o.drain(term)),
    onNewLeader: (id) => o.logger.info({ leader: id }, 'new leader'),
    logger: o.logger, // failed requests at warn, with the lease and cluster
  })
}

/** A replica's identity: the pod's name (or host name) and a random suffix. */
function defaultIdentity(): string {
  const host = (process.env.POD_NAME || process.env.HOSTNAME || 'statewright').toLowerCase().replace(/[^a-z0-9.-]/g, '-')
  return `${host}-${Math.random().toString(36).slice(2, 8)}`
}

/**
 * Starts a Manager's work as its options say: sharded (every part now; the shard leases decide what
 * each part derives), leader-elected (the parts during each term), or always (the parts now).
 * `leading` follows: a term (leader election), true (sharded or always), undefined between terms.
 */
export async function startWork(o: {
  cluster: Cluster
  name: string
  options: ManagerOptions
  logger: Logger
  parts: readonly LeaderPart[]
  work: () => ShardWork
  catchUp: (term: LeaseTerm) => Promise<unknown>
  /** Resolves once the writes sent under a term given up on purpose are answered. */
  drain: (term: LeaseTerm) => Promise<unknown>
  leading: (term: LeaseTerm | true | undefined) => void
  /** The parts have started: always, sharded (once), or at each leader term. */
  started: () => void
}): Promise<{ elector?: LeaderElector; shardLeases?: ShardedLeases }> {
  const { sharding, leaderElection } = o.options
  if (sharding) {
    for (const p of o.parts) await p.start()
    o.leading(true)
    o.started()
    const shardLeases = newShardLeases({ cluster: o.cluster, name: o.name, sharding, logger: o.logger, work: o.work() })
    await shardLeases.start()
    return { shardLeases }
  }
  if (leaderElection) {
    o.leading(undefined)
    const elector = newLeaderElector({
      cluster: o.cluster,
      name: o.name,
      leaderElection,
      logger: o.logger,
      parts: o.parts,
      catchUp: o.catchUp,
      drain: o.drain,
      leading: o.leading,
      started: () => o.started(),
    })
    await elector.start()
    return { elector }
  }
  for (const p of o.parts) await p.start()
  o.leading(true)
  o.started()
  return {}
}
