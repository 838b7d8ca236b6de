// A reflector mirrors one kind of one cluster into a statedb table, with client-go's reflector
// semantics. It is statedb's reflector core (sessions, resume, relist, batching, backoff, health,
// the inactivity bound, the table's initializer) with the Kubernetes source (reflector-source.ts:
// list, watch, 410 and "Too large resource version" as a refused resume) and the Kubernetes rows
// (reflector-rows.ts: transforms, compaction, Secrets marked sensitive, a watch event never
// replacing a newer object).
// Invariants of this class:
// - what the core promises holds (statedb's reflector/core.ts); this class adds the k8s names of
//   health and metrics, the label selector a sharded replica changes, and refresh();
// - a watch silent for `inactivityTimeoutMs` (default 5 min; kube-apiserver sends a bookmark about
//   every minute on the watches that ask, and ours do) is restarted from its resourceVersion;
// - state-of-world mode: no watch, a full list replacing the table every `intervalMs`.
import type { Lifecycle } from '@statewright/statedb'
import { ReflectorCore } from '@statewright/statedb'
import { ReflectorError } from './errors.ts'
import type { KubeObject } from './gvk.ts'
import type { ReflectorOptions } from './reflector-options.ts'
import type { ReflectorHealth } from './reflector-health.ts'
import { ReflectedRows } from './reflector-rows.ts'
import { KubeSource } from './reflector-source.ts'

/** The default inactivity bound: five bookmark periods of kube-apiserver (about one a minute). */
export const DEFAULT_INACTIVITY_TIMEOUT_MS = 300_000

export class Reflector<Obj = KubeObject> implements Lifecycle {
  readonly name: string
  private readonly options: ReflectorOptions<Obj>
  private readonly rows: ReflectedRows<Obj>
  private readonly core: ReflectorCore<KubeObject, string>
  /** The label selector of the next list and watch (options.labelSelector until setLabelSelector). */
  private labelSelector: string | undefined

  constructor(opts: ReflectorOptions<Obj>) {
    this.options = opts
    this.labelSelector = opts.labelSelector
    const name = (this.name = opts.name ?? `${opts.cluster.name}/${opts.kind.kind}`)
    const labels = { reflector: name, cluster: opts.cluster.name }
    const m = opts.metrics
    const rows = (this.rows = new ReflectedRows(opts, name, (err) => this.core.objectFailed(err)))
    this.core = new ReflectorCore<KubeObject, string>({
      name,
      initializer: `reflector:${name}`,
      db: opts.db,
      table: opts.table,
      source: new KubeSource(opts, name, () => this.labelSelector),
      rows,
      batchSize: opts.batchSize,
      batchDelayMs: opts.batchDelayMs,
      retry: opts.retry,
      lostAfterMs: opts.lostAfterMs,
      inactivityTimeoutMs: opts.inactivityTimeoutMs ?? DEFAULT_INACTIVITY_TIMEOUT_MS,
      pollIntervalMs: opts.stateOfWorld?.intervalMs,
      logger: opts.logger,
      logFields: { cluster: opts.cluster.name, kind: `${opts.kind.kind}.${opts.kind.apiVersion}` },
      error: (message, cause) => new ReflectorError(`reflector ${name}: ${message}`, { cause }),
      hooks: m && {
        listed: () => {
          m.reflectorRelists.inc(labels)
          m.reflectorLastSync.set(labels, Date.now() / 1000)
        },
        failed: () => m.reflectorErrors.inc(labels),
        up: (up) => m.reflectorUp.set(labels, up ? 1 : 0),
        written: (what) => {
          // counting what a queryAll selects walks it: after a list only
          if (what === 'list' || !opts.queryAll) m.reflectorObjects.set(labels, rows.count(opts.db.readTxn()))
        },
        inactive: () => m.reflectorInactivityRestarts.inc(labels),
      },
    })
  }

  /** Registers the table initializer and starts listing and watching. Resolves once started. */
  start(): Promise<void> {
    return this.core.start()
  }

  /** Stops watching, writes what is buffered and resolves when nothing is left running. */
  stop(): Promise<void> {
    return this.core.stop()
  }

  /**
   * The newest resourceVersion whose state is in the table (the last list's, or the newest watch
   * event written since; undefined before the first list). An object of this reflector's selection
   * that the table lacks although its version is not newer than this one was deleted since: the
   * answer to a write of it must not be put back into the table.
   */
  get writtenResourceVersion(): string | undefined {
    return this.rows.writtenResourceVersion
  }

  /** The label selector the reflector lists and watches with now. */
  get currentLabelSelector(): string | undefined {
    return this.labelSelector
  }

  /**
   * Reflects the objects `selector` selects from now on (a sharded replica narrowing its cache to the
   * shards it holds): the running watch ends and the next list replaces the table's objects with the
   * ones selected. Nothing happens when the selector is the current one.
   */
  setLabelSelector(selector: string | undefined): void {
    if (selector === this.labelSelector) return
    this.labelSelector = selector
    this.core.requestList()
  }

  /**
   * Lists again now (a consistent read: the server answers from its store, not a cache), replaces the
   * table with what it returns and resolves once that is written: from then on the table holds every
   * change made before the call. A new leader or shard holder calls it before it writes, so that it
   * never acts on a cache older than what the previous holder acted on. Rejects on `signal` or stop.
   */
  refresh(signal?: AbortSignal): Promise<void> {
    return this.core.refresh(signal)
  }

  /** Resolves after the first complete list is in the table (rejects on abort, or when stopped first). */
  waitSynced(signal?: AbortSignal): Promise<void> {
    return this.core.waitSynced(signal)
  }

  /** Resolves once every event received so far is in the table and the first list is; rejects on `signal` or stop. */
  settled(signal?: AbortSignal): Promise<void> {
    return this.core.settled(signal)
  }

  health(): ReflectorHealth {
    const objects = this.rows.count(this.options.db.readTxn())
    return {
      name: this.name,
      cluster: this.options.cluster.name,
      ...this.core.health(objects),
      resourceVersion: this.core.resumePosition,
      objects,
    }
  }
}
