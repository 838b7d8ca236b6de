// Where a cached object's bytes go: syncs n ConfigMaps (like bench/k8s.ts) into a reflector, the
// list floor or client-node's informer in this process, takes heap snapshots before and after and
// prints the growth grouped by node type and name, per object.
//   node --conditions=@statewright/source --import tsx --expose-gc scripts/profile-reflector-memory.ts <reflector|floor|informer> [n]
// NOSNAP=1: the heap growth alone (what bench/k8s.ts measures); KEEP=1 keeps the snapshots (in the OS temp dir).
import { fork } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeHeapSnapshot } from 'node:v8'
import { fileURLToPath } from 'node:url'
import { heapAfterGc } from '../bench/lib/index.ts'

const which = process.argv[2] ?? 'reflector'
const n = Number(process.argv[3] ?? 20_000)

const server = fork(fileURLToPath(new URL('../bench/k8s.ts', import.meta.url)), [], {
  env: { ...process.env, SW_K8S_BENCH_CHILD: 'server' },
  execArgv: ['--conditions=@statewright/source', '--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
})
let seq = 0
const pending = new Map<number, (v: any) => void>()
const ready = await new Promise<any>((resolve) => server.on('message', (m: any) => (m.ready ? resolve(m) : pending.get(m.id)?.(m))))
const call = (m: object) =>
  new Promise<any>((resolve) => {
    const id = ++seq
    pending.set(id, resolve)
    server.send({ ...m, id })
  })
const kubeconfig: string = ready.kubeconfig
await call({ cmd: 'ns', name: 'sync' })
await call({ cmd: 'seed', n, namespace: 'sync', prefix: 'cm-' })

type Stats = Map<string, { count: number; size: number }>
function snapshot(): Stats {
  heapAfterGc()
  const file = writeHeapSnapshot(join(tmpdir(), `reflector-memory-${which}-${process.pid}-${Date.now()}.heapsnapshot`))
  const s = JSON.parse(readFileSync(file, 'utf8'))
  if (!process.env.KEEP) rmSync(file)
  const f: string[] = s.snapshot.meta.node_fields
  const types: string[] = s.snapshot.meta.node_types[0]
  const w = f.length
  const it = f.indexOf('type')
  const iname = f.indexOf('name')
  const isize = f.indexOf('self_size')
  const out: Stats = new Map()
  const nodes: number[] = s.nodes
  for (let i = 0; i < nodes.length; i += w) {
    const type = types[nodes[i + it]!]!
    let name = s.strings[nodes[i + iname]!] as string
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = `len ${Math.min(name.length, 64)}`
    if (type === 'number') name = ''
    const k = `${type} ${name}`.slice(0, 80)
    const e = out.get(k) ?? { count: 0, size: 0 }
    e.count++
    e.size += nodes[i + isize]!
    out.set(k, e)
  }
  return out
}

const kind = { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true }
let keep: unknown
let total = n + 1
async function sync() {
  if (which === 'reflector') {
    const { DB, Table, defineIndex } = await import('@statewright/statedb')
    const { Cluster, Reflector, namespacedName } = await import('@statewright/k8s')
    const cluster = new Cluster({ kubeconfig, qps: 0 })
    const table = new Table<any>({ name: 'cms', primary: defineIndex<any, string>({ name: 'name', key: namespacedName, unique: true }) })
    const db = new DB({ tables: [table] })
    const r = new Reflector({ cluster, db, table, kind, namespace: 'sync' })
    await r.start()
    await r.waitSynced()
    while (r.health().watches === 0) await new Promise((res) => setImmediate(res))
    total = table.count(db.readTxn())
    await r.stop()
    await cluster.close()
    keep = db
  } else if (which === 'floor') {
    const { Cluster, listAll } = await import('@statewright/k8s')
    const cluster = new Cluster({ kubeconfig, qps: 0 })
    const { items } = await listAll(cluster, kind, { namespace: 'sync' })
    total = items.length
    await cluster.close()
    keep = items
  } else {
    const k8s = await import('@kubernetes/client-node')
    const kc = new k8s.KubeConfig()
    kc.loadFromString(kubeconfig)
    const core = kc.makeApiClient(k8s.CoreV1Api)
    const inf = k8s.makeInformer(kc, `/api/v1/namespaces/sync/configmaps`, () => core.listNamespacedConfigMap({ namespace: 'sync' }))
    inf.on('error', () => {})
    await inf.start()
    total = inf.list().length
    await inf.stop()
    keep = inf
  }
}
// warm-up: module loading, JIT, discovery, so that the snapshots differ by the cache only
await import('@statewright/statedb')
await import('@statewright/k8s')
await import('@kubernetes/client-node')
if (process.env.NOSNAP) {
  const h0 = heapAfterGc()
  await sync()
  console.log(`${which}: ${total} objects; heapUsed growth ${((heapAfterGc() - h0) / total).toFixed(1)} B/obj`)
  server.kill()
  process.exit(0)
}
const h0 = heapAfterGc()
const before = snapshot()
await sync()
const h1 = heapAfterGc()
const after = snapshot()
const rows: Array<[string, number, number]> = []
for (const [k, a] of after) {
  const b = before.get(k) ?? { count: 0, size: 0 }
  const d = a.size - b.size
  if (Math.abs(d) / total >= 0.5) rows.push([k, (a.count - b.count) / total, d / total])
}
rows.sort((x, y) => y[2] - x[2])
let sum = 0
for (const [k, c, d] of rows) {
  sum += d
  console.log(`${d.toFixed(1).padStart(8)} B/obj ${c.toFixed(2).padStart(6)} nodes/obj  ${k}`)
}
console.log(
  `${which}: ${total} objects; snapshot growth listed ${sum.toFixed(1)} B/obj; heapUsed growth ${((h1 - h0) / total).toFixed(1)} B/obj`,
)
if (!keep) throw new Error('unreachable')
server.kill()
process.exit(0)
