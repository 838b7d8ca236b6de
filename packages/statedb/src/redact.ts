// Redaction: what inspection, dumps and logs show of an object instead of its secrets.
//
// Invariants:
// - the `data` and `stringData` of a Kubernetes Secret (`kind: Secret`, core v1) and of any object
//   marked sensitive are replaced, at any depth (a Secret wrapped in a desired object, in a list, ...);
// - `kubectl apply` copies a whole manifest into the annotation
//   kubectl.kubernetes.io/last-applied-configuration of any object, so a Secret embedded in a custom
//   resource is there again, as JSON text: that text is parsed, redacted by the same rules and written
//   back (the manifest of a secret object is treated as secret whatever kind it names); when it cannot
//   be parsed, an annotation of a secret object is replaced whole;
// - the input is never modified: what changes is copied along its path, and an object with nothing
//   secret comes back as itself (no copy on the common path);
// - a cycle is cut with the text "(circular)", so what comes back can always be serialized.

export type Redactor = (table: string, obj: unknown) => unknown

/** Marks an object's `data`/`stringData` as secret (an enumerable symbol: spreads keep it, JSON never shows it). */
export const SENSITIVE: unique symbol = Symbol.for('statewright.sensitive') as any
export function markSensitive<T extends object>(obj: T): T {
  ;(obj as Record<symbol, unknown>)[SENSITIVE] = true
  return obj
}

const REDACTED = '(redacted)'
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'

const isSecretLike = (o: Record<string | symbol, unknown>) =>
  o[SENSITIVE] === true || (o.kind === 'Secret' && (o.apiVersion === undefined || o.apiVersion === 'v1'))

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
    const secret = isSecretLike(o)
    let out: Record<string, unknown> | undefined
    for (const k of Object.keys(o)) {
      const r =
        secret && (k === 'data' || k === 'stringData')
          ? REDACTED
          : k === 'metadata'
            ? redactMeta(o[k], seen, secret)
            : redactDeep(o[k], seen)
      if (r !== o[k]) (out ??= { ...(o as Record<string, unknown>) })[k] = r
    }
    return out ?? v
  } finally {
    seen.delete(v)
  }
}

/** An object's metadata, with the manifest kubectl keeps in an annotation redacted like the object. */
function redactMeta(m: unknown, seen: WeakSet<object>, secret: boolean): unknown {
  const meta = redactDeep(m, seen)
  const applied = (meta as { annotations?: Record<string, unknown> } | null)?.annotations?.[LAST_APPLIED]
  if (typeof applied !== 'string') return meta
  let redacted: string
  try {
    let manifest: unknown = JSON.parse(applied)
    // the manifest of a secret object is a secret manifest, whatever kind it names
    if (secret && typeof manifest === 'object' && manifest !== null) manifest = { ...manifest, [SENSITIVE]: true }
    const r = redactDeep(manifest, new WeakSet())
    if (r === manifest) return meta
    redacted = JSON.stringify(r)
  } catch {
    if (!secret) return meta
    redacted = REDACTED
  }
  const md = meta as Record<string, unknown> & { annotations: Record<string, unknown> }
  return { ...md, annotations: { ...md.annotations, [LAST_APPLIED]: redacted } }
}

/**
 * The default redactor: hides `data` and `stringData` of every Kubernetes Secret and every object
 * marked sensitive, at any depth (a Secret inside a desired object, in a list, in the manifest that
 * `kubectl apply` keeps in an annotation). Returns the object itself when nothing in it is secret.
 */
export const redactSecrets: Redactor = (_table, obj) => redactDeep(obj, new WeakSet())
