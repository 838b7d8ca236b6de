// What Kubernetes adds to statedb's redaction, for every redactor of a process that loads this
// package (inspection, dumps, the controller's logs).
//
// Invariants:
// - a core v1 Secret (`kind: Secret`, apiVersion v1 or none) is secret at any depth: its `data`
//   and `stringData` never show;
// - `kubectl apply` copies a whole manifest into the annotation
//   kubectl.kubernetes.io/last-applied-configuration of any object, so a Secret embedded in a custom
//   resource is there again, as JSON text: that text is parsed, redacted by the same rules and
//   written back (the manifest of a secret object is secret whatever kind it names); when it cannot
//   be parsed, the annotation of a secret object is replaced whole.
import { addRedactionRule, REDACTED, type RedactionContext } from '@statewright/statedb'

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'

/** The metadata with the manifest kubectl keeps in an annotation redacted like its object. */
function redactLastApplied(meta: unknown, ctx: RedactionContext): unknown {
  const applied = (meta as { annotations?: Record<string, unknown> } | null)?.annotations?.[LAST_APPLIED]
  if (typeof applied !== 'string') return meta
  let redacted: string
  try {
    const manifest: unknown = JSON.parse(applied)
    const r = ctx.redact(manifest, ctx.secret)
    if (r === manifest) return meta
    redacted = JSON.stringify(r)
    // a secret object's manifest is copied to be marked: unchanged when nothing in it was secret
    if (ctx.secret && redacted === JSON.stringify(manifest)) return meta
  } catch {
    if (!ctx.secret) return meta
    redacted = REDACTED
  }
  const md = meta as Record<string, unknown> & { annotations: Record<string, unknown> }
  return { ...md, annotations: { ...md.annotations, [LAST_APPLIED]: redacted } }
}

addRedactionRule({
  name: 'kubernetes',
  isSecret: (o) => o.kind === 'Secret' && (o.apiVersion === undefined || o.apiVersion === 'v1'),
  field: 'metadata',
  rewrite: redactLastApplied,
})
