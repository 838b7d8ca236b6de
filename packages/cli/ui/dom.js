// DOM helpers of the web view: `h` (an element from attributes and children) and the visible escape
// of what could hide or reorder text; JSON as text; the address's %-escapes.
// Invariants: every value reaches the DOM through a text node or setAttribute, never as markup; the
// text shown (children, and the attributes that show: title, aria-label) holds no raw control or
// bidi character: C0, C1, the bidi marks, embeddings, overrides and isolates, U+FFFE, U+FFFF and lone
// surrogates show as marked escapes, as the CLI shows them (`\x1b`, `\u202e`; JSON's `\u001b` in a
// JSON view), so a name can neither run nor pass for another; data-* attributes keep raw values
// (never shown; the tests select by them); neither `enc` nor `dec` throws an exception a page
// cannot show.

// Lone surrogates: a browser shows U+FFFD for each, so two keys would look alike; encodeURIComponent
// throws on them
const LONE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]'
// What the CLI never prints raw either (packages/cli/src/terminal.ts): C0 and C1 controls and DEL
// (terminal escapes, CSI U+009B), the bidi marks (U+200E, U+200F, U+061C), embeddings and overrides
// (U+202A–U+202E: `\u202egnp.exe` reads "exe.png"), isolates (U+2066–U+2069), U+FFFE, U+FFFF and
// lone surrogates
const HIDDEN = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069\\ufffe\\uffff]|${LONE}`, 'g')
const HAS_HIDDEN = new RegExp(HIDDEN.source)
/** @type {Readonly<Record<string, string>>} */
const NAMED = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }
/** @param {string} c @param {number} digits */
const hex = (c, digits) => c.charCodeAt(0).toString(16).padStart(digits, '0')
/**
 * A hidden character as the CLI and the server's SVG show it: `\n`, `\r`, `\t`, `\xHH` below U+0100, else `\uHHHH`.
 * @param {string} c
 */
const escapeOf = (c) => NAMED[c] ?? (c.charCodeAt(0) < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`)

/**
 * The text with every hidden character as its escape (for attributes that show, such as title; and
 * what the server's SVG shows for a text).
 * @param {string} text
 */
export const visible = (text) => text.replace(HIDDEN, escapeOf)

/**
 * A node showing the text, each hidden character as a marked escape (`<span class="esc">`). In JSON
 * (`json`), the escape is JSON's `\uHHHH`, so the view stays JSON, and newlines stay: raw ones are its
 * layout (JSON.stringify escapes those in strings).
 * @param {string} text
 * @param {boolean} [json]
 * @returns {Node}
 */
export function textNode(text, json = false) {
  if (!HAS_HIDDEN.test(text)) return document.createTextNode(text)
  const out = document.createDocumentFragment()
  let at = 0
  for (const m of text.matchAll(HIDDEN)) {
    const i = m.index ?? 0
    if (json && m[0] === '\n') continue
    if (i > at) out.append(text.slice(at, i))
    const mark = document.createElement('span')
    mark.className = 'esc'
    mark.textContent = json ? `\\u${hex(m[0], 4)}` : escapeOf(m[0])
    out.append(mark)
    at = i + m[0].length
  }
  if (at < text.length) out.append(text.slice(at))
  return out
}

/**
 * A value as indented JSON, its hidden characters as JSON escapes.
 * @param {unknown} value
 * @returns {Node}
 */
export function jsonNode(value) {
  const text = JSON.stringify(value, null, 2)
  return text === undefined ? document.createTextNode('') : textNode(text, true)
}

/**
 * encodeURIComponent that cannot throw: a lone surrogate goes as U+FFFD.
 * @param {string} text
 */
export const enc = (text) => encodeURIComponent(text.replace(new RegExp(LONE, 'g'), '\ufffd'))

/**
 * decodeURIComponent with a message, for what the address holds (`%E0%A4%A` throws URIError).
 * @param {string} text
 */
export function dec(text) {
  try {
    return decodeURIComponent(text)
  } catch {
    throw new Error(`the address holds a malformed %-escape: ${text}`)
  }
}

/**
 * An attribute's value: absent when undefined, null or false; `on<event>` a listener.
 * @typedef {string | number | boolean | null | undefined | ((e: Event) => void)} AttrValue
 */
/** @typedef {Node | string | number | boolean | null | undefined} Leaf */
/**
 * A child: a node, or a value shown as text; arrays (two deep) are flattened; null, undefined and
 * false are left out.
 * @typedef {Leaf | ReadonlyArray<Leaf | ReadonlyArray<Leaf>>} Child
 */

/** Attributes whose values the browser shows (a tooltip, what a screen reader reads). */
const SHOWN = new Set(['title', 'aria-label'])

/**
 * An HTML element with the attributes and children given (all text, see the header).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, AttrValue>} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (typeof v === 'function') {
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    } else if (k === 'class') el.className = String(v)
    else el.setAttribute(k, SHOWN.has(k) ? visible(String(v)) : String(v))
  }
  append(el, children)
  return el
}

/**
 * @param {Element | DocumentFragment} el
 * @param {ReadonlyArray<Child>} children
 */
function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue
    if (Array.isArray(c)) append(el, c)
    else el.append(c instanceof Node ? c : textNode(String(c)))
  }
}
