// Text from a running process, made safe to print: control characters are shown visibly as escapes
// (`\x1b`, `\x9b`, `\u202e`, `\n`, `\t`), never passed through (they could clear the screen, set the
// title or the clipboard, make links, or reorder a line) and never dropped (what is shown is what the
// server holds). The CLI (cli.ts) and the DOT and SVG of graphs (graph.ts) use it.
// Invariants: `visible` output holds no C0 (U+0000–U+001F), DEL, C1 (U+0080–U+009F: U+009B is an
// 8-bit CSI), bidi control (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), lone surrogate,
// U+FFFE or U+FFFF; `jsonText` and `yamlText` are valid JSON / YAML of exactly the value given, with
// none of those raw but their own layout's newlines; `guarded` lets through only newlines and, when
// colour is on, SGR codes (`ESC [ digits m`).
import { Document, visit } from 'yaml'

/** What never reaches a terminal raw (see the header). */
const UNSAFE =
  /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }
const hex = (ch: string, digits: number) => ch.charCodeAt(0).toString(16).padStart(digits, '0')

/** One unsafe character as its escape: `\n`, `\r`, `\t`, `\xHH` below U+0100, else `\uHHHH`. */
const escapeChar = (ch: string) => NAMED[ch] ?? (ch.charCodeAt(0) < 0x100 ? `\\x${hex(ch, 2)}` : `\\u${hex(ch, 4)}`)

/** The text with every unsafe character (newlines too) shown as its escape. */
export const visible = (s: string): string => s.replace(UNSAFE, escapeChar)

/** The same, keeping newlines (a multi-line body printed as lines: DOT, SVG, /readyz). */
export const visibleLines = (s: string): string => s.replace(UNSAFE, (ch) => (ch === '\n' ? ch : escapeChar(ch)))

/** A copy of a server's JSON value for the terminal: every string in it, keys too, through `visible`. */
export function forTerminal<T>(v: T): T {
  if (typeof v === 'string') return visible(v) as T
  if (Array.isArray(v)) return v.map(forTerminal) as T
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [visible(k), forTerminal(x)])) as T
  return v
}

const hasUnsafe = (s: string) => new RegExp(UNSAFE.source).test(s)

// Raw in a JSON or YAML text only inside strings, where `\uXXXX` means the same character.
const RAW_IN_STRINGS = /[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffe\uffff]/g
const asUnicodeEscape = (ch: string) => `\\u${hex(ch, 4)}`

/** JSON of the value (JSON.stringify escapes C0 and lone surrogates; this the rest). */
export function jsonText(v: unknown, indent?: number): string {
  return JSON.stringify(v, null, indent).replace(RAW_IN_STRINGS, asUnicodeEscape)
}

/**
 * YAML of the value. The yaml package writes C1, DEL and bidi characters raw (even in double-quoted
 * scalars), so every string holding an unsafe character other than a newline is double-quoted, and
 * there each such character becomes a `\uXXXX` escape (C0 it escapes itself).
 */
export function yamlText(v: unknown): string {
  const doc = new Document(v)
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && hasUnsafe(node.value.replace(/\n/g, ''))) node.type = 'QUOTE_DOUBLE'
    },
  })
  return doc.toString().replace(RAW_IN_STRINGS, asUnicodeEscape)
}

const GUARD = new RegExp(`\\x1b\\[\\d{1,3}m|${UNSAFE.source}`, 'g')

/**
 * A writer that lets through only newlines and, when `color`, SGR codes (the CLI's own colours):
 * anything else unsafe that reaches it (a field some command forgot) is shown as its escape. The last
 * line of defence, at the write itself.
 */
export function guarded(w: { write(s: string): unknown }, color: boolean): { write(s: string): unknown } {
  const keep = (m: string) => (m === '\n' ? m : m.length > 1 ? (color ? m : visible(m)) : escapeChar(m))
  return { write: (s: string) => w.write(s.replace(GUARD, keep)) }
}
