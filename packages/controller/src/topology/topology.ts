// Topology: a graph of nodes kept incrementally in statedb tables from the tables of its kinds.
// Invariants:
// - The graph lives in three tables (nodes, links, attachments), so a view reads one snapshot: it is
//   immutable for its read txn, and a writer never disturbs a reader.
// - sync() applies the changes of the input tables since the last sync in one write txn. An input
//   object's nodes, the links its nodes declare and its policy attachments carry its source id and are
//   replaced together, so a change costs O(its links), never a rebuild.
// - Links are stored as declared (by locator, endpoints may be absent); reads resolve them through
//   indexes and drop absent endpoints, so an object arriving after what names it links without a
//   re-computation.
// - A throwing `sections`, `parents`, `children` or `targetRefs` is an error of that object (errors()
//   names it); the object keeps its node, loses that link, and is processed again with backoff.
import { DB, Table, defineIndex, waitAny, type ChangeIterator, type ReadTxn, type Watch, type WriteTxn } from '@statewright/statedb'
import { targetRefLocators, type LinkDefinition, type PolicyKind, type Section, type TargetableKind, type TopologyDefinition, type TopologyNode } from './define.ts'
import { locator, groupOfApiVersion } from './locator.ts'
import { TopologyView } from './view.ts'

/** A stored link: `parent` and `child` as declared (either may be an object standing for its sections). */
export interface StoredLink { readonly id: string; readonly link: number; readonly parent: string; readonly child: string; readonly source: string }
export interface Attachment { readonly id: string; readonly policy: string; readonly target: string; readonly source: string }

/** An input object whose processing threw. */
export interface TopologyError { source: string; object: string; error: string; attempts: number; retryAt: number }

export interface TopologyOptions {
  db: DB
  /** Prefix of the graph's table names (default "topology"). */
  name?: string
  /** Backoff of failing objects (default 100 ms doubling to 30 s). */
  retry?: { minMs?: number; maxMs?: number }
}

export interface GraphTables {
  nodes: Table<TopologyNode>
  links: Table<StoredLink>
  attachments: Table<Attachment>
}

type KindEntry = { def: TargetableKind | PolicyKind; table: Table<any>; policy: boolean }

const str = (k: unknown) => (typeof k === 'string' ? k : JSON.stringify(k))

export class Topology {
  readonly name: string
  readonly def: TopologyDefinition
  readonly tables: GraphTables
  private readonly db: DB
  private readonly kinds: KindEntry[]
  private iters: ChangeIterator<any>[] | undefined
  private readonly errs = new Map<string, TopologyError & { kind: number; key: unknown }>()
  private readonly retry: { minMs: number; maxMs: number }

  constructor(def: TopologyDefinition, o: TopologyOptions) {
    this.def = def
    this.db = o.db
    this.name = o.name ?? 'topology'
    this.retry = { minMs: o.retry?.minMs ?? 100, maxMs: o.retry?.maxMs ?? 30_000 }
    this.kinds = []
    const entry = (policy: boolean) => (k: TargetableKind | PolicyKind) => {
      if (!k.table) throw new Error(`topology "${this.name}": kind "${k.kind}" has no table (give one, or watch the kind in the StateOfWorldController)`)
      this.kinds.push({ def: k, table: k.table, policy })
    }
    def.targetables.forEach(entry(false))
    ;(def.objects ?? []).forEach(entry(false))
    ;(def.policies ?? []).forEach(entry(true))
    const nodes = new Table<TopologyNode>({
      name: `${this.name}-nodes`,
      primary: defineIndex({ name: 'locator', key: (n: TopologyNode) => n.locator, unique: true }),
      indexes: [
        defineIndex({ name: 'source', key: (n: TopologyNode) => n.source }),
        defineIndex({ name: 'owner', keys: (n: TopologyNode) => (n.owner ? [n.owner] : []) }),
        // a section is also found by "<owner>#<section>" (a policy's targetRef with sectionName)
        defineIndex({ name: 'alias', keys: (n: TopologyNode) => (n.owner && n.section ? [`${n.owner}#${n.section}`] : []) }),
        defineIndex({ name: 'kind', key: (n: TopologyNode) => n.kind }),
      ],
    })
    const links = new Table<StoredLink>({
      name: `${this.name}-links`,
      primary: defineIndex({ name: 'id', key: (l: StoredLink) => l.id, unique: true }),
      indexes: [
        defineIndex({ name: 'parent', key: (l: StoredLink) => l.parent }),
        defineIndex({ name: 'child', key: (l: StoredLink) => l.child }),
        defineIndex({ name: 'source', key: (l: StoredLink) => l.source }),
      ],
    })
    const attachments = new Table<Attachment>({
      name: `${this.name}-attachments`,
      primary: defineIndex({ name: 'id', key: (a: Attachment) => a.id, unique: true }),
      indexes: [
        defineIndex({ name: 'target', key: (a: Attachment) => a.target }),
        defineIndex({ name: 'source', key: (a: Attachment) => a.source }),
      ],
    })
    this.tables = { nodes, links, attachments }
    this.db.register(nodes, links, attachments)
  }

  /** The graph at a snapshot (default: now). */
  view(txn: ReadTxn = this.db.readTxn()): TopologyView {
    return new TopologyView(this.def, this.tables, txn)
  }

  /** Input tables (their changes are what sync() applies). */
  inputs(): Table<any>[] { return this.kinds.map((k) => k.table) }

  /** Objects whose processing threw, with their errors and next retry. */
  errors(): TopologyError[] {
    return [...this.errs.values()].map(({ kind: _k, key: _key, ...e }) => e)
  }

