// CRD `pattern`s are Go regular expressions (RE2 syntax), not JavaScript ones: kube-apiserver compiles
// them with Go's regexp package. They run here on @bufbuild/re2 (MIT; a TypeScript fork of RE2JS, itself
// a port of Go's and RE2's parser and matcher), which @bufbuild/cel already uses for CEL's `matches()`.
// Invariants:
// - What RE2 accepts matches as in Go: inline flags (`(?i)`, scoped `(?i:...)`, mid-pattern flags,
//   `(?s)`, `(?m)`, `(?U)`), `\A`, `\z`, POSIX classes (`[[:alpha:]]`), Unicode classes (`\pL`,
//   `\p{Greek}`), `\Q...\E`, Go's ASCII-only `\s`, `\d`, `\w`, `\b`; matching is unanchored and linear.
// - What RE2 refuses (backreferences, lookaround, possessive and nested repetition, `\C`, bad ranges)
//   is refused with Go's own message (`error parsing regexp: invalid escape sequence: \`\1\``).
// - A pattern is compiled once (cached by its text); a value matches when the pattern finds a match
//   anywhere in it, as OpenAPI's `pattern` says.
import { RE2JS } from '@bufbuild/re2'

const cache = new Map<string, RE2JS | string>()

function compile(pattern: string): RE2JS | string {
  let c = cache.get(pattern)
  if (c === undefined) {
    try {
      c = new RE2JS(pattern)
    } catch (e) {
      c = (e as Error).message
    }
    if (cache.size > 10_000) cache.clear() // patterns come from CRDs: few, but a long test run must not grow without bound
    cache.set(pattern, c)
  }
  return c
}

/** Go's parse error for a pattern RE2 refuses (`error parsing regexp: ...`), or undefined when it compiles. */
export function re2Error(pattern: string): string | undefined {
  const c = compile(pattern)
  return typeof c === 'string' ? c : undefined
}

/** Whether `value` contains a match of the RE2 `pattern` (which must compile: see re2Error). */
export function re2Test(pattern: string, value: string): boolean {
  const c = compile(pattern)
  if (typeof c === 'string') throw new SyntaxError(c)
  return c.test(value)
}

/**
 * ajv's `code.regExp` engine: every `pattern` keyword runs on RE2. ajv shares compiled patterns by
 * their `toString()`, so it must be the pattern's text.
 */
export function re2Engine(pattern: string): { test(s: string): boolean; toString(): string } {
  const c = compile(pattern)
  if (typeof c === 'string') throw new SyntaxError(c)
  return { test: (s: string) => c.test(s), toString: () => `re2:${pattern}` }
}
re2Engine.code = 'RE2'
