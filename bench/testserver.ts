// @statewright/testserver benchmarks. The server runs in its own process (this file, started with
// SW_TESTSERVER_BENCH_CHILD=1 and driven over IPC for seeding); this process is the load:
// - Create_LoadGen_c16: POSTs from a keep-alive node:http agent at concurrency 16 (floor: 5k/s, and at
//   least twice the real client's rate at the same concurrency);
// - Create_Client_seq / Create_Client_c16: the same creates through @kubernetes/client-node 1.4.0;
// - WatchFanout_10: events delivered per second to 10 raw watch streams while the server commits
//   seeded objects (floor: 100k/s);
// - List_100k: one GET of 100k ConfigMaps in a namespace (raw HTTP + JSON.parse), objects/s and ms.
//
//   npm run bench -- testserver [--quick]          (or standalone: node --conditions=@statewright/source --import tsx bench/testserver.ts [--quick])
import { fork, type ChildProcess } from 'node:child_process'
import { Agent, request } from 'node:http'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Result, RunOptions } from './lib/index.ts'

// ---------------------------------------------------------------------------------------------
// Child side: the server.
if (process.env.SW_TESTSERVER_BENCH_CHILD === '1') {
  const { startTestServer } = await import('@statewright/testserver')
  const s = await startTestServer({ historySize: 1_000 })
  process.on('message', (m: any) => {
    if (m.cmd === 'seed') {
      // batches of 1000: one statedb commit each, as a busy controller would produce
      for (let i = 0; i < m.n; i += 1000) {
        s.control.seed({ apiVersion: 'v1', kind: 'ConfigMap' }, Math.min(1000, m.n - i), {
          namespace: m.namespace,
          prefix: `${m.prefix}${i}-`,
          template: { data: { k: 'v' } },
        })
      }
      process.send!({ id: m.id, rv: s.control.resourceVersion() })
    } else if (m.cmd === 'ns') {
      s.server.objects.create(s.server.type('v1', 'Namespace'), '', { metadata: { name: m.name } }, { manager: 'bench' })
      process.send!({ id: m.id })
    } else if (m.cmd === 'stop') {
      void s.stop().then(() => process.exit(0))
    }
  })
  process.send!({ ready: true, url: s.url, token: s.token, kubeconfig: s.kubeconfig })
}

// ---------------------------------------------------------------------------------------------
// Parent side.
interface Child {
  proc: ChildProcess
  url: string
  token: string
  kubeconfig: string
  call(m: object): Promise<any>
}

async function startChild(): Promise<Child> {
  const proc = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, SW_TESTSERVER_BENCH_CHILD: '1' },
    execArgv: ['--conditions=@statewright/source', '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  let seq = 0
  const pending = new Map<number, (v: any) => void>()
  const ready = new Promise<any>((resolve, reject) => {
    proc.on('message', (m: any) => {
      if (m.ready) resolve(m)
      else pending.get(m.id)?.(m)
    })
    proc.on('exit', (code) => reject(new Error(`server process exited (${code})`)))
  })
  const r = await ready
  return {
    proc,
    url: r.url,
    token: r.token,
    kubeconfig: r.kubeconfig,
    call: (m) =>
      new Promise((resolve) => {
        const id = ++seq
        pending.set(id, resolve)
        proc.send({ ...m, id })
      }),
  }
}

function httpJson(c: Child, agent: Agent, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body)
    const req = request(
      c.url + path,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${c.token}`,
          'content-type': 'application/json',
          ...(data ? { 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (b) => chunks.push(b))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }))
      },
    )
    req.on('error', reject)
    req.end(data)
  })
}

async function concurrently(n: number, concurrency: number, one: (i: number) => Promise<void>): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await one(next++)
    }),
  )
  return n / ((performance.now() - t0) / 1000)
}

async function createsLoadGen(c: Child, ns: string, n: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 })
  try {
    // warm-up
    await concurrently(200, 16, async (i) => {
      await httpJson(c, agent, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `warm-${i}` }, data: { k: 'v' } })
    })
    return await concurrently(n, 16, async (i) => {
      const r = await httpJson(c, agent, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `lg-${i}` }, data: { k: 'v' } })
      if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`)
    })
  } finally {
    agent.destroy()
  }
}

async function createsClient(c: Child, ns: string, n: number, concurrency: number, prefix: string): Promise<number> {
  const k8s = await import('@kubernetes/client-node')
  const kc = new k8s.KubeConfig()
  kc.loadFromString(c.kubeconfig)
  const core = kc.makeApiClient(k8s.CoreV1Api)
  for (let i = 0; i < 50; i++)
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `${prefix}warm-${i}` }, data: { k: 'v' } } })
  return concurrently(n, concurrency, async (i) => {
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `${prefix}${i}` }, data: { k: 'v' } } })
  })
}

