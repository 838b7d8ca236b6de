// @statewright/k8s benchmarks, side by side with @kubernetes/client-node 1.4.0 in the same run. The
// test server runs in its own process (this file with SW_K8S_BENCH_CHILD=1, seeded over IPC), so this
// process holds only the client side (its heap is what bytes/object measures).
// - ReflectorSync_<n>: a Reflector's initial sync (paginated list into a statedb table) of n
//   ConfigMaps, objects/s, against makeInformer's start() on the same objects (floor: ratio >= 1.0);
// - ReflectorMemory_<n>: heap per cached object, reflector table vs informer cache (floor: <= 1.0);
// - ListFloor_<n>, ListFloorMemory_<n>: what any client must do, the bound of the two above: the same
//   paginated list (listAll, 500 a page, pipelined) parsed and held in an array, no table, no watch;
//   measured like the reflector, against the same informer runs;
// - Apply_<n>_c16: desired ConfigMaps applied by a reconciler through a Target (server-side apply,
//   batches at concurrency 16, shared limiter), objects/s, against KubernetesObjectApi.patch with
//   PatchStrategy.ServerSideApply at concurrency 16 (floor: ratio >= 0.9). At least 5 samples per
//   side (medians), interleaved (which side goes first alternates), each on fresh objects in a
//   seeded random order, the same order for both sides of a pair.
// Sync timing starts at the same point on both sides: before the client object is made, and ends
// once the list is in the cache AND the watch is open (informer.start() resolves only after the
// watch request is answered; for the reflector we wait for its first watch to be counted).
//
//   npm run bench -- k8s [--quick]
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { heapAfterGc, median, rng, shuffle, type Result, type RunOptions } from './lib/index.ts'

if (process.env.SW_K8S_BENCH_CHILD === 'server') {
  const { startTestServer } = await import('@statewright/testserver')
  const s = await startTestServer({ historySize: 1_000 })
  process.on('message', (m: any) => {
    if (m.cmd === 'seed') {
      for (let i = 0; i < m.n; i += 1000) {
        s.control.seed({ apiVersion: 'v1', kind: 'ConfigMap' }, Math.min(1000, m.n - i), {
          namespace: m.namespace,
          prefix: `${m.prefix}${i}-`,
          template: { metadata: { labels: { app: 'bench' } }, data: { key: 'value', other: 'some more text' } },
        })
      }
      process.send!({ id: m.id })
    } else if (m.cmd === 'ns') {
      s.server.objects.create(s.server.type('v1', 'Namespace'), '', { metadata: { name: m.name } }, { manager: 'bench' })
      process.send!({ id: m.id })
    } else if (m.cmd === 'stop') {
      void s.stop().then(() => process.exit(0))
    }
  })
  process.send!({ ready: true, kubeconfig: s.kubeconfig })
}

// A client child: one sync (reflector or informer) in a fresh process, to measure heap per object
// without garbage or caches of other runs: heap after the sync minus heap before, after full GCs.
if (process.env.SW_K8S_BENCH_CHILD === 'client') {
  const { kubeconfig, ns, n, which } = JSON.parse(process.env.SW_K8S_BENCH_ARGS!)
  const c = { kubeconfig } as Child
  const r = await (which === 'reflector' ? reflectorSync : which === 'floor' ? listFloor : informerSync)(c, ns, n)
  process.send!(r)
  process.exit(0)
}

async function memoryInChild(c: Child, which: 'reflector' | 'informer' | 'floor', ns: string, n: number): Promise<number> {
  const proc = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, SW_K8S_BENCH_CHILD: 'client', SW_K8S_BENCH_ARGS: JSON.stringify({ kubeconfig: c.kubeconfig, ns, n, which }) },
    execArgv: ['--conditions=@statewright/source', '--import', 'tsx', '--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const r = await new Promise<any>((resolve, reject) => {
    proc.on('message', resolve)
    proc.on('exit', (code) => reject(new Error(`${which} child exited (${code})`)))
  })
  if (process.env.SW_K8S_BENCH_DEBUG) console.error(which, r)
  return r.bytes
}

