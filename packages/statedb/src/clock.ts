// When each revision of a table was committed, approximately: what inspection shows as an object's
// age. Invariants: one sample per window of WINDOW_MS at most (a commit in the window of the last
// sample moves its revision up), at most CAPACITY samples (the oldest are dropped), so a commit costs
// one clock read and at most one array write; a revision older than every kept sample has no time.

const WINDOW_MS = 100
const CAPACITY = 4096

export class RevisionClock {
  private readonly revs = new Float64Array(CAPACITY)
  private readonly times = new Float64Array(CAPACITY)
  /** Index of the oldest sample, and how many there are. */
  private start = 0
  private size = 0

  /** A commit published `revision` now. */
  mark(revision: number, now = Date.now()): void {
    if (this.size > 0) {
      const last = (this.start + this.size - 1) % CAPACITY
      if (now - this.times[last]! < WINDOW_MS) {
        this.revs[last] = revision
        return
      }
    }
    if (this.size === CAPACITY) {
      this.start = (this.start + 1) % CAPACITY
      this.size--
    }
    const at = (this.start + this.size) % CAPACITY
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
      if (this.revs[(this.start + mid) % CAPACITY]! >= revision) hi = mid
      else lo = mid + 1
    }
    if (lo === this.size) return undefined
    // the revision must have been written in this window: after the previous window's last revision
    if (lo === 0 && this.dropped) return undefined
    return this.times[(this.start + lo) % CAPACITY]
  }

  private get dropped(): boolean {
    return this.size === CAPACITY
  }
}
