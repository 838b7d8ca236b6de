// A running Manager for the inspection tests (web view and CLI): Gadgets reflected from a test API
// server, one ConfigMap (or Secret) derived per Gadget, a component with a small gateway topology,
// and a table of hostile names for the escaping checks (and, exported, texts with controls and bidi
// overrides that would hide or reorder what is shown). Fast retries (100..400 ms) so an error clears
// within a second once the fault is lifted.
import { Table, defineIndex } from '@statewright/statedb'
import { Reconciler, newStatusIndex, statusPending, type Status } from '@statewright/reconciler'
import type { KubeObject } from '@statewright/k8s'
import { Manager, nullLogger } from '../src/index.ts'
import type { InspectGraph } from '@statewright/topology'
import { env, GADGET, createGadget, gadget, type Env } from './helpers.ts'

export const XSS = `<img src=x onerror="window.__xss=(window.__xss||0)+1">`
export const XSS2 = `</script><script>window.__xss=(window.__xss||0)+1</script>`
export const SECRET_VALUE = 'c2VjcmV0LXZhbHVlLTQy' // base64 of secret-value-42
/** Text that would hide or reorder what a page or a terminal shows: an RTL override (`gnp.exe` reads "exe.png"). */
export const RTL = 'rtl-\u202egnp.exe'
/** C0 controls, a terminal's colour escape, DEL. */
export const CONTROLS = 'ctl-\x00\x07\x08\t\n\r\x1b[31mred\x1b[0m\x7f'
/** C1 controls: CSI (U+009B) clears a terminal's screen as `ESC [` does, NEL, OSC. */
export const C1 = 'csi-\u009b2J\u0085\u009d'
/** An OSC-8 terminal hyperlink whose shown text hides its target. */
export const OSC8 = 'osc8-\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\'
/** Every bidi mark, embedding, override and isolate but U+202E. */
export const BIDI = 'bidi-\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069-end'
/** Controls, C1, bidi marks, overrides and isolates, U+FFFE, U+FFFF: shown escaped (`\x1b`, `\u202e`), never raw. */
export const HIDDEN_CHARS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffe\uffff]/

export interface Probe {
  name: string
  labels: Record<string, string>
  note: string
}
const byName = defineIndex<Probe, string>({ name: 'name', key: (p) => p.name, unique: true })
const byLabel = defineIndex<Probe, string>({ name: 'label', keys: (p) => Object.values(p.labels) })

/** gateway → listener → route → rule, with two policies (one Enforced on the gateway, one Overridden on a route). */
export const TOPOLOGY: InspectGraph = {
  nodes: [
    { id: 'gatewayclass.gateway.networking.k8s.io:eg', kind: 'GatewayClass', name: 'eg' },
    {
      id: 'gateway.gateway.networking.k8s.io:ns/gw-1',
      kind: 'Gateway',
      name: 'gw-1',
      namespace: 'ns',
      effective: { rateLimit: { limits: { global: { rates: [{ limit: 100, window: '1m' }] } } } },
    },
    {
      id: 'gateway.gateway.networking.k8s.io:ns/gw-1#http',
      kind: 'Listener',
      name: 'gw-1#http',
      namespace: 'ns',
      effective: { rateLimit: { limits: { global: { rates: [{ limit: 100, window: '1m' }] } } } },
    },
    {
      id: 'httproute.gateway.networking.k8s.io:ns/r',
      kind: 'HTTPRoute',
      name: 'r',
      namespace: 'ns',
      effective: { rateLimit: { limits: { route: { rates: [{ limit: 5, window: '10s' }] } } } },
    },
    {
      id: 'httproute.gateway.networking.k8s.io:ns/r#rule-1',
      kind: 'HTTPRouteRule',
      name: `r#rule-1 ${XSS}`,
      namespace: 'ns',
      effective: { rateLimit: { limits: { route: { rates: [{ limit: 5, window: '10s' }] } } } },
    },
    {
      id: 'ratelimitpolicy.kuadrant.io:ns/gw-rlp',
      kind: 'RateLimitPolicy',
      name: 'gw-rlp',
      namespace: 'ns',
      policy: true,
      status: 'Enforced',
    },
    {
      id: 'ratelimitpolicy.kuadrant.io:ns/route-rlp',
      kind: 'RateLimitPolicy',
      name: 'route-rlp',
      namespace: 'ns',
      policy: true,
      status: 'Overridden',
    },
  ],
  edges: [
    { from: 'gatewayclass.gateway.networking.k8s.io:eg', to: 'gateway.gateway.networking.k8s.io:ns/gw-1' },
    { from: 'gateway.gateway.networking.k8s.io:ns/gw-1', to: 'gateway.gateway.networking.k8s.io:ns/gw-1#http' },
    { from: 'gateway.gateway.networking.k8s.io:ns/gw-1#http', to: 'httproute.gateway.networking.k8s.io:ns/r' },
    { from: 'httproute.gateway.networking.k8s.io:ns/r', to: 'httproute.gateway.networking.k8s.io:ns/r#rule-1' },
    { from: 'ratelimitpolicy.kuadrant.io:ns/gw-rlp', to: 'gateway.gateway.networking.k8s.io:ns/gw-1', policy: true },
    { from: 'ratelimitpolicy.kuadrant.io:ns/route-rlp', to: 'httproute.gateway.networking.k8s.io:ns/r', policy: true },
  ],
}

