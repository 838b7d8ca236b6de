// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1), enforced as kube-apiserver's
// validating policy plugin enforces it (k8s.io/apiserver/pkg/admission/plugin/policy/validating):
// every stored policy with a binding that names it is evaluated on each CREATE, UPDATE and DELETE
// it matches, in the validating phase before the admission webhooks.
// Invariants:
// - A binding applies when its policy's matchConstraints (resourceRules, excludeResourceRules,
//   namespaceSelector, objectSelector) and its own matchResources (when set) match the request,
//   and every matchCondition is true. Rules match the request's own version (matchPolicy Exact).
// - params: the binding's paramRef (by name, or every object its selector selects, in its namespace
//   or the request's) of the policy's paramKind; none found: parameterNotFoundAction Deny (the
//   default) denies with kube-apiserver's message, Allow skips the binding.
// - The CEL variables are object, oldObject, request, params, namespaceObject and variables (the
//   policy's named variables, evaluated in order); integral numbers are CEL ints.
// - A validation that is false (or an evaluation error under failurePolicy Fail, the default) is a
//   decision with its message (message, messageExpression, or "failed expression: <expr>") and
//   reason (Invalid unless set). validationActions: Deny fails the request with the first decision
//   (`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding '<b>' denied
//   request: <message>`, its reason and code); Warn adds a Warning; Audit is not recorded (no audit log).
// - A policy whose expressions do not compile denies under Fail, is skipped under Ignore.
// - Requests for admissionregistration.k8s.io's own kinds are exempt, as in kube-apiserver.
import type { AdmissionRequest, WritePipeline } from './admission.ts'
import type { ResourceType } from './resources.ts'
import type { Store } from './store.ts'
import { StatusError } from './status.ts'
import { labelSelectorMatches } from './selectors.ts'
import { celExpression, celLoaded, isCelError, jsonToCel, loadCel } from './cel.ts'

const G = 'admissionregistration.k8s.io'
const POLICIES = `${G}/validatingadmissionpolicies`
const BINDINGS = `${G}/validatingadmissionpolicybindings`
const CODES: Record<string, number> = { Unauthorized: 401, Forbidden: 403, Invalid: 422, RequestEntityTooLarge: 413 }

export interface PolicySource {
  store: Store
  namespaceLabels(name: string): Record<string, string> | undefined
  namespace(name: string): any
  /** The stored objects of a kind (`apiVersion`, `kind`) in a namespace (undefined: all). */
  objectsOf(apiVersion: string, kind: string, namespace: string | undefined): any[]
}

type Request = Omit<AdmissionRequest, 'operation'> & { operation: AdmissionRequest['operation'] | 'DELETE' }

export function installPolicyAdmission(p: WritePipeline, src: PolicySource): void {
  p.validating.push((req) => admitByPolicies(req, src))
}

/** Evaluates the bound policies on one request (also used for DELETEs). */
export function admitByPolicies(req: Request, src: PolicySource): void | Promise<void> {
  // admission configuration itself is exempt (IsExemptAdmissionConfigurationResource)
  if (req.type.group === G) return
  if (!src.store.has(POLICIES) || !src.store.has(BINDINGS)) return
  const snap = src.store.snapshot()
  const bindings = [...src.store.scan(BINDINGS, undefined, undefined, snap)].map(([, b]) => b)
  if (bindings.length === 0) return
  if (!celLoaded()) return loadCel().then(() => admitByPolicies(req, src))
  const policies = new Map([...src.store.scan(POLICIES, undefined, undefined, snap)].map(([, p]) => [p.metadata.name, p]))
  let denied: StatusError | undefined
  for (const binding of bindings.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
    const policy = policies.get(binding.spec?.policyName)
    if (!policy || !matches(policy.spec?.matchConstraints, req, src)) continue
    if (binding.spec?.matchResources && !matches(binding.spec.matchResources, req, src)) continue
    const actions: string[] = binding.spec?.validationActions ?? []
    for (const d of decisions(policy, binding, req, src)) {
      if (actions.includes('Warn'))
        req.warnings.push(
          `Validation failed for ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${binding.metadata.name}': ${d.message}`,
        )
      if (actions.includes('Deny') && !denied) denied = denial(req, policy, binding, d)
    }
  }
  if (denied) throw denied
}

interface Decision {
  message: string
  reason: string
}

function denial(req: Request, policy: any, binding: any, d: Decision): StatusError {
  const t = req.type
  const name = req.object?.metadata?.name ?? req.oldObject?.metadata?.name ?? ''
  const message = `ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${binding.metadata.name}' denied request: ${d.message}`
  const resource = t.group ? `${t.resource}.${t.group}` : t.resource
  const details: any = { name, kind: t.resource, causes: [{ message }] }
  if (t.group) details.group = t.group
  return new StatusError(CODES[d.reason] ?? 422, d.reason, `${resource} "${name}" is forbidden: ${message}`, details)
}

