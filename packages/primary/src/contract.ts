// The contract between a primary/secondary controller (@statewright/primary's PrimaryController,
// Kumori's controllerruntime) and the places it writes to: where secondaries live (a cluster, a KV
// bucket), where a primary's status goes, and where events go. Its implementers (they depend on this
// package for it): KubeSecondaries and kubeStatusWriter (@statewright/k8s), KvSecondaries and
// KvStatusWriter (@statewright/nats), EventRecorder (@statewright/k8s).
// Invariants:
// - A target never overwrites or deletes an object that is not ours: apply and delete run the
//   controller's ownership check (`owned`) on the object they read, inside their own
//   compare-and-swap or precondition (a check before the write would race another writer).
// - The version apply returns is compared with versionOf of the object observed next: equal means
//   the change is the controller's own write (nothing to repair), anything else an edit to repair.
import type { SpanContextLike, Table } from '@statewright/statedb'

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
 * Implemented by KubeSecondaries (@statewright/k8s) and KvSecondaries (@statewright/nats).
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

/** The object an event is about (a Kubernetes object, or a pseudo-object naming a primary). */
export interface InvolvedObject {
  apiVersion?: string
  kind?: string
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string }
}

/** Where events go: @statewright/k8s's EventRecorder is one. */
export interface EventSink {
  /** `cause`: the span of the run the Event is about (OpenTelemetry's span context), when traced. */
  normal(obj: InvolvedObject, reason: string, message: string, cause?: SpanContextLike): void
  warning(obj: InvolvedObject, reason: string, message: string, cause?: SpanContextLike): void
}
