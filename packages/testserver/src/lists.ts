// LIST: one consistent view per list, pages from the same view, reads at a past version.
// Invariants:
// - Every page of a paginated list comes from the version of its first page (etcd's revision read):
//   later writes are not seen. A continue token names that version; it stays valid while the watch
//   history covers it (as a token stays valid until etcd compacts its revision), not for a fixed
//   number of other lists: recent views are kept as statedb snapshots, older ones are rebuilt from
//   the history (store.rowsAt). control.compact() forgets both: older tokens get 410.
// - resourceVersionMatch=Exact reads the table as it was at that version, the same way.
import type { Store, Snapshot } from './store.ts'
import type { ResourceType } from './resources.ts'
import { apiVersionOf } from './resources.ts'
import { StatusError, badRequest, expired, tooLargeResourceVersion } from './status.ts'
import { objectJson } from './watch.ts'
import type { Matcher } from './selectors.ts'
import { then, type MaybePromise } from './conversion.ts'

/** A page's objects in the listed type's version (a CRD's conversion; the same array when nothing to do). */
export type ListConverter = (t: ResourceType, objs: any[]) => MaybePromise<any[]>

export interface ListOpts {
  matcher?: Matcher
  limit?: number
  continue?: string
  resourceVersion?: string
  resourceVersionMatch?: string
  /** remainingItemCount is only reported without selectors, as on a real server. */
  selected?: boolean
}

/** A consistent read: a kept statedb snapshot, or rows rebuilt from the history. */
type View = { rv: number; snap: Snapshot } | { rv: number; rows: Array<[string, any]> }

// etcd3/store.go's handleCompactedErrorForPaging: the 410 for a compacted continue token carries a
// new token (resourceVersion -1) that continues from the same key at the newest version
const INCONSISTENT_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.'

export class Lists {
  private readonly snapshots = new Map<number, Snapshot>()
  private readonly maxSnapshots = 64
  /** Versions at or below this were forgotten by control.compact(). */
  private compactedRv = 0

  constructor(
    private readonly store: Store,
    private readonly convert: ListConverter = (_t, objs) => objs,
  ) {}

  /** The list as JSON text (items are serialized once and cached, which keeps 100k-item lists fast). */
  listJson(t: ResourceType, ns: string | undefined, o: ListOpts): MaybePromise<string> {
    let view: View
    let after: string | undefined
    // The continue token carries the list's total (counted once, on the first page) and how many
    // items earlier pages returned, so later pages stop at their limit instead of scanning the rest
    // of the collection to count remainingItemCount (which made a paginated list quadratic).
    let total: number | undefined
    let seen = 0
    if (o.continue) {
      let tok: { rv: number; start: string; total?: number; seen?: number }
      const bad = () => badRequest('continue key is not valid: illegal base64 data')
      try {
        tok = JSON.parse(Buffer.from(o.continue, 'base64').toString())
      } catch {
        throw bad()
      }
      if (typeof tok?.rv !== 'number' || typeof tok.start !== 'string') throw bad()
      after = tok.start
      if (tok.rv === -1) {
        view = { rv: this.store.rv, snap: this.store.snapshot() } // an inconsistent continuation: the newest state
      } else {
        try {
          view = this.viewAt(t, tok.rv, INCONSISTENT_CONTINUE)
        } catch (err) {
          if (err instanceof StatusError && err.code === 410) {
            const next = { rv: -1, start: tok.start }
            err.status.metadata = { continue: Buffer.from(JSON.stringify(next)).toString('base64') }
          }
          throw err
        }
        total = tok.total
        seen = tok.seen ?? 0
      }
    } else view = this.readAt(t, o.resourceVersion, o.resourceVersionMatch)
    const items: any[] = []
    const apiVersion = apiVersionOf(t)
    let last: string | undefined
    let more = false
    let remaining = 0
    for (const [key, obj] of this.rows(t, view, t.namespaced ? ns : undefined, after)) {
      if (o.matcher && !o.matcher(obj)) continue
      if (o.limit && items.length >= o.limit) {
        more = true
        if (o.selected || total !== undefined) break
        remaining++
        continue
      }
      items.push(obj)
      last = key
    }
    const meta: Record<string, unknown> = { resourceVersion: String(view.rv) }
    if (more && last !== undefined) {
      if ('snap' in view) this.keep(view.snap)
      if (total === undefined && !o.selected) total = seen + items.length + remaining
      const tok = o.selected ? { rv: view.rv, start: last } : { rv: view.rv, start: last, total, seen: seen + items.length }
      meta.continue = Buffer.from(JSON.stringify(tok)).toString('base64')
      if (!o.selected) meta.remainingItemCount = total! - seen - items.length
    }
    return then(this.convert(t, items), (objs) => {
      const json = objs.map((obj) => objectJson(obj, apiVersion, t.kind)).join(',')
      return `{"kind":${JSON.stringify(t.listKind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${JSON.stringify(meta)},"items":[${json}]}`
    })
  }

  private *rows(t: ResourceType, view: View, ns: string | undefined, after: string | undefined): Generator<[string, any]> {
    if ('snap' in view) return yield* this.store.scan(t.storageKey, ns, after, view.snap)
    for (const row of view.rows) {
      if (after !== undefined && row[0] <= after) continue
      if (ns !== undefined && (row[1].metadata?.namespace ?? '') !== ns) continue
      yield row
    }
  }

  private viewAt(t: ResourceType, rv: number, tooOld: string): View {
    const snap = this.snapshots.get(rv)
    if (snap) return { rv, snap }
    if (rv === this.store.rv && rv > this.compactedRv) return { rv, snap: this.store.snapshot() }
    const rows = rv > this.compactedRv ? this.store.rowsAt(t.storageKey, rv) : 'expired'
    if (rows === 'expired') throw expired(tooOld)
    return { rv, rows }
  }

  private readAt(t: ResourceType, rv: string | undefined, match: string | undefined): View {
    const cur = this.store.snapshot()
    if (rv === undefined || rv === '' || rv === '0') return { rv: cur.rv, snap: cur }
    if (!/^\d+$/.test(rv)) throw badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative integer`)
    const n = Number(rv)
    if (n > cur.rv) throw tooLargeResourceVersion(n, cur.rv)
    if (match === 'Exact' && n !== cur.rv) return this.viewAt(t, n, `too old resource version: ${n} (${cur.rv})`)
    return { rv: cur.rv, snap: cur }
  }

  private keep(s: Snapshot): void {
    this.snapshots.delete(s.rv)
    this.snapshots.set(s.rv, s)
    if (this.snapshots.size > this.maxSnapshots) this.snapshots.delete(this.snapshots.keys().next().value!)
  }
  /** Forget every kept view: outstanding continue tokens and older Exact reads get 410, as after an etcd compaction. */
  compact(): void {
    this.snapshots.clear()
    this.compactedRv = this.store.rv
  }
}
