// One sharded replica in its own process, for bench/sharding.ts. argv[2] is JSON:
// { kubeconfig, identity, shards, cachePerShard, leaseDurationMs, renewDeadlineMs, retryPeriodMs }.
// It derives a ConfigMap per Item (data.n = the Item's spec.n). It prints one JSON line per event:
// {ev:'ready'} once started, and {ev:'stats', rss, heap, items, configMaps, requests} on SIGUSR2
// (after a full GC when --expose-gc is given), and exits on SIGTERM after a graceful stop.
import { Cluster, type KubeObject } from '@statewright/k8s'
import { Manager, createLogger } from '@statewright/controller'

const cfg = JSON.parse(process.argv[2] ?? '{}')
const emit = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + '\n')

const cluster = new Cluster({ kubeconfig: cfg.kubeconfig, qps: 0, userAgent: cfg.identity })
const m = new Manager({
  name: 'bench',
  cluster,
  http: false,
  handleSignals: false,
  logger: createLogger({ level: 'silent' }),
  sharding: {
    namespace: 'default',
    shards: cfg.shards,
    identity: cfg.identity,
    cachePerShard: cfg.cachePerShard,
    ...(cfg.leaseDurationMs
      ? { leaseDurationMs: cfg.leaseDurationMs, renewDeadlineMs: cfg.renewDeadlineMs, retryPeriodMs: cfg.retryPeriodMs }
      : {}),
  },
})
const items = m.watch({ apiVersion: 'demo.statewright.io/v1', kind: 'Item' })
m.derive({
  from: items,
  owns: [{ apiVersion: 'v1', kind: 'ConfigMap' }],
  fn: (i: KubeObject) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `item-${i.metadata.name}`, namespace: i.metadata.namespace },
    data: { n: String((i as { spec?: { n?: number } }).spec?.n ?? 0) },
  }),
})

process.on('SIGUSR2', () => {
  ;(globalThis as { gc?: () => void }).gc?.()
  const txn = m.db.readTxn()
  const mem = process.memoryUsage()
  // the Manager's own cache of the owned kind (per shard unless cachePerShard is false)
  let configMaps = 0
  for (const r of m.reflectors.values()) if (/ConfigMap/i.test(r.name)) configMaps += r.health().objects
  emit({
    ev: 'stats',
    rss: mem.rss,
    heap: mem.heapUsed,
    items: items.count(txn),
    configMaps,
    requests: cluster.stats.requests,
  })
})
process.on('SIGTERM', () => {
  void m
    .stop()
    .then(() => cluster.close())
    .finally(() => process.exit(0))
})

await m.start()
emit({ ev: 'ready' })
