// The YAML kubectl, client-go and kind write a kubeconfig in, read without the `yaml` package (72
// modules, about 25 ms of an operator's cold start, for a file of a few lines). kubeconfig.ts tries
// this first and parses with `yaml` whenever this answers undefined.
// Invariants:
// - an answer is what `yaml`'s parse (YAML 1.2, core schema) gives for the same text; every construct
//   outside the small subset read here makes the answer undefined, never a guess: anchors, aliases,
//   tags, block scalars, flow collections other than {} and [], comments after a value, multi-line
//   scalars, documents markers and directives, tabs, double-quoted escapes, duplicate or unusual keys,
//   and plain scalars that the core schema may read as numbers or other non-strings;
// - the subset: block mappings and sequences (a sequence may sit at its key's indentation, as kubectl
//   writes it), plain, single-quoted and double-quoted (no escapes) scalars, null, true and false,
//   whole-line comments and blank lines.

/** The value of kubeconfig text in the subset, or undefined when the text is outside it (then parse with `yaml`). */
export function readSimpleYaml(text: string): unknown {
  const lines: Line[] = []
  for (const raw of text.split(/\r?\n/)) {
    if (raw.includes('\t')) return undefined
    const content = raw.trimEnd()
    const body = content.trimStart()
    if (body === '' || body.startsWith('#')) continue
    lines.push({ indent: content.length - body.length, body })
  }
  if (lines.length === 0) return undefined
  try {
    const p = new Parser(lines)
    const v = p.block(lines[0]!.indent)
    if (p.i !== lines.length) return undefined
    return v
  } catch (e) {
    if (e === OUTSIDE) return undefined
    throw e
  }
}

interface Line {
  indent: number
  body: string
}

const OUTSIDE = Symbol('outside the subset')
const SINGLE = /^'((?:[^']|'')*)'/
const DOUBLE = /^"([^"\\]*)"/
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_./-]*/
// plain scalars that are not strings in the core schema, read here; anything else non-string falls back
const SPECIAL: Record<string, null | boolean> = {
  null: null,
  Null: null,
  NULL: null,
  '~': null,
  true: true,
  True: true,
  TRUE: true,
  false: false,
  False: false,
  FALSE: false,
}

class Parser {
  i = 0
  constructor(private readonly lines: Line[]) {}

  /** The mapping or sequence whose first line is the current one, at `indent`. */
  block(indent: number): unknown {
    const l = this.lines[this.i]!
    if (l.indent !== indent) throw OUTSIDE
    return isItem(l.body) ? this.sequence(indent) : this.mapping(indent)
  }

  private mapping(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (let l = this.lines[this.i]; l && l.indent === indent && !isItem(l.body); l = this.lines[this.i]) {
      const k = key(l.body)
      if (!k || Object.hasOwn(out, k.key)) throw OUTSIDE
      this.i++
      out[k.key] = this.value(k.rest, indent, true)
    }
    return out
  }

  private sequence(indent: number): unknown[] {
    const out: unknown[] = []
    for (let l = this.lines[this.i]; l && l.indent === indent && isItem(l.body); l = this.lines[this.i]) {
      const rest = l.body.slice(1).trimStart()
      if (rest !== '' && key(rest)) {
        // "- name: x": a mapping whose keys sit at the column of `name`
        l.indent = indent + (l.body.length - rest.length)
        l.body = rest
        out.push(this.mapping(l.indent))
      } else {
        this.i++
        out.push(this.value(rest, indent, false))
      }
    }
    return out
  }

  /** A value after "key:" or "-": inline, or the block on the lines below (a mapping's sequence may share its indentation). */
  private value(rest: string, indent: number, ofKey: boolean): unknown {
    const next = this.lines[this.i]
    if (rest !== '') {
      if (next && next.indent > indent) throw OUTSIDE // a multi-line scalar
      return scalar(rest)
    }
    if (next && (next.indent > indent || (ofKey && next.indent === indent && isItem(next.body)))) return this.block(next.indent)
    return null
  }
}

function isItem(body: string): boolean {
  return body === '-' || body.startsWith('- ')
}

/** "key: rest" or "key:" with a plain or quoted key; undefined when the line is not a mapping entry of the subset. */
function key(body: string): { key: string; rest: string } | undefined {
  const m = SINGLE.exec(body) ?? DOUBLE.exec(body) ?? PLAIN_KEY.exec(body)
  if (!m) return undefined
  const after = body.slice(m[0].length)
  if (after !== ':' && !after.startsWith(': ')) return undefined
  const k = m[0].startsWith("'") ? m[1]!.replaceAll("''", "'") : m[0].startsWith('"') ? m[1]! : m[0]
  if (k === '__proto__' || (m[0] === k && Object.hasOwn(SPECIAL, k))) throw OUTSIDE
  return { key: k, rest: after.slice(1).trim() }
}

function scalar(s: string): unknown {
  if (s === '{}') return {}
  if (s === '[]') return []
  const q = SINGLE.exec(s) ?? DOUBLE.exec(s)
  if (q) {
    if (q[0].length !== s.length) throw OUTSIDE
    return s.startsWith("'") ? q[1]!.replaceAll("''", "'") : q[1]!
  }
  // indicators, and what the core schema may read as a number (digits, signs, .inf, .nan)
  if (/^[-?:,[\]{}#&*!|>'"%@`+.0-9]/.test(s) || s.includes(': ') || s.includes(' #') || s.endsWith(':')) throw OUTSIDE
  return Object.hasOwn(SPECIAL, s) ? SPECIAL[s] : s
}
