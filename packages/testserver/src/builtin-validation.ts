// Validation of the built-in kinds: the checks of kube-apiserver's validation packages a controller
// author runs into (selectors that must match templates, containers with a name and an image, data
// size limits, immutable fields, names a kind restricts further), with the real field paths and
// message texts. Not every rule of the real server is here (see docs/testserver.md for what is not).
// Invariant: a check names the field; all causes of one write are reported together (422 Invalid).
import type { AdmissionRequest } from './admission.ts'
import { badRequest, invalid, type StatusCause } from './status.ts'
import { labelSelectorMatches } from './selectors.ts'
import { deepEqual } from './patch.ts'

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/
export const MAX_CONFIG_DATA = 1024 * 1024

const req = (field: string, extra = ''): StatusCause => ({ reason: 'FieldValueRequired', message: `Required value${extra}`, field })
const bad = (field: string, value: string, why: string): StatusCause => ({
  reason: 'FieldValueInvalid',
  message: `Invalid value: ${value}: ${why}`,
  field,
})
const immutable = (field: string, value: unknown): StatusCause => bad(field, goShow(value), 'field is immutable')
const goShow = (v: unknown) =>
  typeof v === 'string' ? JSON.stringify(v) : typeof v === 'number' ? String(v) : JSON.stringify(JSON.stringify(v))
const goMap = (m: Record<string, string> | undefined) =>
  `map[string]string{${Object.entries(m ?? {})
    .map(([k, v]) => `"${k}":"${v}"`)
    .join(', ')}}`

/** Fields a Go client would fail to decode: 400, as a real server answers a body it cannot decode. */
const INT_FIELDS: Record<string, string[]> = {
  'apps/deployments': ['replicas', 'minReadySeconds', 'revisionHistoryLimit', 'progressDeadlineSeconds'],
  'apps/statefulsets': ['replicas', 'minReadySeconds', 'revisionHistoryLimit'],
  'apps/replicasets': ['replicas', 'minReadySeconds'],
  'batch/jobs': ['parallelism', 'completions', 'backoffLimit', 'activeDeadlineSeconds'],
  'autoscaling/horizontalpodautoscalers': ['minReplicas', 'maxReplicas'],
}

