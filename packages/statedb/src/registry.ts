// The watches handed out for one table's queries, by index and key.
//
// Invariants:
// - a registered watch is open; it is removed from the registry when it fires;
// - a commit fires the table watch whenever the table changed; a key or prefix watch fires when the
//   commit changed its result: `check` compares the result before and after the commit, for the
//   keys the commit touched (and the prefixes they start with) or, where the commit has no record
//   of the keys it touched (nobody watched that index when its writer began, or it deleted
//   everything), for every watch of that index. So a watch never fires for a commit that left its
//   result as it was (up to the limit of the check: a result of more than 64 entries fires);
// - with nothing registered a commit only checks that the maps are empty (watches cost nothing
//   until someone asks for one).

import type { EncodedKey } from './encoding.ts'
import { Watch } from './watch.ts'

/** Compares a key's (or prefix's) result of index `pos` in two states (the table implements it). */
export interface ResultCheck<View> {
  resultChanged(before: View, after: View, pos: number, key: EncodedKey, prefix: boolean): boolean
}

export class WatchRegistry {
  /** Per index position (0 = primary, 1.. = secondary): encoded key -> watch. */
  private readonly keys: Map<EncodedKey, Watch>[] = []
  private readonly prefixes: Map<string, Watch>[] = []
  private table: Watch | undefined
  private init: Watch | undefined
  private uninit: Watch | undefined

  constructor(indexCount: number) {
    for (let i = 0; i < indexCount; i++) {
      this.keys.push(new Map())
      this.prefixes.push(new Map())
    }
  }

  hasKeyWatches(): boolean {
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i]!.size > 0 || this.prefixes[i]!.size > 0) return true
    return false
  }

  /** Which index positions have key or prefix watches now (undefined: none at all). */
  watchedPositions(): boolean[] | undefined {
    if (!this.hasKeyWatches()) return undefined
    return this.keys.map((m, i) => m.size > 0 || this.prefixes[i]!.size > 0)
  }

  key(pos: number, key: EncodedKey): Watch {
    const m = this.keys[pos]!
    let w = m.get(key)
    if (!w) m.set(key, (w = new Watch()))
    return w
  }

  prefix(pos: number, prefix: string): Watch {
    const m = this.prefixes[pos]!
    let w = m.get(prefix)
    if (!w) m.set(prefix, (w = new Watch()))
    return w
  }

  /** Fires on any change of the table. */
  any(): Watch {
    return (this.table ??= new Watch())
  }

  /** Fires when the table becomes initialized. */
  initialized(): Watch {
    return (this.init ??= new Watch())
  }

  fireInitialized(): void {
    const w = this.init
    this.init = undefined
    w?.close()
  }

  /** Fires when the initialized table gets an initializer again (it is no longer initialized). */
  uninitialized(): Watch {
    return (this.uninit ??= new Watch())
  }

  fireUninitialized(): void {
    const w = this.uninit
    this.uninit = undefined
    w?.close()
  }

  /**
   * Fires the watches of a commit: `changed` per index position; a position without a record (or
   * all, when `changed` is undefined) fires the watches `check` finds changed.
   */
  fire<View>(
    changed: ReadonlyArray<ReadonlySet<EncodedKey> | undefined> | undefined,
    results: ResultCheck<View>,
    before: View,
    after: View,
  ): void {
    const t = this.table
    this.table = undefined
    t?.close()
    for (let pos = 0; pos < this.keys.length; pos++) {
      const keys = this.keys[pos]!
      const prefixes = this.prefixes[pos]!
      if (keys.size === 0 && prefixes.size === 0) continue
      const touched = changed?.[pos]
      if (touched === undefined) {
        fireChanged(keys, (k) => results.resultChanged(before, after, pos, k, false))
        fireChanged(prefixes, (p) => results.resultChanged(before, after, pos, p, true))
        continue
      }
      if (keys.size > 0) {
        for (const k of touched) {
          const w = keys.get(k)
          // touched, and (written and written back, say) not necessarily changed
          if (w && results.resultChanged(before, after, pos, k, false)) {
            keys.delete(k)
            w.close()
          }
        }
      }
      if (prefixes.size > 0) {
        for (const [p, w] of prefixes) {
          for (const k of touched) {
            if (typeof k === 'string' && k.startsWith(p)) {
              if (results.resultChanged(before, after, pos, p, true)) {
                prefixes.delete(p)
                w.close()
              }
              break
            }
          }
        }
      }
    }
  }
}

function fireChanged<K extends EncodedKey>(m: Map<K, Watch>, changed: (key: K) => boolean): void {
  const ws: Watch[] = []
  for (const [k, w] of m) {
    if (!changed(k)) continue
    m.delete(k)
    ws.push(w)
  }
  for (const w of ws) w.close() // after the scan: a listener may register new watches
}