function decisions(policy: any, binding: any, req: Request, src: PolicySource): Decision[] {
  const spec = policy.spec ?? {}
  const fail = spec.failurePolicy !== 'Ignore'
  const out: Decision[] = []
  const error = (message: string) => {
    if (fail) out.push({ message, reason: 'Invalid' })
  }
  let paramsList: unknown[] = [null]
  if (spec.paramKind) {
    const ref = binding.spec?.paramRef
    const ns = ref?.namespace ?? (req.type.namespaced ? (req.object ?? req.oldObject)?.metadata?.namespace : undefined)
    const found = !ref
      ? []
      : src
          .objectsOf(spec.paramKind.apiVersion, spec.paramKind.kind, ns)
          .filter((o) =>
            ref.name ? o.metadata.name === ref.name : ref.selector ? labelSelectorMatches(ref.selector, o.metadata?.labels) : false,
          )
    if (found.length === 0) {
      if (ref?.parameterNotFoundAction === 'Allow') return []
      error('failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction')
      return out
    }
    paramsList = found
  }
  const t = req.type
  const obj = req.object ?? null
  const nsName = (req.object ?? req.oldObject)?.metadata?.namespace
  const request = {
    kind: { group: t.group, version: t.version, kind: t.kind },
    resource: { group: t.group, version: t.version, resource: t.resource },
    ...(req.subresource ? { subResource: req.subresource } : {}),
    name: (req.object ?? req.oldObject)?.metadata?.name ?? '',
    namespace: nsName ?? '',
    operation: req.operation,
    userInfo: { username: 'system:admin', groups: ['system:masters', 'system:authenticated'] },
    dryRun: req.dryRun,
  }
  for (const params of paramsList) {
    const ctx: Record<string, unknown> = {
      object: jsonToCel(obj),
      oldObject: jsonToCel(req.oldObject ?? null),
      request: jsonToCel(request),
      params: jsonToCel(params),
      namespaceObject: jsonToCel(nsName && t.namespaced ? (src.namespace(nsName) ?? null) : null),
    }
    try {
      const vars = new Map<string, unknown>()
      ctx.variables = vars
      for (const v of spec.variables ?? []) vars.set(v.name, celExpression(v.expression)(ctx))
      let applies = true
      for (const c of spec.matchConditions ?? []) {
        const r = celExpression(c.expression)(ctx)
        if (isCelError(r)) {
          error(`failed to evaluate matchCondition '${c.name}': ${r.message}`)
          applies = false
          break
        }
        if (r !== true) applies = false
      }
      if (!applies) continue
      for (const v of spec.validations ?? []) {
        const r = celExpression(v.expression)(ctx)
        if (r === true) continue
        if (isCelError(r)) {
          error(`expression '${v.expression}' resulted in error: ${r.message}`)
          continue
        }
        let message = v.message ?? `failed expression: ${String(v.expression).trim()}`
        if (v.messageExpression) {
          const m = celExpression(v.messageExpression)(ctx)
          if (typeof m === 'string' && m.trim() !== '') message = m
          else if (isCelError(m)) message = `failed messageExpression: ${m.message}`
        }
        out.push({ message, reason: v.reason ?? 'Invalid' })
      }
    } catch (e) {
      error(`compilation failed: ${(e as Error).message}`) // an expression that does not parse
    }
  }
  return out
}

function matches(m: any, req: Request, src: PolicySource): boolean {
  if (!m) return false
  const t = req.type
  const rule = (r: any) => ruleMatches(r, req, t)
  if (!(m.resourceRules ?? []).some(rule)) return false
  if ((m.excludeResourceRules ?? []).some(rule)) return false
  const obj = req.object ?? req.oldObject
  if (m.objectSelector && !labelSelectorMatches(m.objectSelector, obj?.metadata?.labels)) return false
  if (m.namespaceSelector && t.namespaced) {
    const ns = obj?.metadata?.namespace
    if (!labelSelectorMatches(m.namespaceSelector, ns ? src.namespaceLabels(ns) : undefined)) return false
  }
  return true
}

function ruleMatches(r: any, req: Request, t: ResourceType): boolean {
  const any = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v)
  const resource = req.subresource ? `${t.resource}/${req.subresource}` : t.resource
  const name = (req.object ?? req.oldObject)?.metadata?.name
  return (
    any(r.operations, req.operation) &&
    any(r.apiGroups, t.group) &&
    any(r.apiVersions, t.version) &&
    (r.resources ?? []).some((x: string) => x === '*/*' || x === resource || (x === '*' && !req.subresource) || x === `${t.resource}/*`) &&
    (!r.resourceNames?.length || r.resourceNames.includes(name)) &&
    (r.scope === undefined || r.scope === '*' || r.scope === (t.namespaced ? 'Namespaced' : 'Cluster'))
  )
}
