// The ecosystem's CRDs as a test (issue 41): the CRDs of widely used projects (fixtures/crd-corpus,
// built by scripts/crd-corpus.mjs from the sources and commits in its manifest.json, descriptions
// stripped) install and become Established, and the examples the projects ship apply, through the
// server's API (server-side apply with fieldValidation=Strict, as kubectl sends it) and through
// kubectl itself (server-side for the CRDs, client-side for the examples, then once more: "unchanged").
// Invariants checked: no CRD or shipped example a cluster takes is refused here; every object is
// stored as served (defaults applied, so a second identical apply changes nothing).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { env, http, type Env } from './helpers.ts'

const ROOT = join(import.meta.dirname, 'fixtures', 'crd-corpus')
const projects = readdirSync(ROOT, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort()
const load = (project: string, file: string): any[] => {
  try {
    return JSON.parse(gunzipSync(readFileSync(join(ROOT, project, file))).toString('utf8'))
  } catch (err: any) {
    if (err.code === 'ENOENT') return []
    throw err
  }
}
const crdsOf = (p: string) => load(p, 'crds.json.gz')
/** Shipped examples a cluster refuses too, with kube-apiserver's message (the example is older or newer than its CRD, or a fragment). */
const REFUSED: Record<string, string> = JSON.parse(readFileSync(join(ROOT, 'expected-refusals.json'), 'utf8'))
const keyOf = (p: string, source: string, o: any) => `${p} ${source} ${o.kind}/${o.metadata.name}`
const examplesOf = (p: string): Array<{ source: string; object: any }> => load(p, 'examples.json.gz')

let e: Env // the server's API, over plain HTTP
let k: Env // kubectl's server (HTTPS: kubectl sends no token over plain HTTP)
test.before(async () => {
  e = await env()
  k = await env({ tls: true })
})
test.after(async () => {
  await e.server.stop()
  await k.server.stop()
})

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'
function pathOf(obj: any): string {
  const t = e.server.server.registry.byKind(obj.apiVersion, obj.kind)
  if (!t) throw new Error(`not served: ${obj.apiVersion} ${obj.kind}`)
  const base = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`
  return `${base}${t.namespaced ? `/namespaces/${obj.metadata.namespace ?? 'default'}` : ''}/${t.resource}/${obj.metadata.name}`
}
async function ensureNamespace(ns: string | undefined): Promise<void> {
  if (!ns) return
  const r = await http(e, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
  assert.ok(r.status === 201 || r.status === 409, `namespace ${ns}: ${r.status}`)
}

test('every CRD of the corpus installs and becomes Established', async () => {
  const failures: string[] = []
  let n = 0
  for (const p of projects) {
    for (const crd of crdsOf(p)) {
      n++
      const r = await http(e, 'POST', CRDS, crd)
      if (r.status !== 201) {
        failures.push(`${p} ${crd.metadata.name}: ${r.status} ${r.body.message}`)
        continue
      }
      const got = await http(e, 'GET', `${CRDS}/${crd.metadata.name}`)
      const established = got.body.status?.conditions?.find((c: any) => c.type === 'Established')
      if (established?.status !== 'True') failures.push(`${p} ${crd.metadata.name}: not Established`)
    }
  }
  assert.equal(failures, [])
  assert.ok(n >= 250 && projects.length >= 24, `${n} CRDs of ${projects.length} projects`)
})

test("every example of the corpus applies server-side (Strict), and applying it again changes nothing; the refused ones with kube-apiserver's message", async () => {
  const failures: string[] = []
  let n = 0
  for (const p of projects) {
    for (const { source, object } of examplesOf(p)) {
      await ensureNamespace(object.metadata.namespace)
      const path = `${pathOf(object)}?fieldManager=corpus&force=true&fieldValidation=Strict`
      const r = await http(e, 'PATCH', path, object, 'application/apply-patch+yaml')
      n++
      const key = keyOf(p, source, object)
      if (REFUSED[key] !== undefined) {
        if (r.status < 400 || r.body.message !== REFUSED[key])
          failures.push(`${key}: expected refused with ${REFUSED[key]}, got ${r.status} ${r.body.message}`)
        continue
      }
      if (r.status >= 300) {
        failures.push(`${key}: ${r.status} ${r.body.message}`)
        continue
      }
      const again = await http(e, 'PATCH', path, object, 'application/apply-patch+yaml')
      if (again.body.metadata?.resourceVersion !== r.body.metadata.resourceVersion)
        failures.push(`${key}: a second identical apply wrote a new version`)
    }
  }
  assert.equal(failures, [])
  assert.ok(n >= 280, `${n} examples`)
})

// kubectl: the same, through kubectl's own requests (discovery, /openapi/v3, its patches)
const dir = mkdtempSync(join(tmpdir(), 'sw-corpus-'))
test.after(() => rmSync(dir, { recursive: true, force: true }))
function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, KUBECONFIG: k.server.kubeconfigPath }
    execFile('kubectl', args, { env, timeout: 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as any).code ?? 1) : 0, stdout, stderr })
    })
  })
}

/** A stream of JSON documents (a `kind: List` would make kubectl validate with /openapi/v2, which is not served). */
const stream = (objs: unknown[]) => objs.map((o) => JSON.stringify(o)).join('\n') + '\n'

test('kubectl: the CRDs apply server-side and are Established; the examples apply client-side, then again "unchanged"', async () => {
  const reg = k.server.server.registry
  const identity = (o: any) =>
    `${o.kind}/${reg.byKind(o.apiVersion, o.kind)?.namespaced ? (o.metadata.namespace ?? 'default') : ''}/${o.metadata.name}`
  for (const p of projects) {
    const file = join(dir, `${p}-crds.yaml`)
    writeFileSync(file, stream(crdsOf(p)))
    const r = await kubectl('apply', '--server-side', '--field-manager=corpus', '-f', file)
    assert.is(r.code, 0, `${p}: ${r.stderr}`)
    const names = crdsOf(p).map((c) => `crd/${c.metadata.name}`)
    const w = await kubectl('wait', '--for=condition=Established', '--timeout=60s', ...names)
    assert.is(w.code, 0, `${p}: ${w.stderr}`)
  }
  for (const p of projects.filter((p) => examplesOf(p).length > 0)) {
    const items = examplesOf(p)
      .filter(({ source, object }) => REFUSED[keyOf(p, source, object)] === undefined)
      .map(({ object }) => object)
      // several samples may name the same object (CloudNativePG's cluster-example): the first of each stays
      .filter((o, i, all) => all.findIndex((x) => identity(x) === identity(o)) === i)
    for (const ns of new Set(
      items.map((o) => (reg.byKind(o.apiVersion, o.kind)?.namespaced ? (o.metadata.namespace ?? 'default') : undefined)),
    )) {
      if (ns) await kubectl('create', 'namespace', ns) // AlreadyExists is fine
    }
    const file = join(dir, `${p}-examples.yaml`)
    writeFileSync(file, stream(items))
    const first = await kubectl('apply', '-f', file)
    assert.is(first.code, 0, `${p}: ${first.stderr}`)
    const before = await kubectl('get', '-f', file, '-o', 'jsonpath={range .items[*]}{.metadata.resourceVersion}{" "}{end}')
    const second = await kubectl('apply', '-f', file)
    assert.is(second.code, 0, `${p}: ${second.stderr}`)
    // "unchanged" when kubectl's patch is empty; "configured" when the server defaulted inside a list
    // (a JSON merge patch replaces a list whole): either way nothing is written
    const lines = second.stdout.trim().split('\n')
    assert.is(lines.length, items.length, second.stdout)
    assert.ok(
      lines.every((l) => / (unchanged|configured)$/.test(l)),
      second.stdout,
    )
    const after = await kubectl('get', '-f', file, '-o', 'jsonpath={range .items[*]}{.metadata.resourceVersion}{" "}{end}')
    assert.is(after.stdout, before.stdout, `${p}: the second kubectl apply wrote nothing`)
  }
  // a refused example through kubectl: its error names the field as kube-apiserver does
  const [key, message] = Object.entries(REFUSED).find(([k]) => k.startsWith('keda '))!
  const refused = examplesOf('keda').find(({ source, object }) => keyOf('keda', source, object) === key)!.object
  const file = join(dir, 'refused.yaml')
  writeFileSync(file, stream([refused]))
  const r = await kubectl('apply', '-f', file)
  assert.is(r.code, 1)
  // kubectl words the Status its own way: The ScaledJob "scaledjob-sample" is invalid: <the causes>
  assert.ok(r.stderr.includes(message.slice(message.indexOf(' is invalid: '))), r.stderr)
})

test.run()
