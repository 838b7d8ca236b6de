// Warm standby takeover (issue 40): two leader-elected Managers on the embedded test server, each
// with its own Cluster (user agents standby-a / standby-b, so the server's request log tells their
// requests apart), deriving a ConfigMap per source ConfigMap. The leader is killed without releasing
// its Lease (leaderElection.releaseOnStop: false: its renewals stop, as in a crash), then one source
// changes. From the request log: kill -> the new leader's Lease acquire (the wait for the old Lease
// to expire) -> its first write, and its write of the changed object's output. Also used by
// packages/controller/test/standby.test.ts, which asserts on the requests between acquire and write.
import { Cluster, type KubeObject } from '@statewright/k8s'
import { startTestServer, type RequestLogEntry, type RunningTestServer } from '@statewright/testserver'
import { Manager, createLogger, waitForConvergence } from '@statewright/controller'
import { median } from './stats.ts'
import type { Result } from './types.ts'

export const STANDBY_TIMING = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 }
const CM = '/api/v1/namespaces/default/configmaps'
const quiet = createLogger({ level: 'silent' })

/** A request as the test server logged it. */
export type RequestSeen = RequestLogEntry

export interface Takeover {
  killedAt: number
  acquiredAt: number
  firstWriteAt: number
  changedWriteAt: number
  /** The new leader's requests from its acquire up to and including its first write. */
  between: RequestSeen[]
  /** The standby's requests before the kill (its lists and watches: warm caches). */
  beforeKill: RequestSeen[]
}

function replica(server: RunningTestServer, id: string): { m: Manager; cluster: Cluster } {
  const cluster = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: `standby-${id}` })
  const m = new Manager({
    name: 'standby-bench',
    cluster,
    logger: quiet,
    handleSignals: false,
    http: false,
    leaderElection: { namespace: 'default', identity: id, ...STANDBY_TIMING, releaseOnStop: false },
  })
  const src = m.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { labelSelector: 'role=src' })
  m.derive({
    from: src,
    owns: [{ apiVersion: 'v1', kind: 'ConfigMap' }],
    fn: (o: KubeObject) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `out-${o.metadata.name}`, namespace: 'default' },
      data: { ...((o as { data?: Record<string, string> }).data ?? {}) },
    }),
  })
  return { m, cluster }
}

const isWrite = (r: RequestSeen) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method)
const isLease = (r: RequestSeen) => r.path.includes('/leases')
const isEvent = (r: RequestSeen) => r.path.includes('/events')

/** One takeover with `objects` source ConfigMaps. */
export async function takeoverOnce(objects: number): Promise<Takeover> {
  const server = await startTestServer()
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0, userAgent: 'admin' })
  const a = replica(server, 'a')
  const b = replica(server, 'b')
  try {
    for (let i = 0; i < objects; i++)
      await admin.request({
        method: 'POST',
        path: CM,
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `src-${i}`, namespace: 'default', labels: { role: 'src' } },
          data: { v: '0' },
        },
      })
    await a.m.start()
    await waitForConvergence(a.m, { timeoutMs: 60_000 })
    await b.m.start() // the standby: lists and watches, does not lead
    await Promise.all([...b.m.reflectors.values()].map((r) => r.waitSynced()))
    // and watching: each reflector's watch has reached the server
    const watching = () => server.control.requestLog().filter((r) => r.userAgent === 'standby-b' && r.watch).length >= b.m.reflectors.size
    while (!watching()) await new Promise((r) => setTimeout(r, 10))
    const killedAt = Date.now()
    await a.m.stop() // no release: the Lease stays a's until it expires
    a.cluster.close()
    const changed = `src-${Math.floor(objects / 2)}`
    await admin.request({
      method: 'PATCH',
      path: `${CM}/${changed}`,
      contentType: 'application/merge-patch+json',
      body: { data: { v: '1' } },
    })
    await waitForConvergence(b.m, { timeoutMs: 60_000 })
    const ofB = server.control.requestLog().filter((r) => r.userAgent === 'standby-b')
    const log = ofB.filter((r) => r.time >= killedAt)
    const acquire = log.find((r) => isLease(r) && isWrite(r) && r.status < 300)
    if (!acquire) throw new Error('standby bench: the standby never acquired the Lease')
    const from = log.indexOf(acquire)
    const writes = log.slice(from + 1)
    const first = writes.findIndex((r) => isWrite(r) && !isLease(r) && !isEvent(r))
    const changedWrite = writes.find((r) => isWrite(r) && r.path.endsWith(`/out-${changed}`))
    if (first < 0 || !changedWrite) throw new Error('standby bench: the new leader wrote nothing')
    return {
      killedAt,
      acquiredAt: acquire.time,
      firstWriteAt: writes[first]!.time,
      changedWriteAt: changedWrite.time,
      between: writes.slice(0, first + 1),
      beforeKill: ofB.filter((r) => r.time < killedAt),
    }
  } finally {
    await b.m.stop().catch(() => {})
    await a.m.stop().catch(() => {})
    a.cluster.close()
    b.cluster.close()
    admin.close()
    await server.stop()
  }
}

export async function standbyTakeover(runs: number, objects = 500): Promise<Result[]> {
  const all: Takeover[] = []
  for (let i = 0; i < runs; i++) all.push(await takeoverOnce(objects))
  const m = (f: (t: Takeover) => number) => median(all.map(f))
  const t = `leaseDurationMs ${STANDBY_TIMING.leaseDurationMs}, retryPeriodMs ${STANDBY_TIMING.retryPeriodMs}, ${objects} objects, median of ${runs}`
  return [
    { name: 'Standby_KillToFirstWrite', unit: 'ms', value: m((x) => x.firstWriteAt - x.killedAt), note: t },
    { name: 'Standby_KillToChangedWrite', unit: 'ms', value: m((x) => x.changedWriteAt - x.killedAt), note: t },
    { name: 'Standby_LeaseWait', unit: 'ms', value: m((x) => x.acquiredAt - x.killedAt), note: t },
    { name: 'Standby_AcquireToFirstWrite', unit: 'ms', value: m((x) => x.firstWriteAt - x.acquiredAt), note: t },
    {
      name: 'Standby_ListsAcquireToFirstWrite',
      unit: 'requests',
      value: m((x) => x.between.filter((r) => r.method === 'GET' && !r.watch && r.path.endsWith('/configmaps')).length),
      note: 'LIST requests of the new leader between its acquire and its first write (the catch-up relist)',
    },
  ]
}
