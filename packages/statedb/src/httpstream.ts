// Long responses (a dump, a whole table, a change stream) written without holding the process.
//
// Invariants:
// - a writer encodes for at most `SLICE_MS` (or `CHUNK_BYTES` of text) before it yields; the writers
//   of all responses take turns through one queue, one writer per event-loop iteration, so I/O and
//   timers (health probes, lease renewals, the reconciler) run between any two slices, however many
//   responses are being written;
// - a writer never holds more than one chunk of its own plus what the socket buffers: when `write`
//   says the socket is full it waits for `drain`; a client that does not read for `stallTimeoutMs`
//   is dropped (the connection is destroyed), never buffered without bound; a chunk is written as
//   bytes joined once (a stalled client keeps one compact chunk, not a rope of small strings);
// - one value that cannot be serialized (a throwing `toJSON`, a cycle, a BigInt in a custom redactor's
//   output) becomes an error string in its place; the rest of the response is written.
import type { ServerResponse } from 'node:http'
import { StoppedError } from './errors.ts'

const SLICE_MS = 2
const CHUNK_BYTES = 64 * 1024

// One queue of writers waiting for their turn; a single immediate runs one turn per loop iteration
// (an immediate queued from an immediate runs in the next iteration, after that iteration's I/O).
const waiting: Array<() => void> = []
let pumping = false
function pump(): void {
  const next = waiting.shift()
  if (waiting.length > 0) setImmediate(pump)
  else pumping = false
  next?.()
}
/** Resolves on a later event-loop iteration, in turn with every other writer. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve)
    if (!pumping) {
      pumping = true
      setImmediate(pump)
    }
  })
}

/** The client stopped reading for too long, or went away. */
export class StreamClosed extends StoppedError {
  override name = 'StreamClosed'
}

export class PacedWriter {
  /** Text not written yet, in pieces (joined once per write: no rope of small strings is kept). */
  private pieces: string[] = []
  private size = 0
  private sliceStart = performance.now()
  private gone = false

  constructor(
    private readonly res: ServerResponse,
    private readonly stallTimeoutMs: number,
  ) {
    res.once('close', () => (this.gone = true))
  }

  /** Whether the client went away (or was dropped). */
  get closed(): boolean {
    return this.gone || this.res.destroyed
  }

  /** Waits for the writer's first turn: requests that arrive together must not each take a slice at once. */
  async start(): Promise<void> {
    await nextTurn()
    this.sliceStart = performance.now()
  }

  /** Calls `fn` when the client goes away (at once if it has). */
  onClose(fn: () => void): void {
    if (this.closed) fn()
    else this.res.once('close', fn)
  }
  offClose(fn: () => void): void {
    this.res.off('close', fn)
  }

  /** Adds text; when the slice is used up, writes what it holds and waits for the socket and a turn. */
  async push(text: string): Promise<void> {
    this.pieces.push(text)
    this.size += text.length
    if (this.size >= CHUNK_BYTES || performance.now() - this.sliceStart >= SLICE_MS) await this.flush()
  }

  /** What it holds, as bytes (what a stalled socket keeps queued is one compact chunk). */
  private take(): Buffer {
    const chunk = Buffer.from(this.pieces.join(''))
    this.pieces = []
    this.size = 0
    return chunk
  }

  /** Writes what it holds, waits for the socket to drain, then for a turn. */
  async flush(): Promise<void> {
    if (this.closed) throw new StreamClosed('the client went away')
    if (this.size > 0) {
      const full = !this.res.write(this.take())
      if (full) await this.drained()
    }
    await nextTurn()
    if (this.closed) throw new StreamClosed('the client went away')
    this.sliceStart = performance.now()
  }

  /** Writes what it holds and ends the response. */
  end(): void {
    if (this.closed) return
    this.res.end(this.size > 0 ? this.take() : undefined)
  }

  private drained(): Promise<void> {
    const res = this.res
    return new Promise((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer)
        res.off('drain', onDrain)
        res.off('close', onClose)
        if (err) reject(err)
        else resolve()
      }
      const onDrain = () => done()
      const onClose = () => done(new StreamClosed('the client went away'))
      const timer = setTimeout(() => {
        // a client that does not read is dropped: its buffer would otherwise grow without bound
        res.destroy()
        done(new StreamClosed(`the client read nothing for ${this.stallTimeoutMs} ms`))
      }, this.stallTimeoutMs)
      res.on('drain', onDrain)
      res.on('close', onClose)
    })
  }
}

/** JSON text of a value; a value that cannot be serialized becomes an error string in its place. */
export function jsonOrError(value: unknown): string {
  try {
    return JSON.stringify(value, jsonSafe) ?? 'null'
  } catch (err) {
    return JSON.stringify(`(unserializable: ${err instanceof Error ? err.message : String(err)})`)
  }
}

/** JSON.stringify's replacer for inspection: BigInts as text, bytes as base64. */
export function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  return value
}
