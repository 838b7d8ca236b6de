// A leader election candidate in its own process (for leader-process.test.ts). argv[2] is JSON:
// { kubeconfig, identity, lease, leaseDurationMs, renewDeadlineMs, retryPeriodMs }. Prints one JSON
// line per event: ready, started, stopped (with its acting period), violation, exit. SIGTERM: clean
// stop (the lease is released).
import { Cluster, LeaderElector, type LeaseTerm } from '@statewright/k8s'
import { actWhileLeading, periodOf } from './leader-fixtures.ts'

const cfg = JSON.parse(process.argv[2] ?? '{}')
const emit = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + '\n')
const cluster = new Cluster({ kubeconfig: cfg.kubeconfig, qps: 0 })
const acting = { actions: 0, violations: [] as string[] }
let reported = 0

const elector = new LeaderElector({
  cluster,
  namespace: 'default',
  name: cfg.lease,
  identity: cfg.identity,
  leaseDurationMs: cfg.leaseDurationMs,
  renewDeadlineMs: cfg.renewDeadlineMs,
  retryPeriodMs: cfg.retryPeriodMs,
  onStartedLeading: (term: LeaseTerm) => {
    emit({ ev: 'started', id: term.identity, at: term.startedAt, transitions: term.transitions, rv: term.resourceVersion })
    void actWhileLeading(cluster, `fence-${cfg.lease}`, term, 15, acting).then(() => {
      for (const v of acting.violations.slice(reported)) emit({ ev: 'violation', id: cfg.identity, message: v })
      reported = acting.violations.length
    })
  },
  onStoppedLeading: (term, reason) => {
    emit({ ev: 'stopped', id: term.identity, reason, period: periodOf(term), actions: acting.actions })
  },
})
await elector.start()
emit({ ev: 'ready', id: cfg.identity })

process.on('SIGTERM', () => {
  void (async () => {
    await elector.stop()
    await cluster.close()
    emit({ ev: 'exit', id: cfg.identity, actions: acting.actions })
    process.exit(0)
  })()
})
