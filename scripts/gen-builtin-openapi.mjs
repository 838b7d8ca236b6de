// Writes packages/testserver/src/builtin-openapi.json: OpenAPI v3 schemas of the built-in kinds the
// test server serves, derived from @kubernetes/client-node's generated models (their attribute type
// maps and doc comments come from Kubernetes' own OpenAPI, v1.34 for client-node 1.4), so that
// `kubectl explain deployment.spec` works against the test server. Run after upgrading client-node:
//   node scripts/gen-builtin-openapi.mjs
import * as k8s from '@kubernetes/client-node'
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
const modelsDir = join(dirname(require.resolve('@kubernetes/client-node')), 'gen', 'models')

// [group, kind, client-node model]: the built-in kinds of packages/testserver/src/resources.ts and builtin-kinds.ts
const KINDS = [
  ['', 'Namespace', 'V1Namespace'],
  ['', 'ConfigMap', 'V1ConfigMap'],
  ['', 'Secret', 'V1Secret'],
  ['', 'Service', 'V1Service'],
  ['', 'ServiceAccount', 'V1ServiceAccount'],
  ['', 'Pod', 'V1Pod'],
  ['', 'Node', 'V1Node'],
  ['', 'Event', 'CoreV1Event'],
  ['events.k8s.io', 'Event', 'EventsV1Event'],
  ['coordination.k8s.io', 'Lease', 'V1Lease'],
  ['apps', 'Deployment', 'V1Deployment'],
  ['apps', 'StatefulSet', 'V1StatefulSet'],
  ['apps', 'DaemonSet', 'V1DaemonSet'],
  ['apps', 'ReplicaSet', 'V1ReplicaSet'],
  ['apiextensions.k8s.io', 'CustomResourceDefinition', 'V1CustomResourceDefinition'],
  ['batch', 'Job', 'V1Job'],
  ['batch', 'CronJob', 'V1CronJob'],
  ['networking.k8s.io', 'Ingress', 'V1Ingress'],
  ['networking.k8s.io', 'IngressClass', 'V1IngressClass'],
  ['networking.k8s.io', 'NetworkPolicy', 'V1NetworkPolicy'],
  ['policy', 'PodDisruptionBudget', 'V1PodDisruptionBudget'],
  ['autoscaling', 'HorizontalPodAutoscaler', 'V2HorizontalPodAutoscaler'],
  ['rbac.authorization.k8s.io', 'Role', 'V1Role'],
  ['rbac.authorization.k8s.io', 'RoleBinding', 'V1RoleBinding'],
  ['rbac.authorization.k8s.io', 'ClusterRole', 'V1ClusterRole'],
  ['rbac.authorization.k8s.io', 'ClusterRoleBinding', 'V1ClusterRoleBinding'],
  ['', 'PersistentVolumeClaim', 'V1PersistentVolumeClaim'],
  ['', 'Endpoints', 'V1Endpoints'],
  ['discovery.k8s.io', 'EndpointSlice', 'V1EndpointSlice'],
  ['admissionregistration.k8s.io', 'ValidatingAdmissionPolicy', 'V1ValidatingAdmissionPolicy'],
  ['admissionregistration.k8s.io', 'ValidatingAdmissionPolicyBinding', 'V1ValidatingAdmissionPolicyBinding'],
]

/** Doc comments of a model's class and fields, from its .d.ts. */
function docs(model) {
  let text = ''
  try {
    text = readFileSync(join(modelsDir, `${model}.d.ts`), 'utf8')
  } catch {
    return { fields: {} }
  }
  // the first sentence only: what kubectl explain needs to say what a field is, at a third of the size
  const clean = (c) => {
    const t = c
      .replace(/^\s*\*\s?/gm, '')
      .replace(/\s+/g, ' ')
      .trim()
    const end = t.search(/\.(\s|$)/)
    return end < 0 ? t : t.slice(0, end + 1)
  }
  const cls = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*export declare class/.exec(text)
  const fields = {}
  for (const m of text.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*'([^']+)'\??:/g)) fields[m[2]] = clean(m[1])
  return { description: cls ? clean(cls[1]) : undefined, fields }
}

const schemas = {}
function typeSchema(type, format) {
  if (type === 'string') return format ? { type: 'string', format } : { type: 'string' }
  if (type === 'number')
    return format === 'double' || format === 'float' ? { type: 'number', format } : { type: 'integer', ...(format ? { format } : {}) }
  if (type === 'boolean') return { type: 'boolean' }
  if (type === 'Date') return { type: 'string', format: 'date-time' }
  if (type === 'IntOrString') return { 'x-kubernetes-int-or-string': true }
  if (type === 'any' || type === 'object') return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }
  let m = /^Array<(.+)>$/.exec(type)
  if (m) return { type: 'array', items: typeSchema(m[1], '') }
  m = /^\{ \[key: string\]: (.+); \}$/.exec(type)
  if (m) return { type: 'object', additionalProperties: typeSchema(m[1], '') }
  if (k8s[type]?.attributeTypeMap) {
    addModel(type)
    return { $ref: `#/components/schemas/${type}` }
  }
  return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }
}
function addModel(model) {
  if (schemas[model]) return
  schemas[model] = {} // reserve first: models refer to each other
  const d = docs(model)
  const properties = {}
  for (const a of k8s[model].attributeTypeMap) {
    const s = typeSchema(a.type, a.format)
    const desc = d.fields[a.name] ?? d.fields[a.baseName]
    properties[a.baseName] = s.$ref
      ? { allOf: [s], ...(desc ? { description: desc } : {}) }
      : { ...s, ...(desc ? { description: desc } : {}) }
  }
  schemas[model] = { type: 'object', ...(d.description ? { description: d.description } : {}), properties }
}
const kinds = {}
let schemasOut
for (const [group, kind, model] of KINDS) {
  if (!k8s[model]) throw new Error(`client-node has no model ${model}`)
  addModel(model)
  kinds[`${group}/${kind}`] = model
}
// kubectl explain shows a referenced schema's last name segment: `Container`, as on a real server,
// rather than client-node's `V1Container` (a name two models would share keeps the model's name)
const short = (m) => m.replace(/^(Core|Events)?V\d+((alpha|beta)\d+)?/, '')
const counts = new Map()
for (const m of Object.keys(schemas)) counts.set(short(m), (counts.get(short(m)) ?? 0) + 1)
const rename = (m) => (counts.get(short(m)) === 1 ? short(m) : m)
const renamed = JSON.parse(
  JSON.stringify(schemas).replace(/"#\/components\/schemas\/(\w+)"/g, (_, m) => `"#/components/schemas/${rename(m)}"`),
)
for (const m of Object.keys(renamed)) {
  const v = renamed[m]
  delete renamed[m]
  renamed[rename(m)] = v
}
for (const k of Object.keys(kinds)) kinds[k] = rename(kinds[k])
schemasOut = renamed
const out = JSON.stringify({
  source: 'generated by scripts/gen-builtin-openapi.mjs from @kubernetes/client-node models',
  kinds,
  schemas: schemasOut,
})
writeFileSync(new URL('../packages/testserver/src/builtin-openapi.json', import.meta.url), out + '\n')
console.log(
  `wrote packages/testserver/src/builtin-openapi.json: ${Object.keys(kinds).length} kinds, ${Object.keys(schemas).length} schemas, ${out.length} bytes`,
)
