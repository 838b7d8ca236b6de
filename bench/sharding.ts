// Sharded scale-out (issue 31): replicas as separate processes (bench/lib/sharding-replica.ts), each
// a Manager with `sharding` (32 shards, default timings) deriving a ConfigMap per Item, on the
// embedded test server in this process.
// - Converge_<n>_R<r>: <n> fresh Items created (concurrency 16) until every ConfigMap holds its Item's
//   value, with r replicas whose shards are already spread; baseline: one replica.
// - IdleRequests_R<r>: API requests per second per replica once converged and idle (lease renewals,
//   the group LIST), counted by the server from each replica's user agent.
// - RSS_R<r> / CachedConfigMaps_R<r>: resident memory (after a GC) and owned objects cached per replica;
//   baseline at 4 replicas: the same replicas caching every ConfigMap (cachePerShard: false).
// - FenceCheckToSocket_p50/p99/max: the window fencing cannot close, measured: from a fenced write's
//   term check to the first bytes handed to its socket, for sequential fenced PATCHes over a kept-alive
//   TLS connection while busy processes load every core.
// On this 2-core machine replicas share two cores: convergence cannot speed up with more replicas;
// what the figures show is that it does not slow down (no shard lost or held idle) and that each
// replica's cache and memory shrink with its share.
import { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { startTestServer } from '@statewright/testserver'
import { Cluster } from '@statewright/k8s'
import { median, type Result, type RunOptions } from './lib/index.ts'
import { loadEveryCore, spawnJsonLines, type JsonLineChild } from '../test/lib/child.ts'

const REPLICA = fileURLToPath(new URL('./lib/sharding-replica.ts', import.meta.url))
const ITEM = { group: 'demo.statewright.io', version: 'v1', resource: 'items', kind: 'Item' }
const SHARDS = 32

function startReplica(id: string, kubeconfig: string, cachePerShard: boolean): JsonLineChild {
  return spawnJsonLines(id, REPLICA, { kubeconfig, identity: id, shards: SHARDS, cachePerShard }, ['--expose-gc'])
}

async function until(cond: () => boolean, what: string, ms: number): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`sharding bench: timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

interface Round {
  replicas: number
  convergeS: number
  idleReqPerS: number
  rssMB: number
  cachedConfigMaps: number
}

async function round(replicas: number, items: number, idleMs: number, cachePerShard: boolean): Promise<Round> {
  const server = await startTestServer({ kinds: [ITEM] })
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: 'bench-admin' })
  const procs: JsonLineChild[] = []
  try {
    for (let i = 0; i < replicas; i++) procs.push(startReplica(`r${i}`, server.kubeconfig, cachePerShard))
    await until(() => procs.every((p) => p.lines.some((l) => l.ev === 'ready')), `${replicas} replicas ready`, 120_000)
    // shards spread: every shard held, nobody over its share
    const holders = () => {
      const by = new Map<string, number>()
      for (let s = 0; s < SHARDS; s++) {
        const h = server.control.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, `bench-shard-${s}`, 'default')?.spec
          ?.holderIdentity
        if (!h) return undefined
        by.set(h, (by.get(h) ?? 0) + 1)
      }
      return by
    }
    await until(
      () => {
        const by = holders()
        return !!by && by.size === replicas && [...by.values()].every((n) => n <= Math.ceil(SHARDS / replicas))
      },
      'shards spread',
      120_000,
    )

    const t0 = performance.now()
    let next = 0
    const create = async () => {
      while (next < items) {
        const i = next++
        await admin.request({
          method: 'POST',
          path: '/apis/demo.statewright.io/v1/namespaces/default/items',
          body: { apiVersion: 'demo.statewright.io/v1', kind: 'Item', metadata: { name: `i${i}` }, spec: { n: i } },
        })
      }
    }
    await Promise.all(Array.from({ length: 16 }, create))
    const missing = new Set(Array.from({ length: items }, (_, i) => i))
    await until(
      () => {
        for (const i of missing)
          if (server.control.get({ apiVersion: 'v1', kind: 'ConfigMap' }, `item-i${i}`, 'default')?.data?.n === String(i)) missing.delete(i)
        return missing.size === 0
      },
      `${items} ConfigMaps`,
      300_000,
    )
    const convergeS = (performance.now() - t0) / 1000

    // idle: what the replicas ask of the server when nothing changes
    await new Promise((r) => setTimeout(r, 1000))
    server.control.clearRequestLog()
    const idleStart = Date.now()
    await new Promise((r) => setTimeout(r, idleMs))
    const log = server.control.requestLog().filter((e) => e.time >= idleStart && e.userAgent?.startsWith('r'))
    const idleReqPerS = log.length / replicas / ((Date.now() - idleStart) / 1000)

    const before = procs.map((p) => p.lines.length)
    for (const p of procs) p.child.kill('SIGUSR2')
    await until(() => procs.every((p, i) => p.lines.slice(before[i]).some((l) => l.ev === 'stats')), 'replica stats', 30_000)
    const stats = procs.map((p) => p.lines.filter((l) => l.ev === 'stats').at(-1)!)
    return {
      replicas,
      convergeS,
      idleReqPerS,
      rssMB: median(stats.map((s) => s.rss / 2 ** 20)),
      cachedConfigMaps: median(stats.map((s) => s.configMaps)),
    }
  } finally {
    for (const p of procs) p.child.kill('SIGTERM')
    await until(() => procs.every((p) => p.exited), 'replicas gone', 30_000).catch(() => procs.forEach((p) => p.child.kill('SIGKILL')))
    await admin.close()
    await server.stop()
  }
}

/** Microseconds from each fenced write's term check to its first socket write (see the header). */
async function fenceToWire(writes: number): Promise<number[]> {
  const server = await startTestServer({})
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: 'bench-fence' })
  const unload = loadEveryCore()
  const original = Socket.prototype.write
  let checkedAt: number | undefined
  const gaps: number[] = []
  Socket.prototype.write = function (this: Socket, ...args: any[]) {
    if (checkedAt !== undefined) {
      gaps.push((performance.now() - checkedAt) * 1000)
      checkedAt = undefined
    }
    return (original as (...a: any[]) => boolean).apply(this, args)
  } as typeof original
  const term = new AbortController()
  const fence = {
    lease: 'bench',
    transitions: 1,
    signal: term.signal,
    valid: () => {
      checkedAt = performance.now()
      return true
    },
    validUntil: () => Date.now() + 60_000,
  }
  try {
    await cluster.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fenced' }, data: { n: '0' } },
    })
    for (let i = 0; i < writes; i++) {
      await cluster.request({
        method: 'PATCH',
        path: '/api/v1/namespaces/default/configmaps/fenced',
        body: { data: { n: String(i) } },
        contentType: 'application/merge-patch+json',
        fence,
      })
    }
    return gaps.slice(1) // the first one opened the connection
  } finally {
    Socket.prototype.write = original
    unload()
    await cluster.close()
    await server.stop()
  }
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const items = opts.quick ? 400 : 2000
  const counts = opts.quick ? [1, 2, 4] : [1, 2, 4, 8]
  const idleMs = opts.quick ? 4000 : 10_000
  const rounds: Round[] = []
  for (const r of counts) {
    rounds.push(await round(r, items, idleMs, true))
    console.log(`  ${r} replica(s): ${JSON.stringify(rounds.at(-1))}`)
  }
  const whole = await round(4, items, idleMs, false)
  console.log(`  4 replicas caching everything: ${JSON.stringify(whole)}`)
  const gaps = await fenceToWire(opts.quick ? 500 : 3000)
  console.log(`  fence check to socket: ${gaps.length} writes`)
  const one = rounds[0]!
  const out: Result[] = [
    { name: 'FenceCheckToSocket_p50', unit: 'µs', value: quantile(gaps, 0.5) },
    { name: 'FenceCheckToSocket_p99', unit: 'µs', value: quantile(gaps, 0.99) },
    { name: 'FenceCheckToSocket_max', unit: 'µs', value: Math.max(...gaps) },
  ]
  for (const r of rounds) {
    out.push({
      name: `Converge_${items}_R${r.replicas}`,
      unit: 's',
      value: r.convergeS,
      ...(r.replicas > 1 ? { baseline: `Converge_${items}_R1`, baselineValue: one.convergeS } : {}),
    })
  }
  for (const r of rounds) out.push({ name: `IdleRequests_R${r.replicas}`, unit: 'requests/s per replica', value: r.idleReqPerS })
  for (const r of rounds) {
    const four = r.replicas === 4
    out.push({
      name: `RSS_R${r.replicas}`,
      unit: 'MB per replica',
      value: r.rssMB,
      ...(four ? { baseline: 'RSS_R4_WholeCache', baselineValue: whole.rssMB } : {}),
    })
    out.push({
      name: `CachedConfigMaps_R${r.replicas}`,
      unit: 'objects per replica',
      value: r.cachedConfigMaps,
      ...(four ? { baseline: 'CachedConfigMaps_R4_WholeCache', baselineValue: whole.cachedConfigMaps } : {}),
    })
  }
  return out
}
