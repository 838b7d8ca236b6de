// One replica (sharded, or leader-elected) in its own process (for fencing-process.test.ts). argv[2] is JSON:
// { kubeconfig, identity, mode ('sharded' | 'leader'), shards, leaseDurationMs, renewDeadlineMs,
// retryPeriodMs, stopAfterCheck, busyMs }.
// It derives a ConfigMap per Item (data.n = the Item's spec.n, annotated with the writer) and prints
// one JSON line per event: ready, stopped-self (see below), exit.
// Faults the parent drives:
// - SIGUSR2: a busy loop of `busyMs` (the event loop starved: timers, renewals and requests wait);
// - stopAfterCheck: now and then a ConfigMap write stops the process (SIGSTOP to itself) right after
//   its fence check passed and before the request is handed to the socket: the parent resumes it
//   later, past the term. This is the window the fence cannot close; the precondition guards it.
import https from 'node:https'
import http from 'node:http'
import { Cluster, type KubeObject } from '@statewright/k8s'
import { Manager, createLogger } from '@statewright/controller'

const cfg = JSON.parse(process.argv[2] ?? '{}')
const emit = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + '\n')

if (cfg.stopAfterCheck) {
  // Cluster.send checks the fence synchronously right before calling request(): stopping here is
  // stopping between the check and the bytes on the socket.
  let stops = 0
  for (const mod of [https, http] as Array<typeof https>) {
    const original = mod.request.bind(mod)
    ;(mod as any).request = (url: any, opts: any, cb?: any) => {
      const method = opts?.method
      if (
        method === 'PATCH' &&
        String(url?.pathname ?? url).includes('/configmaps/') &&
        stops < cfg.stopAfterCheck &&
        Math.random() < 0.05
      ) {
        stops++
        emit({ ev: 'stopped-self', id: cfg.identity, at: Date.now() })
        process.kill(process.pid, 'SIGSTOP')
        // resumed: say which object the held write was for and whether it carried a precondition
        const req = original(url, opts, cb)
        const end = req.end.bind(req)
        ;(req as any).end = (body?: any, ...rest: any[]) => {
          const text = body ? String(body) : ''
          emit({ ev: 'sent-late', id: cfg.identity, path: String(url?.pathname ?? url), conditional: text.includes('"resourceVersion"') })
          return end(body, ...rest)
        }
        return req
      }
      return original(url, opts, cb)
    }
  }
}

const cluster = new Cluster({ kubeconfig: cfg.kubeconfig, qps: 0, userAgent: cfg.identity })
const m = new Manager({
  name: 'fenced',
  cluster,
  http: false,
  handleSignals: false,
  logger: createLogger({ level: 'silent' }),
  ...(cfg.mode === 'leader'
    ? {
        leaderElection: {
          namespace: 'default',
          name: 'fenced-leader',
          identity: cfg.identity,
          leaseDurationMs: cfg.leaseDurationMs,
          renewDeadlineMs: cfg.renewDeadlineMs,
          retryPeriodMs: cfg.retryPeriodMs,
        },
      }
    : {
        sharding: {
          namespace: 'default',
          shards: cfg.shards,
          identity: cfg.identity,
          leaseDurationMs: cfg.leaseDurationMs,
          renewDeadlineMs: cfg.renewDeadlineMs,
          retryPeriodMs: cfg.retryPeriodMs,
        },
      }),
  retry: { minMs: 20, maxMs: 500 },
})
const items = m.watch({ apiVersion: 'demo.statewright.io/v1', kind: 'Item' })
m.derive({
  from: items,
  owns: [{ apiVersion: 'v1', kind: 'ConfigMap' }],
  fn: (i: KubeObject) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `item-${i.metadata.name}`, namespace: 'default', annotations: { 'test/writer': cfg.identity } },
    data: { n: String((i as any).spec?.n ?? 0) },
  }),
})

process.on('SIGUSR2', () => {
  const end = Date.now() + (cfg.busyMs ?? 2000)
  while (Date.now() < end) {
    /* starve the event loop */
  }
})
process.on('SIGTERM', () => {
  void (async () => {
    await m.stop()
    await cluster.close()
    emit({ ev: 'exit', id: cfg.identity })
    process.exit(0)
  })()
})

await m.start()
emit({ ev: 'ready', id: cfg.identity })
