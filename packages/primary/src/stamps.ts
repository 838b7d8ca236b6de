// Owner stamps: the labels and annotations that mark a secondary as a primary's.
// Invariants:
// - The annotations hold the exact owner key and kind; the labels hold them when they are valid
//   label values, else a stable hash (labels are for selectors, annotations for the mapping back).
// - An object is ours only when its ownerkind annotation is our kind: objects without our stamps
//   are never mapped to an owner, so never touched.
import { createHash } from 'node:crypto'
import type { OwnerStamps, SecondaryTarget } from './contract.ts'

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** The owner-key label value: the key when it is a valid label value, else a stable hash. */
export function ownerKeyLabelValue(key: string): string {
  if (key.length <= 63 && LABEL_VALUE.test(key)) return key
  return `h-${createHash('sha256').update(key).digest('hex').slice(0, 40)}`
}

/** The stamp names: `<prefix>/ownerkey` and `<prefix>/ownerkind` (labels and annotations alike). */
export function ownerStampKeys(prefix = 'statewright.io'): { key: string; kind: string } {
  return { key: `${prefix}/ownerkey`, kind: `${prefix}/ownerkind` }
}

/** The stamps of a primary key of a kind. */
export function stampsFor(keys: { key: string; kind: string }, kind: string, key: string): OwnerStamps {
  return {
    labels: { [keys.key]: ownerKeyLabelValue(key), [keys.kind]: ownerKeyLabelValue(kind) },
    annotations: { [keys.key]: key, [keys.kind]: kind },
  }
}

/** The owner key of a secondary stamped with this kind (from the annotation), else undefined. */
export function ownerKeyIn(
  keys: { key: string; kind: string },
  kind: string,
  target: SecondaryTarget<any>,
  s: unknown,
): string | undefined {
  const a = target.stampsOf(s)?.annotations
  if (!a || a[keys.kind] !== kind) return undefined
  const k = a[keys.key]
  return typeof k === 'string' ? k : undefined
}
