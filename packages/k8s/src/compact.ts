// Smaller cached objects. Most strings of a Kubernetes object's metadata repeat across objects
// (namespace, labels, annotations, apiVersion, kind, creation timestamps), yet JSON.parse makes a
// fresh copy of each for every object. A bounded pool shares one copy; metadata.managedFields (often
// most of an object) is dropped. Names, uids and resourceVersions are unique and left alone.

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

function internValues(rec: Record<string, unknown>, pool: StringPool): void {
  for (const k in rec) {
    const v = rec[k]
    if (typeof v === 'string') rec[k] = pool.intern(v)
  }
}

/**
 * Compacts a freshly parsed object in place (it must not be shared yet) and returns it: drops
 * metadata.managedFields unless `keepManagedFields`, and interns apiVersion, kind, namespace,
 * creationTimestamp, label and annotation values and owner references' apiVersion/kind.
 */
export function compactObject<T extends { metadata?: any; apiVersion?: unknown; kind?: unknown }>(
  obj: T,
  pool: StringPool,
  keepManagedFields = false,
): T {
  if (typeof obj.apiVersion === 'string') obj.apiVersion = pool.intern(obj.apiVersion)
  if (typeof obj.kind === 'string') obj.kind = pool.intern(obj.kind)
  let m = obj.metadata
  if (!m || typeof m !== 'object') return obj
  if (!keepManagedFields && m.managedFields !== undefined) {
    // A copy without the field, not `delete` (which turns the object into a slow dictionary).
    const { managedFields: _, ...rest } = m
    m = obj.metadata = rest
  }
  if (typeof m.namespace === 'string') m.namespace = pool.intern(m.namespace)
  if (typeof m.creationTimestamp === 'string') m.creationTimestamp = pool.intern(m.creationTimestamp)
  if (m.labels && typeof m.labels === 'object') internValues(m.labels, pool)
  if (m.annotations && typeof m.annotations === 'object') internValues(m.annotations, pool)
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

/** A copy without metadata.managedFields (most of an object's size, rarely needed). */
export function stripManagedFields<T extends { metadata?: any }>(obj: T): T {
  if (!obj.metadata || obj.metadata.managedFields === undefined) return obj
  const { managedFields: _, ...metadata } = obj.metadata
  return { ...obj, metadata }
}
