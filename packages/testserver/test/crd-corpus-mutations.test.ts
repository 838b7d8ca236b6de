// Invalid variants of the corpus's examples, derived from their CRDs' schemas (a randomized, seeded
// test): each accepted example gets one typed leaf field replaced by a value of another type, or an
// enum field by a value outside its enum, and the server must refuse it with kube-apiserver's cause
// for that field (`<path>: Invalid value: "string": <path> in body must be of type integer: "string"`,
// `Unsupported value: "x": supported values: ...`): no case where the test server accepts what a
// cluster refuses. SEED=<n> reruns one draw.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { env, http, type Env } from './helpers.ts'
import { prng } from '../src/faults.ts' // mulberry32: a failing draw replays with its SEED

const ROOT = join(import.meta.dirname, 'fixtures', 'crd-corpus')
const REFUSED: Record<string, string> = JSON.parse(readFileSync(join(ROOT, 'expected-refusals.json'), 'utf8'))
const load = (p: string, f: string): any[] => {
  try {
    return JSON.parse(gunzipSync(readFileSync(join(ROOT, p, f))).toString('utf8'))
  } catch (err: any) {
    if (err.code === 'ENOENT') return []
    throw err
  }
}
const projects = readdirSync(ROOT, { withFileTypes: true })
  .filter((d) => d.isDirectory() && load(d.name, 'examples.json.gz').length > 0)
  .map((d) => d.name)
  .sort()
const SEED = Number(process.env.SEED ?? 41)

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

type Schema = Record<string, any>
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
interface Leaf {
  path: Array<string | number>
  schema: Schema
}
/** Leaves of `v` whose schema gives them a plain type (or an enum) the mutation can break. */
function leaves(v: unknown, s: Schema | undefined, path: Array<string | number>, out: Leaf[]): void {
  if (!s || s['x-kubernetes-int-or-string'] || s.nullable || s.anyOf || s.oneOf || s.allOf || s.not) return
  if (Array.isArray(v)) {
    if (isObj(s.items)) v.forEach((x, i) => leaves(x, s.items, [...path, i], out))
    return
  }
  if (isObj(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (path.length === 0 && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue
      const sub = isObj(s.properties?.[k]) ? s.properties[k] : isObj(s.additionalProperties) ? s.additionalProperties : undefined
      leaves(x, sub, [...path, k], out)
    }
    return
  }
  if (['string', 'integer', 'boolean', 'number'].includes(s.type) && !s['x-kubernetes-validations']) out.push({ path, schema: s })
}
/** The field path as Kubernetes prints it: spec.list[0].name, spec.map[key.with.dots]. */
const fieldOf = (path: Array<string | number>) =>
  path.reduce<string>(
    (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc === '' ? p : /^[A-Za-z0-9_-]+$/.test(p) ? `${acc}.${p}` : `${acc}[${p}]`),
    '',
  )

function setAt(obj: any, path: Array<string | number>, value: unknown): any {
  const copy = structuredClone(obj)
  let cur = copy
  for (const p of path.slice(0, -1)) cur = cur[p as any]
  cur[path.at(-1) as any] = value
  return copy
}

test(`every accepted example with one field of the wrong type or outside its enum is refused with that field's cause (seed ${SEED})`, async () => {
  const rnd = prng(SEED)
  const failures: string[] = []
  let checked = 0
  for (const p of projects) {
    const crds = load(p, 'crds.json.gz')
    for (const crd of crds) assert.is((await http(e, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)).status, 201)
    for (const { source, object } of load(p, 'examples.json.gz')) {
      if (REFUSED[`${p} ${source} ${object.kind}/${object.metadata.name}`] !== undefined) continue
      const [group, version] = String(object.apiVersion).split('/')
      const crd = crds.find((c) => c.spec.group === group && c.spec.names.kind === object.kind)
      const schema = crd?.spec.versions.find((v: any) => v.name === version)?.schema?.openAPIV3Schema
      const t = e.server.server.registry.byKind(object.apiVersion, object.kind)
      if (!schema || !t) continue
      const found: Leaf[] = []
      leaves(object, schema, [], found)
      if (found.length === 0) continue
      const leaf = found[Math.floor(rnd() * found.length)]!
      const field = fieldOf(leaf.path)
      let value: unknown
      let want: string
      if (Array.isArray(leaf.schema.enum) && rnd() < 0.5) {
        value = 'not-a-member'
        want = `${field}: Unsupported value: "not-a-member": supported values: ${leaf.schema.enum.map((x: unknown) => JSON.stringify(x)).join(', ')}`
      } else {
        const [v, shown] =
          leaf.schema.type === 'string' ? [12345, 'integer'] : leaf.schema.type === 'boolean' ? ['yes', 'string'] : ['x', 'string']
        value = v
        want = `${field}: Invalid value: "${shown}": ${field} in body must be of type ${leaf.schema.type}: "${shown}"`
      }
      const mutated = setAt({ ...object, metadata: { ...object.metadata, name: `${object.metadata.name}-mutated` } }, leaf.path, value)
      const ns = t.namespaced ? `/namespaces/${object.metadata.namespace ?? 'default'}` : ''
      if (t.namespaced)
        await http(e, 'POST', '/api/v1/namespaces', {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: object.metadata.namespace ?? 'default' },
        })
      const r = await http(e, 'POST', `/apis/${t.group}/${t.version}${ns}/${t.resource}`, mutated)
      checked++
      const causes: string[] = (r.body.details?.causes ?? []).map((c: any) => `${c.field}: ${c.message}`)
      if (r.status !== 422 || !causes.includes(want))
        failures.push(
          `${p} ${source} ${object.kind}/${object.metadata.name} ${field}=${JSON.stringify(value)}: want 422 with ${want}, got ${r.status} ${causes.join(' | ') || r.body.message}`,
        )
    }
  }
  assert.equal(failures, [], `seed ${SEED}`)
  assert.ok(checked >= 200, `${checked} mutations`)
})

test.run()
