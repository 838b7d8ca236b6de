// Status conditions as metav1.Condition, and a writer that puts them (and other status fields) on an
// object's /status subresource by server-side apply.
// Invariants:
// - setCondition is pure: it never mutates its input, and returns the input array itself when the
//   condition is already there as given (so "nothing changed" is `next === prev`).
// - lastTransitionTime moves only when `status` changes; a new reason, message or observedGeneration
//   updates the condition in place and keeps the time. That is what makes a repeated write identical,
//   and an identical apply a no-op on the server (same resourceVersion, no watch event).
// - The writer applies only the status fields it is given, as its own field manager: conditions of
//   other types (other managers') are left alone, because conditions are a map list keyed by `type`
//   (the CRD must say so: x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [type]).
import { ConfigError, InvalidObjectError } from './errors.ts'
import {
  NOT_LEADING,
  objectPath,
  resolveKind,
  describe,
  namespacedName,
  type Cluster,
  type KubeObject,
  type KindRef,
  type ResourceRef,
  type WriteFence,
} from '@statewright/k8s'
import { inSpan, type SpanContextLike } from '@statewright/statedb'

export type ConditionStatus = 'True' | 'False' | 'Unknown'

/** metav1.Condition. */
export interface Condition {
  type: string
  status: ConditionStatus
  /** CamelCase machine-readable reason. */
  reason: string
  message: string
  /** RFC 3339, seconds precision (what the API server stores). */
  lastTransitionTime: string
  observedGeneration?: number
}

/** A condition to set: lastTransitionTime is computed; message defaults to "". */
export interface ConditionInput {
  type: string
  status: ConditionStatus
  reason: string
  message?: string
  observedGeneration?: number
}

const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/
const TYPE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/

/** Checks a condition the way the API server's validation would, with a message naming it. */
function validate(c: ConditionInput): void {
  const what = `condition ${JSON.stringify(c?.type)}`
  if (typeof c?.type !== 'string' || !TYPE.test(c.type) || c.type.length > 316)
    throw new InvalidObjectError(`${what}: type must be a qualified name (e.g. "Ready" or "example.com/Ready")`)
  if (c.status !== 'True' && c.status !== 'False' && c.status !== 'Unknown')
    throw new InvalidObjectError(`${what}: status must be "True", "False" or "Unknown", not ${JSON.stringify(c.status)}`)
  if (typeof c.reason !== 'string' || !REASON.test(c.reason) || c.reason.length > 1024)
    throw new InvalidObjectError(`${what}: reason must be CamelCase (letters, digits, '_', ',', ':'), not ${JSON.stringify(c.reason)}`)
  if (c.message !== undefined && (typeof c.message !== 'string' || c.message.length > 32768))
    throw new InvalidObjectError(`${what}: message must be a string of at most 32768 characters`)
  if (c.observedGeneration !== undefined && !(Number.isInteger(c.observedGeneration) && c.observedGeneration >= 0))
    throw new InvalidObjectError(`${what}: observedGeneration must be a non-negative integer`)
}

/** RFC 3339 at seconds precision, as metav1.Time serializes. */
export function conditionTime(now: Date = new Date()): string {
  return now.toISOString().replace(/\.\d+Z$/, 'Z')
}

/**
 * Sets (adds or merges) `cond` in `conditions`. Returns a new array, or `conditions` itself when it
 * already holds the condition exactly (so the caller can skip a write). lastTransitionTime is `now`
 * only for a new condition or a changed status.
 */
export function setCondition(conditions: readonly Condition[] | undefined, cond: ConditionInput, now: Date = new Date()): Condition[] {
  validate(cond)
  const list = conditions ?? []
  const i = list.findIndex((c) => c.type === cond.type)
  const old = i < 0 ? undefined : list[i]!
  const next: Condition = {
    type: cond.type,
    status: cond.status,
    reason: cond.reason,
    message: cond.message ?? '',
    lastTransitionTime: old && old.status === cond.status && old.lastTransitionTime ? old.lastTransitionTime : conditionTime(now),
    ...(cond.observedGeneration !== undefined ? { observedGeneration: cond.observedGeneration } : {}),
  }
  if (old && sameCondition(old, next)) return list as Condition[]
  if (i < 0) return [...list, next]
  const out = list.slice()
  out[i] = next
  return out
}

function sameCondition(a: Condition, b: Condition): boolean {
  return (
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime &&
    a.observedGeneration === b.observedGeneration
  )
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type)
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True'
}

/** The conditions of an object's status (an empty array when it has none). */
export function conditionsOf(obj: KubeObject): Condition[] {
  const c = (obj.status as { conditions?: unknown } | undefined)?.conditions
  return Array.isArray(c) ? (c as Condition[]) : []
}

