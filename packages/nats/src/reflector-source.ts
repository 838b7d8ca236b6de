// The NATS key-value source of a NatsKvReflector (statedb's reflector core does the rest): one
// session opens the bucket, reads its status, and then lists or resumes.
// Invariants:
// - a list is one watch of the last value per key: its initial values (up to the entry whose `delta`
//   is 0, or none at all when the status says the bucket, or the filtered keys, hold no value) are
//   yielded as one `list` at the newest revision listed (the stream's last sequence when empty); the
//   same watch then delivers the updates;
// - a resume watches every entry from the last revision + 1, history included;
// - the resume is refused (the core relists) when history was lost: the stream's first sequence is
//   past the resume point, the stream went backwards, or it is another stream (created anew);
// - a watch whose revisions jump is checked against the stream (gaps.ts): a message still stored in
//   the gap was skipped (nats-server 2.9.10 does this around purges), and `onGap` asks for a relist;
// - an entry at or below the resume point is dropped (a resume that overlapped);
// - a missing bucket is a BucketError the core retries with backoff.
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv'
import type { ReflectorSource, SessionContext, SourceEvent } from '@statewright/statedb'
import { BucketError } from './errors.ts'
import { skippedInRange } from './gaps.ts'
import type { NatsKvReflectorOptions } from './reflector-options.ts'

type Event = SourceEvent<KvWatchEntry, number>

export class KvSource implements ReflectorSource<KvWatchEntry, number> {
  /** The stream the last list came from (`created`): another one means its history is not ours. */
  private streamCreated: string | undefined
  /** The next revision the current watch should deliver (gap detection). */
  private expect = 0
  private gapCheck: Promise<void> = Promise.resolve()

  constructor(
    private readonly o: NatsKvReflectorOptions<any, any>,
    private readonly labels: { reflector: string; bucket: string },
    /** A skipped entry was found between revisions `from` and `to` (the caller relists). */
    private readonly onGap: (from: number, to: number) => void,
    /** False once the reflector stopped: no more gap checks. */
    private readonly active: () => boolean,
  ) {}

  async *session(from: number | undefined, ctx: SessionContext): AsyncGenerator<Event> {
    const { bucket, requestTimeoutMs } = this.o
    const kv = await new Kvm(this.o.nc).open(bucket, requestTimeoutMs ? { timeout: requestTimeoutMs } : {})
    const st = await kv.status().catch((err: Error) => {
      throw new BucketError(`bucket "${bucket}": ${/stream not found/i.test(err.message) ? 'bucket not found' : err.message}`)
    })
    const { state, created } = st.streamInfo
    if (from !== undefined && (created !== this.streamCreated || state.first_seq > from + 1 || state.last_seq < from)) {
      return ctx.listNext(`bucket "${bucket}": the history after revision ${from} is gone`)
    }
    if (ctx.signal.aborted) return
    if (from === undefined) {
      this.streamCreated = created
      yield* this.listAndWatch(kv, st.values === 0, state.last_seq, ctx.signal)
    } else yield* this.watchFrom(kv, from + 1, ctx.signal)
  }

  /** A list: the last value of every key as one `list`, then the updates of the same watch. */
  private async *listAndWatch(kv: KV, empty: boolean, lastSeq: number, signal: AbortSignal): AsyncGenerator<Event> {
    const keyFilter = this.o.keys
    if (!empty && keyFilter !== undefined) {
      // a filtered watch of a bucket with no matching key delivers nothing: find out first
      const it = await kv.keys(keyFilter)
      empty = true
      for await (const _ of it) {
        empty = false
        it.stop()
        break
      }
    }
    const w = await kv.watch({ key: keyFilter })
    const stop = () => w.stop()
    signal.addEventListener('abort', stop, { once: true })
    if (signal.aborted) w.stop() // ended while the watch was being made
    try {
      yield { type: 'connected' }
      // the resume point of an empty list is the stream's last sequence; else the newest entry listed
      let maxRev = empty ? lastSeq : 0
      const initial = new Map<string, KvWatchEntry>()
      let listed = false
      const list = (): Event[] => {
        listed = true
        this.expect = maxRev + 1 // from here on the watch delivers every message of its keys
        return [{ type: 'list', items: [...initial.values()], position: maxRev }, { type: 'watch' }]
      }
      if (empty) yield* list()
      for await (const e of w) {
        if (!listed) {
          initial.set(e.key, e)
          if (e.revision > maxRev) maxRev = e.revision
          if (e.delta === 0 || e.isUpdate) yield* list()
          continue
        }
        if (e.revision <= maxRev) continue
        this.sequence(e.revision)
        yield this.entry(e)
      }
      if (!listed && !signal.aborted)
        throw new BucketError(`bucket "${this.o.bucket}": the watch ended before the initial values were complete`)
    } finally {
      signal.removeEventListener('abort', stop)
      w.stop()
    }
  }

  /** A resumed watch: every entry from `next` on, history included. */
  private async *watchFrom(kv: KV, next: number, signal: AbortSignal): AsyncGenerator<Event> {
    yield { type: 'watch' }
    const w = await kv.watch({ key: this.o.keys, include: 'history', resumeFromRevision: next })
    const stop = () => w.stop()
    signal.addEventListener('abort', stop, { once: true })
    if (signal.aborted) w.stop()
    try {
      yield { type: 'connected' }
      this.expect = next
      for await (const e of w) {
        if (e.revision < next) continue // already applied (a resume that overlapped)
        this.sequence(e.revision)
        yield this.entry(e)
      }
    } finally {
      signal.removeEventListener('abort', stop)
      w.stop()
    }
  }

  /** Called for every entry a watch delivers after its initial values: checks the gap before it, if any. */
  private sequence(rev: number): void {
    const from = this.expect
    this.expect = rev + 1
    if (from === 0 || rev <= from) return
    const to = rev - 1
    const keys = this.o.keys === undefined ? undefined : [this.o.keys].flat()
    this.gapCheck = this.gapCheck
      .then(async () => {
        // a filtered watch skips other keys' messages: only a small range is worth probing
        if (!this.active() || (keys && to - from + 1 > 256)) return
        const opts = { timeoutMs: this.o.requestTimeoutMs }
        if (await skippedInRange(this.o.nc, this.o.bucket, from, to, keys, opts)) this.onGap(from, to)
      })
      .catch(() => {}) // a check that cannot run finds nothing: the verification relists anyway
  }

  private entry(e: KvWatchEntry): Event {
    this.o.metrics?.inc('events', { ...this.labels, op: e.operation })
    return { type: e.operation === 'PUT' ? 'upsert' : 'delete', key: e.key, item: e, position: e.revision }
  }
}
