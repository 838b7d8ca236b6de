// The watches handed out for one table's queries, by index and key.
//
// Invariants:
// - a registered watch is open; it is removed from the registry when it fires;
// - a commit fires the table watch whenever the table changed, the key watch of every key it touched
//   and every prefix watch whose prefix starts one of those keys; with nothing registered a commit
//   only checks that the maps are empty (watches cost nothing until someone asks for one).

import type { EncodedKey } from './encoding.ts'
import { Watch } from './watch.ts'

export class WatchRegistry {
  /** Per index position (0 = primary, 1.. = secondary): encoded key -> watch. */
  private readonly keys: Map<EncodedKey, Watch>[] = []
  private readonly prefixes: Map<string, Watch>[] = []
  private table: Watch | undefined
  private init: Watch | undefined

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

  /**
   * Fires the watches of a commit: `changed` per index position, or everything when undefined;
   * a position without a set (nobody watched it when the transaction began) fires all its watches.
   */
  fire(changed: ReadonlyArray<ReadonlySet<EncodedKey> | undefined> | undefined): void {
    const t = this.table
    this.table = undefined
    t?.close()
    for (let pos = 0; pos < this.keys.length; pos++) {
      const keys = this.keys[pos]!
      const prefixes = this.prefixes[pos]!
      if (keys.size === 0 && prefixes.size === 0) continue
      const touched = changed?.[pos]
      if (touched === undefined) {
        fireAll(keys)
        fireAll(prefixes)
        continue
      }
      if (keys.size > 0) {
        for (const k of touched) {
          const w = keys.get(k)
          if (w) {
            keys.delete(k)
            w.close()
          }
        }
      }
      if (prefixes.size > 0) {
        for (const [p, w] of prefixes) {
          for (const k of touched) {
            if (typeof k === 'string' && k.startsWith(p)) {
              prefixes.delete(p)
              w.close()
              break
            }
          }
        }
      }
    }
  }
}

function fireAll(m: Map<EncodedKey, Watch>): void {
  const ws = [...m.values()]
  m.clear()
  for (const w of ws) w.close()
}
