// What a sharded Manager does when a shard changes hands (the ShardedLeases callbacks).
// Invariants:
// - `held` is this replica's view of the shards it may write: a shard enters it when its term
//   begins and leaves it first thing when the term ends, so a derivation stops producing the
//   shard's objects and the Target refuses their writes (their fence is the shard's term);
// - a released or lost shard is done before its Lease is released: its inputs are derived again
//   (their desired objects leave the table, deleting nothing in the cluster: deletes are gated on
//   `held`), and every write made under its term has settled: given up on purpose, the term is
//   closed to new writes and those sent are answered first (draining); lost, its end aborted them;
// - an acquired shard enters `held` only once every cache was listed again after its term began
//   (Reflector.refresh): its new holder never acts on an older view than the previous one did;
// - an acquired shard is derived again (only its inputs: fn runs for them, not for every input),
//   then pruned against the cluster once the desired table is initialized, so what an input deleted
//   while the shard had no holder left behind goes at once, not at the next full reconciliation;
// - prunes of shards acquired together run as one (one LIST per owned kind and cluster);
// - with per-shard caches, the owned kinds (and inputs watched `sharded`) select the held shards
//   by label; the selector follows `held`, coalesced per event-loop turn.
import type { Reflector, KubeObject, LeaseTerm, Target, DesiredTable } from '@statewright/k8s'
import type { DB } from '@statewright/statedb'
import type { Derivation } from '../derive/derivation.ts'
import type { Logger } from '@statewright/statedb'
import { shardLabelOf, shardOfInput, withShards } from './desired.ts'

export interface ShardWorkOptions {
  shards: number
  held: Set<number>
  db: DB
  desired: DesiredTable
  target: Target
  /** Resolves once the writes sent under a term given up on purpose are answered (the Manager's drain). */
  drain: (term: LeaseTerm) => Promise<unknown>
  derivations: ReadonlyArray<Derivation<any, any>>
  /** Reflectors whose selector follows the held shards, each with its selector's fixed part. */
  shardedCaches: () => ReadonlyArray<{ reflector: Reflector<KubeObject>; base: string | undefined }>
  /** Lists every cache again (coalesced by the reflectors): resolves once they hold what was before the call. */
  catchUp: (term: LeaseTerm) => Promise<unknown>
  logger: Logger
}

export class ShardWork {
  private readonly options: ShardWorkOptions
  private pendingPrune = new Set<number>()
  private pruning: Promise<void> | undefined
  private selectorsQueued = false

  constructor(o: ShardWorkOptions) {
    this.options = o
  }

  async acquired(shard: number, term: LeaseTerm): Promise<void> {
    const o = this.options
    // Not held (nothing derived or written for it) until the caches hold every change made before
    // the term began: the previous holder acted on no newer view than that.
    try {
      await o.catchUp(term)
    } catch (err) {
      if (!term.valid()) return
      o.logger.warn({ err, shard }, 'caches failed to catch up; taking the shard anyway')
    }
    if (!term.valid()) return
    o.held.add(shard)
    o.logger.info({ shard, held: this.heldList() }, 'shard acquired')
    this.followSelectors()
    await this.rederive(shard)
    if (!term.valid()) return
    this.pendingPrune.add(shard)
    await this.prune()
  }

  /** A shard is being given up: nothing new is derived for it; the writes sent under its term are answered. */
  async draining(shard: number, term: LeaseTerm): Promise<void> {
    const o = this.options
    o.held.delete(shard)
    this.pendingPrune.delete(shard)
    this.followSelectors()
    await o.drain(term)
  }

  async released(shard: number, term: LeaseTerm, reason: string): Promise<void> {
    const o = this.options
    o.held.delete(shard)
    o.logger.info({ shard, reason, held: this.heldList() }, 'shard released')
    this.pendingPrune.delete(shard)
    this.followSelectors()
    await Promise.all([this.rederive(shard), o.target.settled(term)])
  }

  /** Derives again the inputs of one shard (the held set says whether they produce anything). */
  private async rederive(shard: number): Promise<void> {
    const shards = this.options.shards
    await Promise.all(this.options.derivations.map((d) => d.rederive((input: unknown) => shardOfInput(input, shards) === shard)))
  }

  /** Prunes the shards acquired since the last prune, in one pass, once the desired table is complete. */
  private prune(): Promise<void> {
    this.pruning ??= (async () => {
      await new Promise((r) => setImmediate(r)) // the shards of one round together
      const shards = this.pendingPrune
      this.pendingPrune = new Set()
      this.pruning = undefined
      const { db, desired, target, held } = this.options
      const txn = db.readTxn()
      // Before the table is initialized the reconciler's own first prune covers every held shard.
      if (shards.size === 0 || !desired.table.initialized(txn)[0]) return
      const only = (obj: KubeObject) => shards.has(shardLabelOf(obj)) && held.has(shardLabelOf(obj))
      try {
        await target.prune(desired.table.all(txn), { signal: AbortSignal.timeout(60_000), txn, full: true }, only)
      } catch (err) {
        this.options.logger.warn({ err, shards: [...shards] }, 'prune of acquired shards failed; the next full reconciliation prunes them')
      }
    })()
    return this.pruning
  }

  /** The selector of per-shard caches: the held shards (none: a shard that does not exist). */
  private followSelectors(): void {
    if (this.selectorsQueued) return
    this.selectorsQueued = true
    setImmediate(() => {
      this.selectorsQueued = false
      const held = this.heldList()
      for (const { reflector, base } of this.options.shardedCaches()) reflector.setLabelSelector(withShards(base, held))
    })
  }

  private heldList(): number[] {
    return [...this.options.held].sort((a, b) => a - b)
  }
}
