// Smaller cached objects. Most strings of a Kubernetes object's metadata repeat across objects
// (namespace, labels, annotations, apiVersion, kind, creation timestamps), yet JSON.parse makes a
// fresh copy of each for every object. A bounded pool shares one copy; metadata.managedFields (often
// most of an object) is dropped. Names, uids and resourceVersions are unique and left alone.
// Whole string maps repeat too: the labels of the pods of one ReplicaSet, the annotations of the
// objects one tool made, the data of a ConfigMap copied into every namespace (kube-root-ca.crt). A
// MapPool shares one frozen copy of each identical small map (same keys in the same order, same
// values): the objects of a table are never changed in place (statedb's contract), and the frozen
// copy makes a change by mistake throw instead of reaching every object that shares it.

export class StringPool {
  private map = new Map<string, string>()
  constructor(
    private readonly max = 50_000,
    private readonly maxLength = 128,
  ) {}

  /** The pooled copy of `s` (short strings only; the pool is cleared when full). */
  intern(s: string): string {
    if (s.length > this.maxLength) return s
    const x = this.map.get(s)
    if (x !== undefined) return x
    if (this.map.size >= this.max) this.map.clear()
    this.map.set(s, s)
    return s
  }

  get size(): number {
    return this.map.size
  }
}

/**
 * Shares identical string maps (every value a string, at most `maxChars` characters of keys and
 * values in all): `share(rec)` returns the pooled copy of an equal map seen before, or `rec` itself
 * (its short values interned), pooled. Bounded: cleared when `max` maps are held. A map shared is
 * frozen (a change by mistake would reach every object holding it); one not shared yet may not be.
 * `slot` (0-3) names where the map comes from (labels, annotations, ...): the last map of each slot is
 * compared first, without a pool key (the objects of a list come sorted by name, and neighbours share
 * their labels); a slot whose pool lookups mostly miss (unique labels) skips the pool for a while,
 * as a lookup that misses costs several times a hit.
 * Equal maps: the same entries. The pool's key (the JSON text) also tells key orders apart, the
 * comparison with the last map does not (a server sends map keys sorted).
 */
export class MapPool {
  private map = new Map<string, Record<string, string>>()
  private readonly slots = [new Slot(), new Slot(), new Slot(), new Slot()]
  /** Maps seen (the clock of the slots' pauses). */
  private seen = 0
  constructor(
    private readonly max = 10_000,
    private readonly maxChars = 4096,
  ) {}

  share(rec: Record<string, unknown>, strings: StringPool, slot = 0): Record<string, unknown> {
    if (Object.isFrozen(rec)) return rec // already pooled (or frozen by its owner)
    const s = this.slots[slot & 3]!
    const last = s.last
    // One pass: all strings? how long? the same entries as the slot's last map? (A key the last map
    // lacks reads undefined or an inherited non-string: never equal to a string.)
    let same = last !== undefined
    let chars = 0
    let n = 0
    for (const k in rec) {
      const v = rec[k]
      if (typeof v !== 'string') return internValues(rec, strings)
      chars += k.length + v.length
      n++
      if (same && last![k] !== v) same = false
    }
    if (chars > this.maxChars) return internValues(rec, strings)
    if (same && n === s.count) {
      if (!s.frozen) {
        Object.freeze(last)
        s.frozen = true
      }
      return last!
    }
    let out: Record<string, string> | undefined
    if (++this.seen >= s.pausedUntil) {
      // JSON text: one native call, and no two different maps have the same
      const key = JSON.stringify(rec)
      out = this.map.get(key)
      if (++s.lookups === LOOKUPS) {
        if (s.hits * 8 < LOOKUPS) s.pausedUntil = this.seen + PAUSE
        s.lookups = s.hits = 0
      }
      if (out !== undefined) s.hits++
      else {
        out = Object.freeze(internValues(rec, strings)) as Record<string, string>
        if (this.map.size >= this.max) this.map.clear()
        this.map.set(key, out)
      }
      s.frozen = true
    } else {
      out = internValues(rec, strings) as Record<string, string>
      s.frozen = false
    }
    s.last = out
    s.count = n
    return out
  }

  get size(): number {
    return this.map.size
  }
}

/** A slot's pool lookups are judged by the 1,024 last ones: fewer than 1 in 8 hits pauses it for 16,384 maps. */
const LOOKUPS = 1024
const PAUSE = 16_384

class Slot {
  /** The last map of this slot, its number of entries, and whether it is frozen. */
  last: Record<string, string> | undefined = undefined
  count = 0
  frozen = false
  lookups = 0
  hits = 0
  pausedUntil = 0
}

function internValues(rec: Record<string, unknown>, pool: StringPool): Record<string, unknown> {
  for (const k in rec) {
    const v = rec[k]
    if (typeof v === 'string') rec[k] = pool.intern(v)
  }
  return rec
}

/**
 * Compacts a freshly parsed object in place (it must not be shared yet) and returns it: drops
 * metadata.managedFields unless `keepManagedFields`, and interns apiVersion, kind, namespace,
 * creationTimestamp, label and annotation values and owner references' apiVersion/kind. With
 * `maps`, identical label and annotation maps and core ConfigMaps' `data` are shared (frozen) through
 * it: the default transform of a reflector passes one.
 */
export function compactObject<T extends { metadata?: any; apiVersion?: unknown; kind?: unknown }>(
  obj: T,
  pool: StringPool,
  keepManagedFields = false,
  maps?: MapPool,
): T {
  if (typeof obj.apiVersion === 'string') obj.apiVersion = pool.intern(obj.apiVersion)
  if (typeof obj.kind === 'string') obj.kind = pool.intern(obj.kind)
  if (maps && obj.kind === 'ConfigMap' && obj.apiVersion === 'v1') {
    const o = obj as T & { data?: unknown }
    if (isRecord(o.data)) o.data = maps.share(o.data, pool, 2)
  }
  let m = obj.metadata
  if (!m || typeof m !== 'object') return obj
  if (!keepManagedFields && m.managedFields !== undefined) {
    // A copy without the field, not `delete` (which turns the object into a slow dictionary).
    const { managedFields: _, ...rest } = m
    m = obj.metadata = rest
  }
  if (typeof m.namespace === 'string') m.namespace = pool.intern(m.namespace)
  if (typeof m.creationTimestamp === 'string') m.creationTimestamp = pool.intern(m.creationTimestamp)
  if (isRecord(m.labels)) m.labels = maps ? maps.share(m.labels, pool) : internValues(m.labels, pool)
  if (isRecord(m.annotations)) m.annotations = maps ? maps.share(m.annotations, pool, 1) : internValues(m.annotations, pool)
  if (Array.isArray(m.ownerReferences)) {
    for (const r of m.ownerReferences) {
      if (r && typeof r === 'object') {
        if (typeof r.apiVersion === 'string') r.apiVersion = pool.intern(r.apiVersion)
        if (typeof r.kind === 'string') r.kind = pool.intern(r.kind)
      }
    }
  }
  return obj
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

/** A copy without metadata.managedFields (most of an object's size, rarely needed). */
export function stripManagedFields<T extends { metadata?: any }>(obj: T): T {
  if (!obj.metadata || obj.metadata.managedFields === undefined) return obj
  const { managedFields: _, ...metadata } = obj.metadata
  return { ...obj, metadata }
}
