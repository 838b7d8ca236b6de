// Topology upkeep: what one changed route costs, at 1 000 and 10 000 routes (issue 26's contract: a
// change costs O(its links), whatever the size of the graph around it).
//
// The graph: 1 GatewayClass, 10 Gateways of 2 listeners each, N HTTPRoutes (each on one Gateway, one
// rule, one backend Service), N Services, N RateLimitPolicies (one per route). One route at a time
// gets a new hostname (write, then sync()), round the routes.
//
// - RouteChange_<N>: µs per changed route (write + sync), the median of 5 runs of 1 000 changes;
//   RouteChange_10000 has RouteChange_1000 as its baseline, so a ratio near 1 says the cost does not
//   grow with the graph.
// - RouteChange_<N>_rows: rows of the graph's tables (nodes, links, declarations, attachments)
//   written or deleted per change: the change's own links, a count that does not depend on N.
// - Rebuild_<N>: ms to build the whole graph from scratch (what policy-machinery does per event),
//   the baseline RouteChange is measured against in the docs' prose.
import type { ChangeIterator } from '@statewright/statedb'
import { Topology, gatewayApiTopology } from '@statewright/topology'
import { gatewayTables, gateway, route, policy, gatewayClass, service } from '../packages/topology/test/topology-fixtures.ts'
import { forceGc, median, type Result, type RunOptions } from './lib/index.ts'

const GATEWAYS = 10

function topologyOf(t: ReturnType<typeof gatewayTables>, name: string): Topology {
  return new Topology(
    gatewayApiTopology({
      tables: { gatewayClasses: t.classes, gateways: t.gateways, httpRoutes: t.routes, services: t.services },
      policies: [{ kind: 'RateLimitPolicy', group: 'kuadrant.io', table: t.policies }],
    }),
    { db: t.db, name },
  )
}

const routeOf = (i: number, edit = 0) =>
  route('default', `r-${i}`, [`gw-${i % GATEWAYS}`], {
    hostnames: [`r${i}.example.com`, ...(edit ? [`e${edit}.example.com`] : [])],
    rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: `svc-${i}`, port: 80 }] }],
  })

async function populate(n: number): Promise<ReturnType<typeof gatewayTables>> {
  const t = gatewayTables()
  await t.db.write([t.classes, t.gateways, t.routes, t.services, t.policies], (w) => {
    t.classes.insert(w, gatewayClass('istio'))
    for (let g = 0; g < GATEWAYS; g++)
      t.gateways.insert(
        w,
        gateway('default', `gw-${g}`, [
          { name: 'http', hostname: '*.example.com', port: 80, protocol: 'HTTP' },
          { name: 'https', hostname: '*.example.com', port: 443, protocol: 'HTTPS' },
        ]),
      )
    for (let i = 0; i < n; i++) {
      t.routes.insert(w, routeOf(i))
      t.services.insert(w, service('default', `svc-${i}`))
      t.policies.insert(w, policy('default', `p-${i}`, { kind: 'HTTPRoute', name: `r-${i}` }, { limits: {} }))
    }
  })
  return t
}

async function routeChanges(n: number, changes: number, runs: number): Promise<{ us: number; rows: number; rebuildMs: number }> {
  const t = await populate(n)
  const top = topologyOf(t, 'inc')
  await top.sync()
  // rows written per change: the graph tables' change iterators
  const start = t.db.readTxn()
  const { nodes, links, declarations, attachments } = top.tables
  const iters: Array<ChangeIterator<unknown>> = [
    nodes.changes(start),
    links.changes(start),
    declarations.changes(start),
    attachments.changes(start),
  ]
  for (const it of iters) [...it.next(start)[0]] // the graph as built: drained, not counted
  let edit = 0
  const perChange: number[] = []
  let rows = 0
  let rowChanges = 0
  for (let r = 0; r < runs; r++) {
    forceGc()
    const s = performance.now()
    for (let c = 0; c < changes; c++) {
      const i = (edit * 7919) % n
      edit++
      await t.db.write(t.routes, (w) => {
        t.routes.insert(w, routeOf(i, edit))
      })
      await top.sync()
    }
    perChange.push(((performance.now() - s) * 1000) / changes)
    const txn = t.db.readTxn()
    for (const it of iters) rows += [...it.next(txn)[0]].length
    rowChanges += changes
  }
  // after the incremental runs: the rebuilt graphs' change iterators would weigh on its writes
  const rebuilds: number[] = []
  for (let r = 0; r < Math.max(1, Math.min(runs, 3)); r++) {
    forceGc()
    const s = performance.now()
    const fresh = topologyOf(t, `rebuild-${r}`)
    await fresh.sync()
    rebuilds.push(performance.now() - s)
  }
  return { us: median(perChange), rows: rows / rowChanges, rebuildMs: median(rebuilds) }
}

export async function run(opts: RunOptions): Promise<Result[]> {
  const changes = opts.quick ? 200 : 1000
  const runs = opts.quick ? 3 : 5
  const small = await routeChanges(1000, changes, runs)
  const large = await routeChanges(10_000, changes, runs)
  return [
    { name: 'RouteChange_1000', unit: 'µs', value: small.us, note: '1 000 routes; write + sync of one route' },
    {
      name: 'RouteChange_10000',
      unit: 'µs',
      value: large.us,
      baseline: 'RouteChange_1000',
      baselineValue: small.us,
      note: '10 000 routes: ratio ~1 = the cost does not grow with the graph',
    },
    { name: 'RouteChange_1000_rows', unit: 'rows', value: small.rows, note: 'graph rows written or deleted per change' },
    { name: 'RouteChange_10000_rows', unit: 'rows', value: large.rows, baseline: 'RouteChange_1000_rows', baselineValue: small.rows },
    { name: 'Rebuild_10000', unit: 'ms', value: large.rebuildMs, note: 'the whole graph from scratch (policy-machinery per event)' },
  ]
}