/** Opens `watchers` raw watch streams, seeds n objects in the child, returns delivered events/s. */
async function watchFanout(c: Child, ns: string, n: number, watchers: number): Promise<number> {
  const rv = (await c.call({ cmd: 'seed', n: 0, namespace: ns, prefix: 'x' })).rv
  const agent = new Agent({ keepAlive: true, maxSockets: watchers })
  let delivered = 0
  let resolveAll!: () => void
  const all = new Promise<void>((r) => (resolveAll = r))
  const reqs = await Promise.all(
    Array.from(
      { length: watchers },
      () =>
        new Promise<ReturnType<typeof request>>((resolve) => {
          const req = request(
            `${c.url}/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${rv}`,
            { agent, headers: { authorization: `Bearer ${c.token}` } },
            (res) => {
              let mine = 0
              res.on('data', (b: Buffer) => {
                let k = 0
                for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) k++
                mine += k
                delivered += k
                if (delivered >= n * watchers) resolveAll()
                void mine
              })
              resolve(req)
            },
          )
          req.end()
        }),
    ),
  )
  const t0 = performance.now()
  await c.call({ cmd: 'seed', n, namespace: ns, prefix: 'w' })
  await all
  const rate = delivered / ((performance.now() - t0) / 1000)
  for (const r of reqs) r.destroy()
  agent.destroy()
  return rate
}

async function listBig(c: Child, ns: string, n: number): Promise<{ rate: number; ms: number }> {
  await c.call({ cmd: 'seed', n, namespace: ns, prefix: 'l' })
  const agent = new Agent({ keepAlive: true })
  try {
    await httpJson(c, agent, 'GET', `/api/v1/namespaces/${ns}/configmaps?limit=1`)
    const times: number[] = []
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now()
      const r = await httpJson(c, agent, 'GET', `/api/v1/namespaces/${ns}/configmaps`)
      const items = JSON.parse(r.text).items.length
      // + the namespace's kube-root-ca.crt, which every namespace has
      if (items !== n + 1) throw new Error(`list returned ${items} items, want ${n + 1}`)
      times.push(performance.now() - t0)
    }
    times.sort((a, b) => a - b)
    const ms = times[1]!
    return { rate: n / (ms / 1000), ms }
  } finally {
    agent.destroy()
  }
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const q = opts.quick
  const c = await startChild()
  try {
    for (const ns of ['lg', 'cs', 'cc', 'wf', 'lb']) await c.call({ cmd: 'ns', name: ns })
    const loadGen = await createsLoadGen(c, 'lg', q ? 5_000 : 20_000)
    const seq = await createsClient(c, 'cs', q ? 300 : 1_000, 1, 's')
    const c16 = await createsClient(c, 'cc', q ? 1_000 : 3_000, 16, 'c')
    const fan = await watchFanout(c, 'wf', q ? 10_000 : 30_000, 10)
    const list = await listBig(c, 'lb', q ? 20_000 : 100_000)
    const listName = q ? 'List_20k' : 'List_100k'
    return [
      {
        name: 'Create_LoadGen_c16',
        unit: 'objects/s',
        value: loadGen,
        baseline: 'Create_Client_c16',
        baselineValue: c16,
        note: 'floor: ratio >= 2',
      },
      { name: 'Create_LoadGen_c16 (vs floor)', unit: 'objects/s', value: loadGen, baseline: 'floor', baselineValue: 5_000 },
      { name: 'Create_Client_seq', unit: 'objects/s', value: seq },
      { name: 'Create_Client_c16', unit: 'objects/s', value: c16, baseline: 'Create_Client_seq', baselineValue: seq },
      { name: 'WatchFanout_10', unit: 'events/s', value: fan, baseline: 'floor', baselineValue: 100_000 },
      { name: listName, unit: 'objects/s', value: list.rate },
      { name: `${listName} (latency)`, unit: 'ms', value: list.ms },
    ]
  } finally {
    const exited = new Promise((r) => c.proc.once('exit', r))
    c.proc.send({ cmd: 'stop' })
    await exited
  }
}

// Standalone: node --conditions=@statewright/source --import tsx bench/testserver.ts [--quick]
if (process.env.SW_TESTSERVER_BENCH_CHILD !== '1' && process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const results = await run({ quick: process.argv.includes('--quick') })
  for (const r of results)
    console.log(
      `${r.name.padEnd(32)} ${r.value.toFixed(1).padStart(12)} ${r.unit}${r.baselineValue ? `   vs ${r.baseline} ${r.baselineValue.toFixed(1)} (ratio ${(r.value / r.baselineValue).toFixed(2)})` : ''}`,
    )
}
