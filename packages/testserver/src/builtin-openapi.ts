// The built-in kinds' OpenAPI schemas (builtin-openapi.json, generated from @kubernetes/client-node's
// models by scripts/gen-builtin-openapi.mjs): published at /openapi/v3 (openapi.ts) and used to
// prune unknown fields of built-in objects (builtinPruneStep), as kube-apiserver's decoder drops them.
// Invariants:
// - Read once, on first use; a missing file leaves built-in kinds undescribed and unpruned.
// - A kind's resolved schema follows `$ref`s into shared objects (one per referenced schema), so
//   recursive types (JSONSchemaProps) resolve to a finite graph.
import { readFileSync } from 'node:fs'
import type { AdmissionRequest } from './admission.ts'
import { badRequest } from './status.ts'
import { pruneAndDefault } from './pruning.ts'

type Schema = Record<string, any>
export interface BuiltinOpenApi {
  kinds: Record<string, string>
  schemas: Record<string, Schema>
}

let data: BuiltinOpenApi | undefined
/** From src/, or from dist/ next to the shipped src/. */
export function builtinOpenApi(): BuiltinOpenApi {
  if (data) return data
  for (const rel of ['./builtin-openapi.json', '../src/builtin-openapi.json']) {
    try {
      return (data = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as BuiltinOpenApi)
    } catch {
      // try the next place
    }
  }
  return (data = { kinds: {}, schemas: {} })
}

const resolvedByName = new Map<string, Schema>()
function resolve(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(resolve)
  if (typeof s !== 'object' || s === null) return s
  const o = s as Schema
  const refName = typeof o.$ref === 'string' ? o.$ref.slice('#/components/schemas/'.length) : undefined
  if (refName !== undefined) return resolvedNamed(refName)
  // { allOf: [{ $ref }], description }: the referenced schema itself
  if (Array.isArray(o.allOf) && o.allOf.length === 1 && typeof o.allOf[0]?.$ref === 'string') return resolve(o.allOf[0])
  const out: Schema = {}
  for (const [k, v] of Object.entries(o)) out[k] = k === 'description' ? v : resolve(v)
  return out
}
function resolvedNamed(name: string): Schema {
  let r = resolvedByName.get(name)
  if (r) return r
  const raw = builtinOpenApi().schemas[name]
  if (!raw) return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }
  r = {}
  resolvedByName.set(name, r) // before filling: a recursive type finds itself
  Object.assign(r, resolve(raw))
  return r
}

/** A built-in kind's schema with its references resolved (undefined when it has none). */
export function builtinSchema(group: string, kind: string): Schema | undefined {
  const model = builtinOpenApi().kinds[`${group}/${kind}`]
  return model ? resolvedNamed(model) : undefined
}

/** Drops fields a built-in kind does not have (Warn: `Warning` headers; Strict: 400; Ignore), as its decoder does. */
export function builtinPruneStep(req: AdmissionRequest): void {
  const t = req.type
  // a CRD's schemas are arbitrary JSON in places the models type loosely: left alone
  if (!t.builtin || t.group === 'apiextensions.k8s.io') return
  const schema = builtinSchema(t.group, t.kind)
  if (!schema) return
  const { value, unknown } = pruneAndDefault(req.object, schema)
  if (unknown.length === 0) return
  if (req.fieldValidation === 'Strict') throw badRequest(`strict decoding error: ${unknown.map((u) => `unknown field "${u}"`).join(', ')}`)
  if (req.fieldValidation === 'Warn') for (const u of unknown) req.warnings.push(`unknown field "${u}"`)
  req.object = value
}
