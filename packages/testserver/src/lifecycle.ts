// What happens after a DELETE on a real cluster, later and elsewhere: the namespace controller
// empties a Terminating namespace and then removes it; the kubelet stops a scheduled Pod's containers
// within its grace period and then removes the Pod. Here each is a timer, and control.finishDeletions()
// fast-forwards every pending one at once.
// Invariants:
// - A pending step runs once: by its timer or by finishDeletions(), whichever comes first.
// - stop() cancels every timer (a stopped server finishes nothing later); timers never hold the
//   process open (unref).
export class Lifecycle {
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; run: () => void }>()

  /** Runs `run` after `ms` (replacing a pending step of the same key). */
  schedule(key: string, ms: number, run: () => void): void {
    this.cancel(key)
    const timer = setTimeout(() => {
      this.pending.delete(key)
      run()
    }, ms)
    timer.unref()
    this.pending.set(key, { timer, run })
  }
  cancel(key: string): void {
    const p = this.pending.get(key)
    if (p) clearTimeout(p.timer)
    this.pending.delete(key)
  }
  /** Runs every pending step now (steps they schedule run too); returns how many ran. */
  finishAll(): number {
    let n = 0
    for (let guard = 0; this.pending.size > 0 && guard < 1000; guard++) {
      const [key, p] = this.pending.entries().next().value!
      clearTimeout(p.timer)
      this.pending.delete(key)
      p.run()
      n++
    }
    return n
  }
  get size(): number {
    return this.pending.size
  }
  stop(): void {
    for (const p of this.pending.values()) clearTimeout(p.timer)
    this.pending.clear()
  }
}
