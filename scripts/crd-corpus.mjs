#!/usr/bin/env node
// Builds the CRD corpus of the test server's tests (packages/testserver/test/fixtures/crd-corpus) from
// local git clones of the projects listed in its sources.json: each project's CRDs with every
// `description` of their schemas removed (the bulk of a generated CRD, and nothing the server reads),
// and the example objects of the projects' own kinds found in the listed example files.
// Writes <project>/crds.json.gz, <project>/examples.json.gz and manifest.json (for each file: repository,
// path, commit, `git describe`), compact JSON. Nothing else is changed in the documents.
//   node scripts/crd-corpus.mjs [--clones '/path/{owner}+{name}/repo'] [project...]
// A clone is a git directory (bare or not) of the repository at the commit to record; a path may be
// a glob with `*` in its last segment. `--local DIR` reads `<DIR>/<owner>/<name>/<path>` files instead
// (for files fetched one by one, recorded with the commit given in sources.json).
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'

const root = new URL('..', import.meta.url).pathname
const out = join(root, 'packages/testserver/test/fixtures/crd-corpus')
const args = process.argv.slice(2)
const opt = (name, dflt) => {
  const i = args.indexOf(name)
  if (i < 0) return dflt
  const v = args[i + 1]
  args.splice(i, 2)
  return v
}
const clones = opt('--clones', '/work/.mirror/{owner}+{name}/repo')
const local = opt('--local', undefined)
const only = new Set(args)

const sources = JSON.parse(readFileSync(join(out, 'sources.json'), 'utf8'))
const manifest = existsSync(join(out, 'manifest.json')) ? JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) : {}

/** Removes `description` from every schema node (never a property that is named "description"). */
function strip(node) {
  if (Array.isArray(node)) return node.forEach(strip)
  if (typeof node !== 'object' || node === null) return
  delete node.description
  if (node.properties) for (const v of Object.values(node.properties)) strip(v)
  for (const k of ['items', 'additionalProperties', 'not']) if (typeof node[k] === 'object') strip(node[k])
  for (const k of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(node[k])) strip(node[k])
}

function gitOf(repo) {
  const [owner, name] = repo.split('/')
  return clones.replace('{owner}', owner).replace('{name}', name)
}
const git = (dir, ...a) => execFileSync('git', ['-C', dir, ...a], { encoding: 'utf8', maxBuffer: 256 << 20 })

function filesOf(src, patterns) {
  if (local) return patterns.map((p) => ({ path: p, text: readFileSync(join(local, src.repo, p), 'utf8') }))
  const dir = gitOf(src.repo)
  const all = git(dir, 'ls-tree', '-r', '--name-only', src.commit ?? 'HEAD').split('\n')
  const out = []
  for (const p of patterns) {
    const re = new RegExp('^' + p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*') + '$')
    const hits = all.filter((f) => re.test(f))
    if (hits.length === 0) throw new Error(`${src.repo}: nothing at ${p}`)
    for (const f of hits) out.push({ path: f, text: git(dir, 'show', `${src.commit ?? 'HEAD'}:${f}`) })
  }
  return out
}

const docsOf = (text) =>
  parseAllDocuments(text)
    .map((d) => d.toJS({ maxAliasCount: -1 }))
    .filter((d) => d && typeof d === 'object' && !Array.isArray(d))

for (const src of sources) {
  if (only.size && !only.has(src.project)) continue
  const commit = local ? src.commit : git(gitOf(src.repo), 'rev-parse', src.commit ?? 'HEAD').trim()
  let describe = ''
  if (!local)
    try {
      describe = git(gitOf(src.repo), 'describe', '--tags', commit).trim()
    } catch {}
  const crds = []
  const files = []
  for (const f of filesOf(src, src.crds)) {
    const found = docsOf(f.text).filter((d) => d.kind === 'CustomResourceDefinition' && d.apiVersion === 'apiextensions.k8s.io/v1')
    for (const d of found) {
      delete d.status
      for (const v of d.spec?.versions ?? []) strip(v.schema?.openAPIV3Schema)
      crds.push(d)
    }
    files.push({ path: f.path, crds: found.map((d) => d.metadata.name) })
  }
  const groups = new Set(crds.map((c) => c.spec.group))
  const examples = []
  const exampleFiles = []
  for (const f of filesOf(src, src.examples ?? [])) {
    if (f.text.includes('{{') || f.text.includes('{%')) continue // templates, not objects
    let n = 0
    for (const d of docsOf(f.text)) {
      const group = String(d.apiVersion ?? '').split('/')[0]
      if (!groups.has(group) || !d.metadata?.name) continue
      if ((src.maxExamples ?? 40) <= examples.length) break
      examples.push({ source: f.path, object: d })
      n++
    }
    if (n) exampleFiles.push({ path: f.path, objects: n })
  }
  mkdirSync(join(out, src.project), { recursive: true })
  // gzipped: generated schemas repeat themselves (pod templates), about 10 times smaller
  rmSync(join(out, src.project), { recursive: true, force: true })
  mkdirSync(join(out, src.project), { recursive: true })
  writeFileSync(join(out, src.project, 'crds.json.gz'), gzipSync(JSON.stringify(crds), { level: 9 }))
  if (examples.length) writeFileSync(join(out, src.project, 'examples.json.gz'), gzipSync(JSON.stringify(examples), { level: 9 }))
  manifest[src.project] = {
    repository: `https://github.com/${src.repo}`,
    commit,
    describe,
    ...(src.note ? { note: src.note } : {}),
    crdFiles: files,
    exampleFiles,
  }
  console.log(`${src.project}: ${crds.length} CRDs, ${examples.length} examples (${commit.slice(0, 12)} ${describe})`)
}
const sorted = Object.fromEntries(Object.entries(manifest).sort(([a], [b]) => a.localeCompare(b)))
writeFileSync(join(out, 'manifest.json'), JSON.stringify(sorted, null, 2) + '\n')