/** A table a component reconciles with a Reconciler of its own (memos written "elsewhere"; `fail` fails). */
export interface Memo {
  id: string
  fail?: boolean
  status: Status
}
const memoStatus = newStatusIndex<Memo>((m) => m.status)
export const memo = (id: string, fail = false): Memo => ({ id, fail, status: statusPending() })

export interface InspectFixture {
  memos: Table<Memo>
  env: Env
  manager: Manager
  url: string
  probes: Table<Probe>
  /** A Gadget whose derived ConfigMap is named `cm` (or a Secret with `secret`). */
  add(name: string, spec?: { cm?: string; secret?: boolean; label?: string }): Promise<void>
  remove(name: string): Promise<void>
  stop(): Promise<void>
}

export async function inspectFixture(opts: { token?: string } = {}): Promise<InspectFixture> {
  const e = await env()
  const manager = new Manager({
    name: 'inspect',
    cluster: e.cluster,
    http: { port: 0, ...(opts.token ? { token: opts.token } : {}) },
    handleSignals: false,
    logger: nullLogger,
    retry: { minMs: 100, maxMs: 400 },
    fullReconciliationIntervalMs: 0,
  })
  const gadgets = manager.watch<KubeObject & { spec: { cm?: string; secret?: boolean; label?: string } }>(GADGET)
  manager.derive({
    name: 'gadget-objects',
    from: gadgets,
    fn: (g) => {
      const metadata = {
        name: g.spec.cm ?? `${g.metadata.name}-cm`,
        namespace: 'default',
        labels: { gadget: g.metadata.name!, ...(g.spec.label ? { note: g.spec.label } : {}) },
      }
      return g.spec.secret
        ? { apiVersion: 'v1', kind: 'Secret', metadata, data: { password: SECRET_VALUE } }
        : { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { from: g.metadata.name } }
    },
  })
  manager.add({
    name: 'topology',
    start: async () => {},
    stop: async () => {},
    health: () => ({ level: 'ok', message: 'a fixed graph', ready: true }),
    settled: async () => {},
    graph: () => TOPOLOGY,
  })
  const memos = new Table<Memo>({
    name: 'memos',
    primary: defineIndex<Memo, string>({ name: 'id', key: (m) => m.id, unique: true }),
    indexes: [memoStatus],
  })
  manager.db.register(memos)
  const memoWriter = new Reconciler<Memo>({
    name: 'memo-writer',
    db: manager.db,
    table: memos,
    statusIndex: memoStatus,
    getObjectStatus: (m) => m.status,
    setObjectStatus: (m, status) => ({ ...m, status }),
    operations: {
      update: (m) => {
        if (m.fail) throw new Error(`memo ${m.id}: disk full`)
      },
      delete: () => {},
    },
    retry: { minMs: 100, maxMs: 400 },
    onError: () => {},
  })
  manager.add({
    name: 'memos',
    start: () => memoWriter.start(),
    stop: () => memoWriter.stop(),
    health: () => memoWriter.health(),
    settled: (signal) => memoWriter.settled(signal),
    reconcilers: () => [memoWriter],
  })
  const probes = new Table<Probe>({ name: 'probes', primary: byName, indexes: [byLabel] })
  manager.db.register(probes)
  await manager.db.write(probes, (w) => {
    probes.insert(w, { name: XSS, labels: { a: XSS2 }, note: XSS })
    probes.insert(w, { name: XSS2, labels: { a: 'plain' }, note: XSS2 })
  })
  await manager.start()
  return {
    env: e,
    manager,
    url: manager.url!,
    probes,
    memos,
    add: async (name, spec = {}) => {
      await createGadget(e.cluster, gadget(name, spec))
    },
    remove: async (name) => {
      await e.cluster.request({ method: 'DELETE', path: `/apis/example.com/v1/namespaces/default/gadgets/${name}` })
    },
    stop: async () => {
      await manager.stop()
      await e.stop()
    },
  }
}