function containerCauses(cs: unknown, at: string, out: StatusCause[], required: boolean): void {
  if (!Array.isArray(cs) || cs.length === 0) {
    if (required) out.push(req(at))
    return
  }
  const names = new Set<string>()
  cs.forEach((c: any, i: number) => {
    const p = `${at}[${i}]`
    if (!c?.name) out.push(req(`${p}.name`))
    else if (!DNS1123_LABEL.test(c.name) || c.name.length > 63)
      out.push(
        bad(
          `${p}.name`,
          JSON.stringify(c.name),
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
      )
    else if (names.has(c.name))
      out.push({ reason: 'FieldValueDuplicate', message: `Duplicate value: ${JSON.stringify(c.name)}`, field: `${p}.name` })
    if (c?.name) names.add(c.name)
    if (!c?.image) out.push(req(`${p}.image`))
    if (Array.isArray(c?.ports))
      c.ports.forEach((port: any, j: number) => {
        const n = port?.containerPort
        if (!Number.isInteger(n) || n < 1 || n > 65535)
          out.push(bad(`${p}.ports[${j}].containerPort`, String(n ?? 0), 'must be between 1 and 65535, inclusive'))
      })
  })
}

function podSpecCauses(spec: any, at: string, out: StatusCause[], restart?: string[]): void {
  if (!isObj(spec)) {
    out.push(req(`${at}.containers`))
    return
  }
  containerCauses(spec.containers, `${at}.containers`, out, true)
  containerCauses(spec.initContainers, `${at}.initContainers`, out, false)
  if (restart && spec.restartPolicy !== undefined && !restart.includes(spec.restartPolicy))
    out.push({
      reason: 'FieldValueNotSupported',
      message: `Unsupported value: ${JSON.stringify(spec.restartPolicy)}: supported values: ${restart.map((r) => `"${r}"`).join(', ')}`,
      field: `${at}.restartPolicy`,
    })
}

function workloadCauses(r: AdmissionRequest, out: StatusCause[], what: string): void {
  const spec = r.object.spec
  if (!isObj(spec)) return void out.push(req('spec.selector'))
  if (Number.isInteger(spec.replicas) && spec.replicas < 0)
    out.push(bad('spec.replicas', String(spec.replicas), 'must be greater than or equal to 0'))
  const sel = spec.selector
  if (!isObj(sel)) out.push(req('spec.selector'))
  else if (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0)
    out.push(bad('spec.selector', goShow(sel), `empty selector is invalid for ${what}`))
  else if (!labelSelectorMatches(sel, spec.template?.metadata?.labels))
    out.push(bad('spec.template.metadata.labels', goMap(spec.template?.metadata?.labels), '`selector` does not match template `labels`'))
  podSpecCauses(spec.template?.spec, 'spec.template.spec', out, what === 'job' ? ['OnFailure', 'Never'] : ['Always'])
  const old = r.oldObject?.spec
  if (old && isObj(sel) && !deepEqual(old.selector, sel)) out.push(immutable('spec.selector', sel))
}

/** The validating step for built-in kinds. */
export function builtinValidationStep(r: AdmissionRequest): void {
  const t = r.type
  if (!t.builtin) return
  const key = `${t.group}/${t.resource}`
  const o = r.object
  for (const f of INT_FIELDS[key] ?? []) {
    const v = o.spec?.[f]
    if (v !== undefined && v !== null && !Number.isInteger(v))
      throw badRequest(
        `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: json: cannot unmarshal ${typeof v === 'string' ? 'string' : typeof v === 'number' ? 'number ' + v : typeof v} into Go struct field ${t.kind}Spec.spec.${f} of type int32`,
      )
  }
  if (r.subresource === 'status') return
  const out: StatusCause[] = []
  const name: string = o.metadata?.name ?? ''
  const old = r.oldObject
  switch (key) {
    case '/namespaces':
      if (name.length > 63 || !DNS1123_LABEL.test(name))
        out.push(
          bad(
            'metadata.name',
            JSON.stringify(name),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
          ),
        )
      break
    case '/configmaps':
    case '/secrets': {
      let size = 0
      for (const field of ['data', 'binaryData', 'stringData']) {
        for (const [k, v] of Object.entries(o[field] ?? {})) {
          if (!CONFIG_KEY.test(k) || k.length > 253)
            out.push(
              bad(
                `${field}[${k}]`,
                JSON.stringify(k),
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
              ),
            )
          size +=
            typeof v === 'string' ? (field === 'data' && key === '/secrets' ? Math.floor((v.length * 3) / 4) : Buffer.byteLength(v)) : 0
        }
      }
      if (size > MAX_CONFIG_DATA)
        out.push({
          reason: 'FieldValueTooLong',
          message: `Too long: must have at most ${MAX_CONFIG_DATA} bytes`,
          field: key === '/secrets' ? 'data' : '[]',
        })
      if (old?.immutable === true) {
        for (const field of ['data', 'binaryData'])
          if (!deepEqual(old[field], o[field]))
            out.push({ reason: 'FieldValueForbidden', message: 'Forbidden: field is immutable when `immutable` is set', field })
        if (o.immutable !== true)
          out.push({ reason: 'FieldValueForbidden', message: 'Forbidden: field is immutable when `immutable` is set', field: 'immutable' })
      }
      if (key === '/secrets' && old && old.type !== o.type) out.push(immutable('type', o.type))
      break
    }
    case '/services': {
      if (name.length > 63 || !DNS1035_LABEL.test(name))
        out.push(
          bad(
            'metadata.name',
            JSON.stringify(name),
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
          ),
        )
      const spec = o.spec ?? {}
      const ports = spec.ports
      if (spec.type !== 'ExternalName' && spec.clusterIP !== 'None' && (!Array.isArray(ports) || ports.length === 0))
        out.push(req('spec.ports'))
      if (Array.isArray(ports)) {
        const names = new Set<string>()
        ports.forEach((p: any, i: number) => {
          if (ports.length > 1 && !p?.name) out.push(req(`spec.ports[${i}].name`))
          if (p?.name && names.has(p.name))
            out.push({
              reason: 'FieldValueDuplicate',
              message: `Duplicate value: ${JSON.stringify(p.name)}`,
              field: `spec.ports[${i}].name`,
            })
          if (p?.name) names.add(p.name)
          if (!Number.isInteger(p?.port) || p.port < 1 || p.port > 65535)
            out.push(bad(`spec.ports[${i}].port`, String(p?.port ?? 0), 'must be between 1 and 65535, inclusive'))
        })
      }
      const oldIps = old?.spec?.clusterIPs
      if (Array.isArray(oldIps) && !deepEqual(oldIps, spec.clusterIPs))
        out.push(
          bad(
            'spec.clusterIPs[0]',
            `[]string{${(spec.clusterIPs ?? []).map((x: string) => `"${x}"`).join(', ')}}`,
            'may not change once set',
          ),
        )
      break
    }
    case '/pods':
      podSpecCauses(o.spec, 'spec', out)
      if (old && !podUpdateAllowed(old.spec, o.spec))
        out.push({
          reason: 'FieldValueForbidden',
          message:
            'Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
          field: 'spec',
        })
      break
    case 'apps/deployments':
      workloadCauses(r, out, 'deployment')
      break
    case 'apps/statefulsets':
    case 'apps/daemonsets':
    case 'apps/replicasets':
      workloadCauses(r, out, t.resource.slice(0, -1))
      break
    case 'batch/jobs':
      workloadCauses(r, out, 'job')
      if (old && !deepEqual(old.spec?.template, o.spec?.template) && !o.spec?.suspend)
        out.push(immutable('spec.template', o.spec?.template))
      break
    case 'batch/cronjobs': {
      const s = o.spec?.schedule
      if (!s) out.push(req('spec.schedule'))
      else if (!/^@(yearly|annually|monthly|weekly|daily|midnight|hourly|every .+)$/.test(s) && String(s).trim().split(/\s+/).length !== 5)
        out.push(
          bad(
            'spec.schedule',
            JSON.stringify(s),
            `expected exactly 5 fields, found ${String(s).trim().split(/\s+/).length}: ${JSON.stringify(s)}`,
          ),
        )
      podSpecCauses(o.spec?.jobTemplate?.spec?.template?.spec, 'spec.jobTemplate.spec.template.spec', out, ['OnFailure', 'Never'])
      break
    }
    case 'networking.k8s.io/ingresses':
      ;(o.spec?.rules ?? []).forEach((rule: any, i: number) =>
        (rule?.http?.paths ?? []).forEach((p: any, j: number) => {
          if (!p?.pathType) out.push(req(`spec.rules[${i}].http.paths[${j}].pathType`, ': pathType must be specified'))
          else if (!['Exact', 'Prefix', 'ImplementationSpecific'].includes(p.pathType))
            out.push({
              reason: 'FieldValueNotSupported',
              message: `Unsupported value: ${JSON.stringify(p.pathType)}: supported values: "Exact", "ImplementationSpecific", "Prefix"`,
              field: `spec.rules[${i}].http.paths[${j}].pathType`,
            })
        }),
      )
      break
    case 'policy/poddisruptionbudgets':
      if (o.spec?.minAvailable !== undefined && o.spec?.maxUnavailable !== undefined)
        out.push(bad('spec', goShow(o.spec), 'minAvailable and maxUnavailable cannot be both set'))
      break
    case 'rbac.authorization.k8s.io/roles':
    case 'rbac.authorization.k8s.io/clusterroles':
      ;(o.rules ?? []).forEach((rule: any, i: number) => {
        if (!Array.isArray(rule?.verbs) || rule.verbs.length === 0)
          out.push(req(`rules[${i}].verbs`, ': verbs must contain at least one value'))
      })
      break
    case 'rbac.authorization.k8s.io/rolebindings':
    case 'rbac.authorization.k8s.io/clusterrolebindings': {
      const ref = o.roleRef
      if (!ref?.name) out.push(req('roleRef.name'))
      if (!['Role', 'ClusterRole'].includes(ref?.kind))
        out.push({
          reason: 'FieldValueNotSupported',
          message: `Unsupported value: ${JSON.stringify(ref?.kind ?? '')}: supported values: "Role", "ClusterRole"`,
          field: 'roleRef.kind',
        })
      if (old && !deepEqual(old.roleRef, ref)) out.push(bad('roleRef', goShow(ref), 'cannot change roleRef'))
      break
    }
    case '/persistentvolumeclaims': {
      const spec = o.spec ?? {}
      if (!Array.isArray(spec.accessModes) || spec.accessModes.length === 0)
        out.push(req('spec.accessModes', ': at least 1 access mode is required'))
      if (spec.resources?.requests?.storage === undefined) out.push(req('spec.resources[storage]'))
      if (old) {
        const strip = (s: any) => ({ ...s, resources: { ...(s?.resources ?? {}), requests: undefined }, volumeName: undefined })
        if (!deepEqual(strip(old.spec), strip(spec)))
          out.push({
            reason: 'FieldValueForbidden',
            message: 'Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
            field: 'spec',
          })
      }
      break
    }
    case 'autoscaling/horizontalpodautoscalers': {
      const spec = o.spec ?? {}
      if (!spec.scaleTargetRef?.kind) out.push(req('spec.scaleTargetRef.kind'))
      if (!spec.scaleTargetRef?.name) out.push(req('spec.scaleTargetRef.name'))
      if (!(spec.maxReplicas >= 1)) out.push(bad('spec.maxReplicas', String(spec.maxReplicas ?? 0), 'must be greater than or equal to 1'))
      if (spec.minReplicas > spec.maxReplicas)
        out.push(bad('spec.minReplicas', String(spec.minReplicas), 'must be less than or equal to maxReplicas'))
      break
    }
    case 'discovery.k8s.io/endpointslices':
      if (!o.addressType) out.push(req('addressType'))
      else if (old && old.addressType !== o.addressType) out.push(immutable('addressType', o.addressType))
      break
  }
  if (out.length) throw invalid(t.kind, t.group, name, out)
}

function podUpdateAllowed(a: any, b: any): boolean {
  const strip = (s: any) => {
    if (!isObj(s)) return s
    const { activeDeadlineSeconds: _a, tolerations: _t, terminationGracePeriodSeconds: _g, ...rest } = s
    const noImage = (cs: any) => (Array.isArray(cs) ? cs.map((c: any) => (isObj(c) ? { ...c, image: undefined } : c)) : cs)
    return { ...rest, containers: noImage(rest.containers), initContainers: noImage(rest.initContainers) }
  }
  return deepEqual(strip(a), strip(b))
}
