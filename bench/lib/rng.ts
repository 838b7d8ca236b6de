// A seeded pseudo-random generator (mulberry32) so that every run does the same work.

export interface Rng {
  /** A float in [0, 1). */
  next(): number
  /** An integer in [0, n). */
  int(n: number): number
}

export function rng(seed = 0x5eed): Rng {
  let a = seed >>> 0
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return { next, int: (n) => Math.floor(next() * n) }
}

/** Shuffles in place (Fisher-Yates) and returns the array. */
export function shuffle<T>(arr: T[], r: Rng = rng()): T[] {
  for (let i = arr.length - 1; i > 0; i--) {
    const j = r.int(i + 1)
    const t = arr[i]!
    arr[i] = arr[j]!
    arr[j] = t
  }
  return arr
}
