// Who watches what, for watch on demand (ondemand.ts): the index from an owner to the targets it
// named and from a {cluster, kind} cache and an object in it to the owners of that target.
// Invariants:
// - an (owner, target) pair is held at most once: adding it again changes nothing (the caller counts
//   a cache's references by the pairs that were new);
// - both directions always hold the same pairs; an owner, an object or a cache left with no pair is
//   dropped from the index.
/** A target: one object of one kind in one cluster. Cluster-scoped kinds have no namespace. */
export interface TargetRef {
  cluster: string
  apiVersion: string
  kind: string
  namespace?: string
  name: string
}

export function targetString(t: TargetRef): string {
  return `${t.cluster}/${t.apiVersion}/${t.kind}/${t.namespace ? t.namespace + '/' : ''}${t.name}`
}

/** The key of the {cluster, kind} cache a target is read from. */
export function cacheKeyOf(t: { cluster: string; apiVersion: string; kind: string }): string {
  return `${t.cluster}\u0000${t.apiVersion}\u0000${t.kind}`
}

/** The key of a target's object in its cache (namespace/name, or the name when cluster-scoped). */
export function objKeyOf(t: { namespace?: string; name: string }): string {
  return t.namespace ? `${t.namespace}/${t.name}` : t.name
}

export class TargetIndex {
  /** cacheKey -> objKey -> owner -> target */
  private readonly owners = new Map<string, Map<string, Map<string, TargetRef>>>()
  /** owner -> targetString -> target */
  private readonly byOwner = new Map<string, Map<string, TargetRef>>()

  /** Adds the pair; true when it is new. */
  add(owner: string, target: TargetRef): boolean {
    const tk = targetString(target)
    let ts = this.byOwner.get(owner)
    if (!ts) this.byOwner.set(owner, (ts = new Map()))
    if (ts.has(tk)) return false
    ts.set(tk, target)
    const ck = cacheKeyOf(target)
    let objs = this.owners.get(ck)
    if (!objs) this.owners.set(ck, (objs = new Map()))
    let os = objs.get(objKeyOf(target))
    if (!os) objs.set(objKeyOf(target), (os = new Map()))
    os.set(owner, target)
    return true
  }

  /** Removes the pair; true when it was there. */
  remove(owner: string, target: TargetRef): boolean {
    const ts = this.byOwner.get(owner)
    const tk = targetString(target)
    if (!ts?.has(tk)) return false
    ts.delete(tk)
    if (ts.size === 0) this.byOwner.delete(owner)
    const ck = cacheKeyOf(target)
    const objs = this.owners.get(ck)
    const os = objs?.get(objKeyOf(target))
    os?.delete(owner)
    if (os && os.size === 0) objs!.delete(objKeyOf(target))
    if (objs && objs.size === 0) this.owners.delete(ck)
    return true
  }

  /** The targets an owner watches, by targetString. */
  targetsOf(owner: string): ReadonlyMap<string, TargetRef> | undefined {
    return this.byOwner.get(owner)
  }

  /** The owners of a target, sorted. */
  ownersOf(target: TargetRef): string[] {
    return [...(this.owners.get(cacheKeyOf(target))?.get(objKeyOf(target))?.keys() ?? [])].sort()
  }

  /** The objects of a cache that owners watch: objKey -> owner -> target. */
  objectsOf(cacheKey: string): ReadonlyMap<string, ReadonlyMap<string, TargetRef>> | undefined {
    return this.owners.get(cacheKey)
  }

  /** Every cache that owners watch, with its objects (see objectsOf). */
  caches(): IterableIterator<[string, ReadonlyMap<string, ReadonlyMap<string, TargetRef>>]> {
    return this.owners.entries()
  }

  /** The targets of a cache and their owners, as onChange takes them. */
  usersWithTargets(cacheKey: string): { owners: string[]; targets: TargetRef[] } {
    const owners = new Set<string>()
    const targets: TargetRef[] = []
    for (const os of this.owners.get(cacheKey)?.values() ?? [])
      for (const [owner, target] of os) {
        owners.add(owner)
        targets.push(target)
      }
    return { owners: [...owners].sort(), targets }
  }
}