interface Child {
  proc: ChildProcess
  kubeconfig: string
  call(m: object): Promise<any>
}

async function startChild(): Promise<Child> {
  const proc = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, SW_K8S_BENCH_CHILD: 'server' },
    execArgv: ['--conditions=@statewright/source', '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  let seq = 0
  const pending = new Map<number, (v: any) => void>()
  const r = await new Promise<any>((resolve, reject) => {
    proc.on('message', (m: any) => (m.ready ? resolve(m) : pending.get(m.id)?.(m)))
    proc.on('exit', (code) => reject(new Error(`server process exited (${code})`)))
  })
  return {
    proc,
    kubeconfig: r.kubeconfig,
    call: (m) =>
      new Promise((resolve) => {
        const id = ++seq
        pending.set(id, resolve)
        proc.send({ ...m, id })
      }),
  }
}

// Memory per object: heap growth (after full GCs) from before the sync to after it, holding the
// cache; meaningful in a fresh client child (memoryInChild), where nothing else is collected between.
async function reflectorSync(c: Child, ns: string, n: number, _warm?: string): Promise<{ rate: number; bytes: number }> {
  const { DB, Table, defineIndex } = await import('@statewright/statedb')
  const { Cluster, Reflector, namespacedName } = await import('@statewright/k8s')
  const cluster = new Cluster({ kubeconfig: c.kubeconfig, qps: 0 })
  const before = heapAfterGc()
  const t0 = performance.now()
  const table = new Table<any>({ name: 'cms', primary: defineIndex<any, string>({ name: 'name', key: namespacedName, unique: true }) })
  const db = new DB({ tables: [table] })
  const r = new Reflector({
    cluster,
    db,
    table,
    kind: { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true },
    namespace: ns,
  })
  await r.start()
  await r.waitSynced()
  // Synced means listed; the watch opens after. informer.start() includes opening its watch, so the
  // reflector's time does too.
  while (r.health().watches === 0) await new Promise((res) => setImmediate(res))
  const secs = (performance.now() - t0) / 1000
  const count = table.count(db.readTxn())
  if (count !== n) throw new Error(`reflector: ${count} objects, want ${n}`)
  await r.stop()
  await cluster.close()
  const bytes = (heapAfterGc() - before) / n
  if (db.readTxn() === undefined) throw new Error('unreachable') // keeps db (and the table) alive up to here
  return { rate: n / secs, bytes }
}

async function listFloor(c: Child, ns: string, n: number): Promise<{ rate: number; bytes: number }> {
  const { Cluster, listAll } = await import('@statewright/k8s')
  const cluster = new Cluster({ kubeconfig: c.kubeconfig, qps: 0 })
  const before = heapAfterGc()
  const t0 = performance.now()
  const { items } = await listAll(
    cluster,
    { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true },
    { namespace: ns },
  )
  const secs = (performance.now() - t0) / 1000
  if (items.length !== n) throw new Error(`floor: ${items.length} objects, want ${n}`)
  await cluster.close()
  const bytes = (heapAfterGc() - before) / n
  if (items.length !== n) throw new Error('unreachable') // keeps the items alive up to here
  return { rate: n / secs, bytes }
}

async function informerSync(c: Child, ns: string, n: number, _warm?: string): Promise<{ rate: number; bytes: number }> {
  const k8s = await import('@kubernetes/client-node')
  const kc = new k8s.KubeConfig()
  kc.loadFromString(c.kubeconfig)
  const core = kc.makeApiClient(k8s.CoreV1Api)
  const before = heapAfterGc()
  const t0 = performance.now()
  const inf = k8s.makeInformer(kc, `/api/v1/namespaces/${ns}/configmaps`, () => core.listNamespacedConfigMap({ namespace: ns }))
  inf.on('error', () => {})
  await inf.start()
  const secs = (performance.now() - t0) / 1000
  const count = inf.list().length
  if (count !== n) throw new Error(`informer: ${count} objects, want ${n}`)
  await inf.stop()
  const bytes = (heapAfterGc() - before) / n
  if (inf.list().length !== n) throw new Error('unreachable') // keeps the informer alive up to here
  return { rate: n / secs, bytes }
}

