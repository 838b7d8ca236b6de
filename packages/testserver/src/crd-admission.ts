// The admission steps for custom resources (mutating: pruning and defaulting; validating: the
// structural schema, list uniqueness, CEL rules) and for CustomResourceDefinitions (their schemas must
// be structural and compile). Registered on the server's WritePipeline (admission.ts).
// Invariants:
// - A kind without a schema (control.registerKind without one) is neither pruned nor validated.
// - A CRD version's compiled validator is cached on its schema object: compiled once when the CRD is
//   created, reused by every write of its kinds; a CRD change brings new schema objects.
// - Unknown fields: Warn (default) adds `unknown field "spec.x"` warnings, Strict refuses with
//   400 (`strict decoding error`), Ignore drops them silently, as kube-apiserver does.
import type { ValidateFunction } from 'ajv'
import type { AdmissionRequest, WritePipeline } from './admission.ts'
import type { ResourceType } from './resources.ts'
import { badRequest, invalid, type StatusCause } from './status.ts'
import { pruneAndDefault } from './pruning.ts'
import { causesOf, compileSchema, listErrors } from './schema-validation.ts'
import { celCauses, celLoaded, hasRules, loadCel } from './cel.ts'
import { checkCrdSchemas } from './crd-schema.ts'
import { pathOfPointer, ratchets } from './ratcheting.ts'
import { crdVersionsStep } from './crds.ts'

/** Cached per schema object (schema-validation.ts): a CRD change brings new objects, so new validators. */
function validatorOf(t: ResourceType): ValidateFunction {
  return compileSchema(t.schema!)
}

const isCrd = (t: ResourceType) => t.group === 'apiextensions.k8s.io' && t.resource === 'customresourcedefinitions'

/** Prunes unknown fields and applies schema defaults (mutating). */
export function pruneStep(req: AdmissionRequest): void {
  const t = req.type
  if (t.builtin || !t.schema) return
  const { value, unknown } = pruneAndDefault(req.object, t.schema)
  if (unknown.length) {
    if (req.fieldValidation === 'Strict')
      throw badRequest(
        `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: strict decoding error: ${unknown.map((u) => `unknown field "${u}"`).join(', ')}`,
      )
    if (req.fieldValidation === 'Warn') for (const u of unknown) req.warnings.push(`unknown field "${u}"`)
  }
  req.object = value
}

/** Validates against the schema, then list-type uniqueness, then CEL rules (validating). */
export function validateStep(req: AdmissionRequest): void | Promise<void> {
  const t = req.type
  const schemaWithRules = isCrd(t) ? req.object : !t.builtin && t.schema ? t.schema : undefined
  // the first rule to evaluate loads CEL (cel.ts): this one write waits for it
  if (schemaWithRules && !celLoaded() && hasRules(schemaWithRules)) return loadCel().then(() => validateStep(req))
  if (isCrd(t)) {
    if (req.subresource !== 'status') checkCrdSchemas(req.object)
    return
  }
  if (t.builtin || !t.schema) return
  const validate = validatorOf(t)
  let causes: StatusCause[] = []
  if (!validate(req.object)) {
    let errors = validate.errors ?? []
    // ratcheting (ratcheting.ts): on an update, errors at nodes that did not change are dropped
    const old = req.oldObject
    if (old) errors = errors.filter((e) => !ratchets(req.object, old, t.schema!, pathOfPointer(req.object, e.instancePath)))
    if (errors.length) causes = causesOf(errors, req.object)
  }
  listErrors(req.object, t.schema, '', causes)
  // as kube-apiserver (hasBlockingErr): a wrong type or an unsupported value keeps CEL rules from
  // running, and says so when the schema has rules (strategy.go: only with a CEL validator)
  const blocking = causes.some((c) => c.reason === 'FieldValueTypeInvalid' || c.reason === 'FieldValueNotSupported')
  if (blocking && hasRules(t.schema))
    causes.push({
      reason: 'FieldValueInvalid',
      message:
        'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
      field: '<nil>',
    })
  else if (!blocking) celCauses(withoutMeta(req.object), req.oldObject ? withoutMeta(req.oldObject) : undefined, t.schema, '', causes)
  if (causes.length) throw invalid(t.kind, t.group, req.object.metadata?.name ?? '', causes)
}

/** metadata is ObjectMeta, not the CRD's: rules at the root see only name and generateName of it. */
function withoutMeta(o: any): any {
  const { metadata, ...rest } = o
  const m: Record<string, unknown> = {}
  if (metadata?.name !== undefined) m.name = metadata.name
  if (metadata?.generateName !== undefined) m.generateName = metadata.generateName
  return { ...rest, metadata: m }
}

export function installCrdAdmission(p: WritePipeline): void {
  p.mutating.push(pruneStep)
  p.validating.push(validateStep, crdVersionsStep)
}
