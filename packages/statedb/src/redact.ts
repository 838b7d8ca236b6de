// Redaction: what inspection, dumps and logs show of an object instead of its secrets.
// statedb knows no object format: it redacts what is marked sensitive, and packages that know a
// format (@statewright/k8s: core v1 Secrets, kubectl's last-applied annotation) add rules.
//
// Invariants:
// - the `data` and `stringData` of an object marked sensitive, or that a rule calls secret, are
//   replaced, at any depth (wrapped in a desired object, in a list, ...);
// - a rule's rewrite of a field sees the field already redacted and may redact more (text that
//   holds an object, as JSON);
// - the input is never modified: what changes is copied along its path, and an object with nothing
//   secret comes back as itself (no copy on the common path);
// - a cycle is cut with the text "(circular)", so what comes back can always be serialized;
// - rules are added once per name (a package loaded twice adds nothing twice).

export type Redactor = (table: string, obj: unknown) => unknown

/** Marks an object's `data`/`stringData` as secret (an enumerable symbol: spreads keep it, JSON never shows it). */
export const SENSITIVE: unique symbol = Symbol.for('statewright.sensitive') as any
export function markSensitive<T extends object>(obj: T): T {
  ;(obj as Record<symbol, unknown>)[SENSITIVE] = true
  return obj
}

/** What a rule's rewrite gets: whether the object holding the field is secret, and the redactor. */
export interface RedactionContext {
  readonly secret: boolean
  /** Redacts `value` by every rule; with `asSecret`, treats it as a secret object itself. */
  redact(value: unknown, asSecret?: boolean): unknown
}

/** A rule a package that knows an object format adds to every redactor of the process. */
export interface RedactionRule {
  /** Rules are added once per name. */
  readonly name: string
  /** Whether an object holds secrets in `data` and `stringData`. */
  isSecret?(obj: Readonly<Record<string, unknown>>): boolean
  /** A field whose (already redacted) value the rule may redact further, with `rewrite`. */
  readonly field?: string
  /** Returns the field's value redacted further, or the value itself when nothing changes. */
  rewrite?(value: unknown, ctx: RedactionContext): unknown
}

export const REDACTED = '(redacted)'
const rules = new Map<string, RedactionRule>()

/** Adds a rule to every redactor (redactSecrets, dumps, the HTTP handler, the controller's logs). */
export function addRedactionRule(rule: RedactionRule): void {
  if (!rules.has(rule.name)) rules.set(rule.name, rule)
}

function isSecret(o: Record<string | symbol, unknown>): boolean {
  if (o[SENSITIVE] === true) return true
  for (const r of rules.values()) if (r.isSecret?.(o) === true) return true
  return false
}

function redactDeep(v: unknown, seen: WeakSet<object>): unknown {
  if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) return v
  if (seen.has(v)) return '(circular)'
  seen.add(v)
  try {
    if (Array.isArray(v)) {
      let out: unknown[] | undefined
      v.forEach((x, i) => {
        const r = redactDeep(x, seen)
        if (r !== x) (out ??= [...v])[i] = r
      })
      return out ?? v
    }
    const o = v as Record<string | symbol, unknown>
    const secret = isSecret(o)
    let out: Record<string, unknown> | undefined
    for (const k of Object.keys(o)) {
      let r = secret && (k === 'data' || k === 'stringData') ? REDACTED : redactDeep(o[k], seen)
      for (const rule of rules.values()) if (rule.field === k && rule.rewrite) r = rule.rewrite(r, { secret, redact })
      if (r !== o[k]) (out ??= { ...(o as Record<string, unknown>) })[k] = r
    }
    return out ?? v
  } finally {
    seen.delete(v)
  }
}

function redact(value: unknown, asSecret = false): unknown {
  const v = asSecret && typeof value === 'object' && value !== null ? { ...value, [SENSITIVE]: true } : value
  return redactDeep(v, new WeakSet())
}

/**
 * The default redactor: hides `data` and `stringData` of every object marked sensitive or that a rule
 * calls secret (with @statewright/k8s loaded: every core v1 Secret), at any depth, and whatever the
 * rules redact further. Returns the object itself when nothing in it is secret.
 */
export const redactSecrets: Redactor = (_table, obj) => redactDeep(obj, new WeakSet())
