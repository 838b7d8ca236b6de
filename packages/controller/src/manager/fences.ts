// Which lease term a Manager's write is made under (k8s's WriteFence): the leader's term with leader
// election, the term of the object's shard when sharded, none (unfenced) otherwise.
// Invariants:
// - With leader election, between terms the fence is NOT_LEADING: a write made then never goes out.
// - Sharded, a write about a shard this replica does not hold has no fence (null): it is refused,
//   not sent unfenced.
// - A desired object's shard is its shard label (set when it was derived); a primary's is computed
//   from the primary itself (its status belongs to the shard that reconciles it).
import { NOT_LEADING, type KubeObject, type LeaseTerm, type WriteFence } from '@statewright/k8s'
import { shardLabelOf, shardOfInput } from './desired.ts'
import type { ManagerOptions } from './options.ts'

export class WriteFences {
  /** The leader's term while leading (leader election). */
  term: LeaseTerm | undefined

  constructor(
    private readonly options: Pick<ManagerOptions, 'leaderElection' | 'sharding'>,
    /** Shards this replica holds now. */
    private readonly held: ReadonlySet<number>,
    /** The current term of a held shard. */
    private readonly termOfShard: (shard: number) => LeaseTerm | undefined,
  ) {}

  /** The leader's fence (leader election), undefined without leader election. */
  leader(): WriteFence | undefined {
    if (!this.options.leaderElection) return undefined
    return this.term ?? NOT_LEADING
  }

  /** The fence of a write of a desired object: its shard's term (sharding), else the leader's; null: not ours. */
  ofDesired(obj: KubeObject): WriteFence | null | undefined {
    if (!this.options.sharding) return this.leader()
    return this.ofShard(shardLabelOf(obj))
  }

  /** The fence of a write about a primary (its status): its shard's term when sharded, else the leader's. */
  ofPrimary(obj: KubeObject): WriteFence | null | undefined {
    const sh = this.options.sharding
    if (!sh) return this.leader()
    return this.ofShard(shardOfInput(obj, sh.shards))
  }

  private ofShard(shard: number): WriteFence | null {
    return (this.held.has(shard) ? this.termOfShard(shard) : undefined) ?? null
  }
}