  /**
   * Applies every input change (and due retry) since the last sync in one write txn. Returns the
   * number of objects processed and watches that close when there is more to do.
   */
  async sync(now = Date.now()): Promise<{ processed: number; watches: Watch[]; nextRetryAt: number | undefined }> {
    const rtxn = this.db.readTxn()
    this.iters ??= this.kinds.map((k) => k.table.changes(rtxn))
    const work: Array<{ kind: number; key: unknown; obj: unknown }> = []
    const watches: Watch[] = []
    this.iters.forEach((it, i) => {
      const [changes, w] = it.next(rtxn)
      watches.push(w)
      const t = this.kinds[i]!.table
      for (const c of changes) work.push({ kind: i, key: t.primary.keyOf(c.object), obj: c.deleted ? undefined : c.object })
    })
    for (const e of this.errs.values()) {
      if (e.retryAt > now) continue
      const t = this.kinds[e.kind]!.table
      if (work.some((x) => x.kind === e.kind && str(x.key) === str(e.key))) continue
      work.push({ kind: e.kind, key: e.key, obj: t.get(rtxn, t.primary.query(e.key as never)) })
    }
    if (work.length) {
      const { nodes, links, attachments } = this.tables
      await this.db.write([nodes, links, attachments], (w) => { for (const x of work) this.process(w, x.kind, x.key, x.obj, now) })
    }
    let next: number | undefined
    for (const e of this.errs.values()) next = next === undefined ? e.retryAt : Math.min(next, e.retryAt)
    return { processed: work.length, watches, nextRetryAt: next }
  }

  /** Syncs until stopped: for tests and standalone use (a StateOfWorldController calls sync() itself). */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const r = await this.sync()
      if (r.processed) continue
      const timeout = r.nextRetryAt === undefined ? undefined : AbortSignal.timeout(Math.max(1, r.nextRetryAt - Date.now()))
      await waitAny(r.watches, timeout ? AbortSignal.any([signal, timeout]) : signal).catch(() => {})
    }
  }

  private process(w: WriteTxn, kind: number, key: unknown, obj: unknown, now: number): void {
    const { nodes, links, attachments } = this.tables
    const entry = this.kinds[kind]!
    const source = `${entry.table.name}/${str(key)}`
    for (const n of nodes.list(w, nodes.indexNamed('source')!.query(source)).toArray()) nodes.delete(w, n)
    for (const l of links.list(w, links.indexNamed('source')!.query(source)).toArray()) links.delete(w, l)
    for (const a of attachments.list(w, attachments.indexNamed('source')!.query(source)).toArray()) attachments.delete(w, a)
    if (obj === undefined) { this.errs.delete(source); return }
    const errors: string[] = []
    const guard = <T>(what: string, fn: () => T, fallback: T): T => {
      try { return fn() } catch (err) { errors.push(`${what}: ${(err as Error)?.message ?? String(err)}`); return fallback }
    }
    const o = obj as { apiVersion?: string; metadata?: { name?: string; namespace?: string } }
    const group = entry.def.group ?? groupOfApiVersion(o.apiVersion)
    const ns = o.metadata?.namespace
    const main: TopologyNode = {
      locator: locator({ kind: entry.def.kind, group, name: o.metadata?.name ?? str(key), ...(ns ? { namespace: ns } : {}) }),
      kind: entry.def.kind, group, name: o.metadata?.name ?? str(key), ...(ns ? { namespace: ns } : {}),
      object: obj, policy: entry.policy, source,
    }
    const made: TopologyNode[] = [main]
    if (entry.policy) {
      const def = entry.def as PolicyKind
      const targets = guard('targetRefs', () => (def.targetRefs ? def.targetRefs(obj) : targetRefLocators(obj as never)), [] as string[])
      made[0] = { ...main, targets }
      for (const t of new Set(targets)) attachments.insert(w, { id: `${main.locator}\u0000${t}`, policy: main.locator, target: t, source })
    } else {
      const def = entry.def as TargetableKind
      const sections = def.sections ? guard('sections', () => def.sections!(obj), [] as Section[]) : []
      for (const s of sections) {
        const sg = s.group ?? group
        made.push({
          locator: locator({ kind: s.kind, group: sg, name: main.name, ...(ns ? { namespace: ns } : {}), section: s.name }),
          kind: s.kind, group: sg, name: main.name, ...(ns ? { namespace: ns } : {}), section: s.name,
          object: s.object, owner: main.locator, policy: false, source,
        })
      }
    }
    const put = (link: number, parent: string, child: string) => links.insert(w, { id: `${link}\u0000${parent}\u0000${child}`, link, parent, child, source })
    for (const n of made) {
      nodes.insert(w, n)
      if (n.owner) put(-1, n.owner, n.locator)
      this.def.links.forEach((l: LinkDefinition, i) => {
        if (l.to === n.kind && l.parents) for (const p of guard(`link ${l.from} -> ${l.to} (parents of ${n.locator})`, () => l.parents!(n), [])) put(i, p, n.locator)
        if (l.from === n.kind && l.children) for (const c of guard(`link ${l.from} -> ${l.to} (children of ${n.locator})`, () => l.children!(n), [])) put(i, n.locator, c)
      })
    }
    if (errors.length === 0) { this.errs.delete(source); return }
    const prev = this.errs.get(source)
    const attempts = (prev?.attempts ?? 0) + 1
    const delay = Math.min(this.retry.maxMs, this.retry.minMs * 2 ** (attempts - 1))
    this.errs.set(source, { source, object: main.locator, error: errors.join('; '), attempts, retryAt: now + delay, kind, key })
  }
}
