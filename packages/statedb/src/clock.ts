// When each revision of a table was committed, approximately: what inspection shows as an object's
// age. Invariants: one sample per window of WINDOW_MS at most (a commit in the window of the last
// sample moves its revision up), at most CAPACITY samples (the oldest are dropped), so a commit costs
// one clock read and at most one array write (amortized: the arrays double while they fill); a
// revision older than every kept sample has no time.

// The arrays start small and double up to CAPACITY (a table that is seldom written, as most are,
// never holds the 64 KB of a full clock).
const WINDOW_MS = 100
const CAPACITY = 4096
const INITIAL = 16

export class RevisionClock {
  private revs = new Float64Array(INITIAL)
  private times = new Float64Array(INITIAL)
  /** Index of the oldest sample, and how many there are. */
  private start = 0
  private size = 0

  /** A commit published `revision` now. */
  mark(revision: number, now = Date.now()): void {
    const cap = this.revs.length
    if (this.size > 0) {
      const last = (this.start + this.size - 1) % cap
      if (now - this.times[last]! < WINDOW_MS) {
        this.revs[last] = revision
        return
      }
    }
    if (this.size === cap && cap < CAPACITY) this.grow()
    else if (this.size === CAPACITY) {
      this.start = (this.start + 1) % CAPACITY
      this.size--
    }
    const at = (this.start + this.size) % this.revs.length
    this.revs[at] = revision
    this.times[at] = now
    this.size++
  }

  /** Epoch ms at which `revision` was committed (within WINDOW_MS), or undefined when not kept. */
  timeOf(revision: number): number | undefined {
    if (this.size === 0 || revision <= 0) return undefined
    // the first window whose last revision is at or above `revision`
    let lo = 0
    let hi = this.size
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.revs[(this.start + mid) % this.revs.length]! >= revision) hi = mid
      else lo = mid + 1
    }
    if (lo === this.size) return undefined
    // the revision must have been written in this window: after the previous window's last revision
    if (lo === 0 && this.dropped) return undefined
    return this.times[(this.start + lo) % this.revs.length]
  }

  /** Twice the room, the samples in order from index 0. */
  private grow(): void {
    const cap = this.revs.length
    const revs = new Float64Array(cap * 2)
    const times = new Float64Array(cap * 2)
    for (let i = 0; i < this.size; i++) {
      revs[i] = this.revs[(this.start + i) % cap]!
      times[i] = this.times[(this.start + i) % cap]!
    }
    this.revs = revs
    this.times = times
    this.start = 0
  }

  private get dropped(): boolean {
    return this.size === CAPACITY
  }
}