export interface StatusWriterOptions {
  cluster: Cluster
  /** The field manager owning what this writer applies (one per controller and purpose). */
  fieldManager: string
  /** Take fields over from other managers (default true, as controllers do for their own status). */
  force?: boolean
  /**
   * The lease term each write is made under (a leader-elected Manager passes its term; a sharded one
   * the term of the object's shard): asked right before each write, with the object, which is sent
   * only while the term is valid (k8s's WriteFence); null: not ours to write (refused).
   */
  fence?: (obj: KubeObject) => WriteFence | null | undefined
  /**
   * Told of the server's answer to each write (the object with its new status and resourceVersion):
   * the Manager puts it into the tables that reflect the object before its watch event, so its next
   * read sees the status it wrote (reads that see our own writes).
   */
  onWritten?: (answer: KubeObject) => void
}

export interface StatusPatch {
  /** Conditions this manager owns; merged with the object's current ones for lastTransitionTime. */
  conditions?: ConditionInput[]
  [field: string]: unknown
}

/**
 * Writes status by server-side apply on `/status`. Each call applies the complete set of status
 * fields this field manager owns: a field (or condition type) it applied before and leaves out now is
 * removed by the server. Conditions without observedGeneration get the object's metadata.generation.
 */
export class StatusWriter {
  readonly fieldManager: string
  private readonly cluster: Cluster
  private readonly force: boolean

  constructor(opts: StatusWriterOptions) {
    if (!opts?.cluster) throw new ConfigError('StatusWriter: a cluster is required')
    if (typeof opts.fieldManager !== 'string' || opts.fieldManager === '')
      throw new ConfigError('StatusWriter: fieldManager must be a non-empty string')
    this.cluster = opts.cluster
    this.fieldManager = opts.fieldManager
    this.force = opts.force ?? true
    this.fence = opts.fence
    this.onWritten = opts.onWritten
  }

  private readonly onWritten: ((answer: KubeObject) => void) | undefined

  private readonly fence: ((obj: KubeObject) => WriteFence | null | undefined) | undefined

  /**
   * Applies `status` to `obj` (the freshest copy you have: lastTransitionTime is kept from its
   * conditions). Resolves with the object the server returned; its resourceVersion is unchanged when
   * nothing changed. `kind` skips discovery.
   */
  async apply(
    obj: KubeObject,
    status: StatusPatch,
    opts: {
      kind?: ResourceRef
      signal?: AbortSignal
      now?: Date
      /** The span this write is made for (a run's): traced, the write is a span `k8s.status_write`, its child. */
      cause?: SpanContextLike | undefined
    } = {},
  ): Promise<KubeObject> {
    const what = describe(obj)
    const { name, namespace } = obj.metadata ?? {}
    if (!obj.apiVersion || !obj.kind || !name)
      throw new InvalidObjectError(`${what}: status needs an object with apiVersion, kind and metadata.name`)
    const ref = opts.kind ?? (await resolveKind(this.cluster, obj as KindRef))
    const { conditions, ...fields } = status
    const body: Record<string, unknown> = { ...fields }
    if (conditions !== undefined) {
      const types = conditions.map((c) => c?.type)
      const dup = types.find((t, i) => types.indexOf(t) !== i)
      if (dup !== undefined)
        throw new InvalidObjectError(`${what}: condition ${JSON.stringify(dup)} is given twice (conditions are keyed by type)`)
      const current = conditionsOf(obj)
      const generation = typeof obj.metadata.generation === 'number' ? obj.metadata.generation : undefined
      body.conditions = conditions.map((c) => {
        const input = c.observedGeneration === undefined && generation !== undefined ? { ...c, observedGeneration: generation } : c
        try {
          return findCondition(setCondition(current, input, opts.now), c.type)!
        } catch (err) {
          throw new InvalidObjectError(`${what}: ${(err as Error).message}`)
        }
      })
    }
    const fence = this.fence?.(obj)
    const send = () =>
      this.cluster.request<KubeObject>({
        method: 'PATCH',
        path: `${objectPath(ref, name, namespace)}/status`,
        query: { fieldManager: this.fieldManager, force: this.force },
        body: { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status: body },
        contentType: 'application/apply-patch+yaml',
        what,
        ...(opts.signal ? { signal: opts.signal } : {}),
        // null: not ours to write, refused as a term that is over would be
        ...(fence === undefined ? {} : { fence: fence ?? NOT_LEADING }),
      })
    const tracer = this.cluster.tracer
    const answer = tracer
      ? await inSpan(tracer, 'k8s.status_write', send, {
          parent: opts.cause,
          attributes: { 'k8s.object.kind': obj.kind, 'k8s.object.key': namespacedName(obj) },
        })
      : await send()
    this.onWritten?.(answer)
    return answer
  }
}

/** The `fence` of a request from a fence provider (none: the cluster's own). */
export function fenceOption(fence: (() => WriteFence | null | undefined) | undefined): { fence?: WriteFence | null } {
  const f = fence?.()
  return f === undefined ? {} : { fence: f }
}
