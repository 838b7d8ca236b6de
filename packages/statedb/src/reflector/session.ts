// One session of a reflector core: a list or a resume, then a watch, until it ends. It carries what
// the core needs to judge it (did it deliver, how long was it connected) and the inactivity bound.
// Invariants:
// - the bound runs from the watch phase on (a list may take long; it is not silence) and only while
//   the session runs: once it fires, the session is aborted, and the core resumes from its position;
// - one timer per session, pushed back by what arrived meanwhile: no timer per event.

export class Session {
  /** Aborted when the session must end (a list asked for, silence, a reconnect); stop has its own. */
  readonly ctrl = new AbortController()
  /** Delivered something (a list, an event, a bookmark): a failure after it resumes at once. */
  progressed = false
  /** Why the source refused to resume from its position (the next session lists: a relist). */
  refused: string | undefined
  /** Unix ms the watch was established. */
  connectedAt: number | undefined
  /** Unix ms of the last sign of life, from the watch phase on. */
  private aliveAt: number | undefined
  private timer: NodeJS.Timeout | undefined

  constructor(
    /** Its list is not written yet. */
    public listing: boolean,
    /** The number of its list (refresh waits on it); 0 for a resume. */
    readonly seq: number,
  ) {}

  /**
   * The watch phase began: from now on, `ms` without a sign of life ends the session, after
   * `silent(silentMs)`. Undefined, 0 or Infinity: no bound.
   */
  watch(ms: number | undefined, silent: (silentMs: number) => void): void {
    this.aliveAt = Date.now()
    if (ms === undefined || !(ms > 0) || ms === Infinity || this.timer) return
    const check = () => {
      if (this.ctrl.signal.aborted) return
      const quiet = Date.now() - this.aliveAt!
      if (quiet < ms) {
        this.timer = setTimeout(check, ms - quiet).unref()
        return
      }
      silent(quiet)
      this.ctrl.abort()
    }
    this.timer = setTimeout(check, ms).unref()
  }

  /** Something arrived. */
  alive(): void {
    this.progressed = true
    if (this.aliveAt !== undefined) this.aliveAt = Date.now()
  }

  /** The session ended: the bound with it. */
  end(): void {
    clearTimeout(this.timer)
  }
}