/** How many ConfigMaps namespace `ns` holds (before seeding: those the server made with it). */
async function configMapsIn(c: Child, ns: string): Promise<number> {
  const { Cluster, listAll } = await import('@statewright/k8s')
  const cluster = new Cluster({ kubeconfig: c.kubeconfig, qps: 0 })
  try {
    const kind = { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true }
    return (await listAll(cluster, kind, { namespace: ns })).items.length
  } finally {
    await cluster.close()
  }
}

function configMap(name: string, ns: string) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: ns, labels: { app: 'bench' } },
    data: { key: 'value', other: 'some more text' },
  }
}

async function applyTarget(c: Child, ns: string, order: readonly number[]): Promise<number> {
  const n = order.length
  const { DB } = await import('@statewright/statedb')
  const { Cluster, Target, desired, newDesiredTable, targetReconciler } = await import('@statewright/k8s')
  const cluster = new Cluster({ kubeconfig: c.kubeconfig, qps: 1e6, burst: 1e6 })
  const d = newDesiredTable()
  const db = new DB({ tables: [d.table] })
  const target = new Target({ clusters: cluster, fieldManager: 'bench', concurrency: 16 })
  const rec = targetReconciler(db, d, target)
  try {
    rec.start()
    const t0 = performance.now()
    await db.write(d.table, (w) => {
      for (const i of order) d.table.insert(w, desired(configMap(`t-${i}`, ns)))
    })
    const signal = AbortSignal.timeout(120_000)
    for (;;) {
      const txn = db.readTxn()
      const [pending, w] = d.table.listWatch(txn, d.statusIndex.kind('pending'))
      if (pending.first() === undefined) break
      await w.wait(signal)
    }
    const secs = (performance.now() - t0) / 1000
    const done = d.table.list(db.readTxn(), d.statusIndex.kind('done')).count()
    if (done !== n) throw new Error(`target: ${done} done of ${n}`)
    return n / secs
  } finally {
    await rec.stop()
    await cluster.close()
  }
}

