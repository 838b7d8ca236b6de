// Order-preserving key encoding: index keys become JS strings whose code-unit order (what `<`
// compares) is the order of the keys.
//
// The common cases cost nothing: a whole key that is a string without '\0' encodes to itself (no
// copy, no concatenation; flat strings also compare fastest), and a whole key that is a number stays
// a number (the trees order numbers natively, before all strings). Everything else is a string built
// from tags that start with '\0', which a string can only contain escaped:
// - in strings '\0' becomes "\0\x02"; inside a tuple a string part ends with "\0\x01";
// - other parts are tagged: false "\0\x03", true "\0\x04", number "\0\x05"+4 chars, bigint
//   "\0\x06"+length+digits, bytes "\0\x07"+(bytes+1)+"\0"; a tuple is "\0\x08" + its parts.
// Invariants:
// - every tuple part is self-delimiting and never starts with "\0\0", so no key's encoding followed
//   by "\0\0" starts another key's: composite keys cannot run into each other (the pitfall cilium
//   hit twice: "a" matching "ab" or ["a", "b"]). Non-unique indexes do not even need this (they map
//   each whole encoded key to a bucket, ./buckets.ts), but prefix queries over tuples rely on it;
// - empty keys ("", [], empty bytes) are keys like any other;
// - keys of one type keep their order; keys of different types never compare equal (their relative
//   order is unspecified).
import { KeyError } from './errors.ts'

export type KeyPart = string | number | bigint | boolean | Uint8Array
export type Key = KeyPart | readonly KeyPart[]
/** What an index stores: a number for a whole number key, a string for everything else. */
export type EncodedKey = string | number

const TAG_FALSE = '\0\x03'
const TAG_TRUE = '\0\x04'
const TAG_NUMBER = '\0\x05'
const TAG_BIGINT = '\0\x06'
const TAG_BYTES = '\0\x07'
const TAG_TUPLE = '\0\x08'
const STRING_END = '\0\x01'
export const KEY_SEPARATOR = '\0\0'

const f64 = new Float64Array(1)
const u32 = new Uint32Array(f64.buffer)
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1
const HI = littleEndian ? 1 : 0
const LO = littleEndian ? 0 : 1

function encodeNumber(n: number): string {
  if (Number.isNaN(n)) throw new KeyError('NaN cannot be a key')
  f64[0] = n === 0 ? 0 : n // -0 and 0 are one key
  let hi = u32[HI]!
  let lo = u32[LO]!
  if (hi & 0x80000000) {
    hi = ~hi >>> 0
    lo = ~lo >>> 0
  } else {
    hi = (hi | 0x80000000) >>> 0
  }
  return TAG_NUMBER + String.fromCharCode(hi >>> 16, hi & 0xffff, lo >>> 16, lo & 0xffff)
}

const HEX = '0123456789abcdef'

function encodeBigint(n: bigint): string {
  if (n >= 0n) {
    const hex = n.toString(16)
    if (hex.length > 0xfffe) throw new KeyError('bigint key too large')
    return TAG_BIGINT + '\x02' + String.fromCharCode(hex.length) + hex
  }
  const hex = (-n).toString(16)
  if (hex.length > 0xfffe) throw new KeyError('bigint key too large')
  let out = TAG_BIGINT + '\x01' + String.fromCharCode(0xffff - hex.length)
  for (let i = 0; i < hex.length; i++) out += HEX[15 - HEX.indexOf(hex[i]!)]
  return out
}

function encodeBytes(b: Uint8Array, terminate: boolean): string {
  let out = TAG_BYTES
  for (let i = 0; i < b.length; i += 4096) {
    const chunk = Array.from(b.subarray(i, i + 4096), (x) => x + 1)
    out += String.fromCharCode(...chunk)
  }
  return terminate ? out + '\0' : out
}

function encodePart(p: KeyPart, terminate: boolean): string {
  switch (typeof p) {
    case 'string': {
      const body = escape(p)
      return terminate ? body + STRING_END : body
    }
    case 'number':
      return encodeNumber(p)
    case 'bigint':
      return encodeBigint(p)
    case 'boolean':
      return p ? TAG_TRUE : TAG_FALSE
    default:
      if (p instanceof Uint8Array) return encodeBytes(p, terminate)
      throw new KeyError(`unsupported key part of type ${p === null ? 'null' : typeof p}`)
  }
}

function escape(s: string): string {
  return s.indexOf('\0') === -1 ? s : s.replaceAll('\0', '\0\x02')
}

/** Encodes a whole key. A number stays a number (the trees order numbers natively, before strings). */
export function encodeKey(key: Key): EncodedKey {
  if (typeof key === 'string') return escape(key)
  if (typeof key === 'number') {
    if (Number.isNaN(key)) throw new KeyError('NaN cannot be a key')
    return key === 0 ? 0 : key // -0 and 0 are one key
  }
  if (Array.isArray(key)) {
    let out = TAG_TUPLE
    for (const p of key as readonly KeyPart[]) out += encodePart(p, true)
    return out
  }
  return encodePart(key as KeyPart, true)
}

/**
 * Encodes a key for a prefix search: like encodeKey, but a trailing string or byte array is left
 * open, so "ab" finds "abc" and ["a", "b"] finds ["a", "bc"].
 */
export function encodePrefix(key: Key): EncodedKey {
  if (typeof key === 'string') return escape(key)
  if (typeof key === 'number') return encodeKey(key)
  if (Array.isArray(key)) {
    const parts = key as readonly KeyPart[]
    let out = TAG_TUPLE
    for (let i = 0; i < parts.length; i++) out += encodePart(parts[i]!, i < parts.length - 1)
    return out
  }
  return encodePart(key as KeyPart, false)
}

/** A readable rendering of a key for error messages. */
export function showKey(key: Key): string {
  const part = (p: KeyPart): string =>
    typeof p === 'string'
      ? JSON.stringify(p)
      : typeof p === 'bigint'
        ? `${p}n`
        : p instanceof Uint8Array
          ? `bytes(${Buffer.from(p).toString('hex')})`
          : String(p)
  return Array.isArray(key) ? `[${(key as readonly KeyPart[]).map(part).join(', ')}]` : part(key as KeyPart)
}
