// An undo journal for a derivation's bookkeeping (which input produced what, read what, failed when):
// changes made while a write transaction is open are undone if the transaction fails, so the
// bookkeeping always matches what was committed.
// Invariants:
// - Outside run() nothing is recorded: changes then are final.
// - Undo runs the steps newest first, restoring each map entry and set member exactly (present or
//   absent, and its old value).
export class Journal {
  private steps: Array<() => void> | undefined

  /** Runs fn recording undo steps; if it throws, they run (newest first) and the error is rethrown. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const steps: Array<() => void> = []
    this.steps = steps
    try {
      return await fn()
    } catch (err) {
      for (let i = steps.length - 1; i >= 0; i--) steps[i]!()
      throw err
    } finally {
      this.steps = undefined
    }
  }

  note(undo: () => void): void {
    this.steps?.push(undo)
  }

  mapSet<K, V>(m: Map<K, V>, k: K, v: V): void {
    const had = m.has(k)
    const old = m.get(k)
    this.note(() => {
      if (had) m.set(k, old as V)
      else m.delete(k)
    })
    m.set(k, v)
  }

  mapDel<K, V>(m: Map<K, V>, k: K): void {
    if (!m.has(k)) return
    const old = m.get(k) as V
    this.note(() => {
      m.set(k, old)
    })
    m.delete(k)
  }

  setAdd<T>(set: Set<T>, v: T): void {
    if (set.has(v)) return
    this.note(() => {
      set.delete(v)
    })
    set.add(v)
  }

  setDel<T>(set: Set<T>, v: T): void {
    if (!set.has(v)) return
    this.note(() => {
      set.add(v)
    })
    set.delete(v)
  }
}