async function applyRaw(c: Child, ns: string, order: readonly number[]): Promise<number> {
  const n = order.length
  const k8s = await import('@kubernetes/client-node')
  const kc = new k8s.KubeConfig()
  kc.loadFromString(c.kubeconfig)
  const api = k8s.KubernetesObjectApi.makeApiClient(kc)
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = order[next++]!
        await api.patch(configMap(`r-${i}`, ns), undefined, undefined, 'bench-raw', true, k8s.PatchStrategy.ServerSideApply)
      }
    }),
  )
  return n / ((performance.now() - t0) / 1000)
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const n = opts.quick ? 20_000 : 100_000
  const runs = opts.quick ? 3 : 5
  const applyN = opts.quick ? 2_000 : 10_000
  const c = await startChild()
  const results: Result[] = []
  try {
    await c.call({ cmd: 'ns', name: 'sync' })
    // A new namespace already holds ConfigMaps (kube-root-ca.crt, on the test server as on a real
    // cluster): every side syncs them too, so the count to check and to divide by is n plus those.
    const total = n + (await configMapsIn(c, 'sync'))
    await c.call({ cmd: 'seed', n, namespace: 'sync', prefix: 'cm-' })
    // warm-up (JIT, discovery, connections) on both sides, then alternate runs
    await reflectorSync(c, 'sync', total)
    await informerSync(c, 'sync', total)
    await listFloor(c, 'sync', total)
    const refl: Array<{ rate: number; bytes: number }> = []
    const inf: Array<{ rate: number; bytes: number }> = []
    const floor: Array<{ rate: number; bytes: number }> = []
    for (let i = 0; i < runs; i++) {
      refl.push(await reflectorSync(c, 'sync', total))
      inf.push(await informerSync(c, 'sync', total))
      floor.push(await listFloor(c, 'sync', total))
    }
    const k = `${n / 1000}k`
    const rRate = median(refl.map((x) => x.rate))
    const iRate = median(inf.map((x) => x.rate))
    results.push({
      name: `ReflectorSync_${k}`,
      unit: 'objects/s',
      value: Math.round(rRate),
      baseline: 'client-node makeInformer',
      baselineValue: Math.round(iRate),
      ratio: rRate / iRate,
    })
    const fRate = median(floor.map((x) => x.rate))
    results.push({
      name: `ListFloor_${k}`,
      unit: 'objects/s',
      value: Math.round(fRate),
      baseline: 'client-node makeInformer',
      baselineValue: Math.round(iRate),
      ratio: fRate / iRate,
    })
    const rBytes = median([await memoryInChild(c, 'reflector', 'sync', total), await memoryInChild(c, 'reflector', 'sync', total)])
    const iBytes = median([await memoryInChild(c, 'informer', 'sync', total), await memoryInChild(c, 'informer', 'sync', total)])
    const fBytes = median([await memoryInChild(c, 'floor', 'sync', total), await memoryInChild(c, 'floor', 'sync', total)])
    results.push({
      name: `ReflectorMemory_${k}`,
      unit: 'bytes/object',
      value: Math.round(rBytes),
      baseline: 'client-node makeInformer',
      baselineValue: Math.round(iBytes),
      ratio: rBytes / iBytes,
    })
    results.push({
      name: `ListFloorMemory_${k}`,
      unit: 'bytes/object',
      value: Math.round(fBytes),
      baseline: 'client-node makeInformer',
      baselineValue: Math.round(iBytes),
      ratio: fBytes / iBytes,
    })

    const applyRuns = Math.max(5, runs)
    for (const ns of ['warm-t', 'warm-r']) await c.call({ cmd: 'ns', name: ns })
    for (let i = 0; i < applyRuns; i++) for (const side of ['t', 'r']) await c.call({ cmd: 'ns', name: `apply-${side}${i}` })
    const warmOrder = Array.from({ length: 300 }, (_, i) => i)
    await applyTarget(c, 'warm-t', warmOrder)
    await applyRaw(c, 'warm-r', warmOrder)
    const tRates: number[] = []
    const rawRates: number[] = []
    const random = rng(17)
    for (let i = 0; i < applyRuns; i++) {
      const order = shuffle(
        Array.from({ length: applyN }, (_, j) => j),
        random,
      )
      if (i % 2 === 0) {
        tRates.push(await applyTarget(c, `apply-t${i}`, order))
        rawRates.push(await applyRaw(c, `apply-r${i}`, order))
      } else {
        rawRates.push(await applyRaw(c, `apply-r${i}`, order))
        tRates.push(await applyTarget(c, `apply-t${i}`, order))
      }
    }
    if (process.env.SW_K8S_BENCH_DEBUG) console.error('apply', { tRates, rawRates })
    const tRate = median(tRates)
    const rawRate = median(rawRates)
    results.push({
      name: `Apply_${applyN / 1000}k_c16`,
      unit: 'objects/s',
      value: Math.round(tRate),
      baseline: 'client-node KubernetesObjectApi.patch (SSA) c16',
      baselineValue: Math.round(rawRate),
      ratio: tRate / rawRate,
    })
  } finally {
    const exited = new Promise((r) => c.proc.once('exit', r))
    c.proc.send({ cmd: 'stop' })
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())])
    c.proc.kill()
  }
  return results
}

if (process.env.SW_K8S_BENCH_CHILD === undefined && import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await run({ quick: process.argv.includes('--quick') }), null, 2))
}
