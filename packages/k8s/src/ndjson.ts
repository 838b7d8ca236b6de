// Newline-delimited JSON, as a watch stream sends it: one event per line, lines split anywhere
// across chunks (even inside a multi-byte UTF-8 character).
import { WatchError } from './errors.ts'
import { StringDecoder } from 'node:string_decoder'

export class LineDecoder {
  private readonly decoder = new StringDecoder('utf8')
  private carry = ''

  /** The complete lines in this chunk (without the newline; empty lines dropped). */
  push(chunk: Buffer | string): string[] {
    const text = this.carry + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk))
    const lines = text.split('\n')
    this.carry = lines.pop() ?? ''
    return lines.filter((l) => l.trim() !== '')
  }

  /** What is left at the end of the stream (a last line without a newline), if anything. */
  end(): string[] {
    const rest = this.carry + this.decoder.end()
    this.carry = ''
    return rest.trim() === '' ? [] : [rest]
  }
}

export interface WatchEvent<T = any> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'
  object: T
}

/** Parses one watch line; throws with the line's start when it is not a watch event. */
export function parseEvent(line: string): WatchEvent {
  let ev: any
  try {
    ev = JSON.parse(line)
  } catch (err) {
    throw new WatchError(`watch: bad JSON line (${(err as Error).message}): ${line.slice(0, 80)}`)
  }
  if (ev === null || typeof ev !== 'object' || typeof ev.type !== 'string' || ev.object === null || typeof ev.object !== 'object') {
    throw new WatchError(`watch: not a watch event: ${line.slice(0, 80)}`)
  }
  return ev as WatchEvent
}
