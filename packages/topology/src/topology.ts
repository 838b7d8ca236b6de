// Topology: a graph of nodes kept incrementally in statedb tables from the tables of its kinds.
// Invariants:
// - The graph lives in statedb tables (nodes, links, declarations, attachments), so a view reads one
//   snapshot: it is immutable for its read txn, and a writer never disturbs a reader.
// - sync() applies the changes of the input tables since the last sync in one write txn. An input
//   object's nodes, the link declarations its nodes make (parents(child) / children(parent), by
//   locator) and its policy attachments carry its source id and are replaced together.
// - A node's locator is policy-machinery's: a section's is its object's locator and `#<section>`
//   (`gateway.gateway.networking.k8s.io:ns/gw#http`), whatever the section's kind.
// - Every node may declare links, policies too (policy-machinery links all nodes alike); a policy is
//   also attached to its targets (attachments), which are not links.
// - A declaration is resolved when it is written: the locator it names becomes links to the node, or
//   to those of the named object's sections of the link's kind that `accepts` admits. When a node
//   appears, changes or goes, the declarations of other objects naming it are resolved again (an
//   index finds them). So a change costs O(its links), never a rebuild, and reads follow stored links
//   only (no candidate filtering at read time: a Gateway's 64 listeners do not each test its routes).
// - A throwing `sections`, `parents`, `children`, `accepts` or `targetRefs`, and two sections of one
//   object with one name, are an error of the object being processed (errors() names it); it keeps
//   its node, loses that link (or the second section), and is processed again with backoff.
// - The kinds' graph (links, and each object kind to the section kinds it has shown) only grows;
//   while it has no cycle the nodes' graph cannot have one, so a view's cycle() costs nothing then.

import { ConfigError } from './errors.ts'
import {
  DB,
  Table,
  backoffDelay,
  defineIndex,
  resolveRetry,
  waitAny,
  type ChangeIterator,
  type RetryOptions,
  type ReadTxn,
  type Watch,
  type WriteTxn,
} from '@statewright/statedb'
import {
  targetRefLocators,
  type LinkDefinition,
  type NodeRole,
  type PolicyKind,
  type Section,
  type TargetableKind,
  type TopologyDefinition,
  type TopologyNode,
} from './define.ts'
import { locator, groupOfApiVersion } from './locator.ts'
import { TopologyView } from './view.ts'
import type { Attachment, Declaration, GraphTables, StoredLink } from './rows.ts'

/** An input object whose processing threw. */
export interface TopologyError {
  source: string
  object: string
  error: string
  attempts: number
  retryAt: number
}

export interface TopologyOptions {
  db: DB
  /** Prefix of the graph's table names (default "topology"). */
  name?: string
  /** Backoff of failing objects (default: the shared DEFAULT_RETRY, 100 ms doubling to 30 s, jitter 0.2). */
  retry?: RetryOptions
}

type KindEntry = { def: TargetableKind | PolicyKind; table: Table<any>; role: NodeRole }

const str = (k: unknown) => (typeof k === 'string' ? k : JSON.stringify(k))

export class Topology {
  readonly name: string
  readonly def: TopologyDefinition
  readonly tables: GraphTables
  private readonly db: DB
  private readonly kinds: KindEntry[]
  private iters: ChangeIterator<any>[] | undefined
  private readonly errs = new Map<string, TopologyError & { kind: number; key: unknown }>()
  private readonly retry: Required<RetryOptions>
  /** kind -> the kinds it links to or has sections of (grows only); and whether it had a cycle when last counted. */
  private readonly kindEdges = new Map<string, Set<string>>()
  private kindEdgeCount = 0
  private kindCycle: { edges: number; cyclic: boolean } | undefined

  constructor(def: TopologyDefinition, o: TopologyOptions) {
    this.def = def
    this.db = o.db
    this.name = o.name ?? 'topology'
    this.retry = resolveRetry(o.retry, `topology "${this.name}"`)
    this.kinds = []
    const entry = (role: NodeRole) => (k: TargetableKind | PolicyKind) => {
      if (!k.table)
        throw new ConfigError(
          `topology "${this.name}": kind "${k.kind}" has no table (give one, or watch the kind in the StateOfWorldController)`,
        )
      this.kinds.push({ def: k, table: k.table, role })
    }
    def.targetables.forEach(entry('targetable'))
    ;(def.objects ?? []).forEach(entry('object'))
    ;(def.policies ?? []).forEach(entry('policy'))
    for (const l of def.links) this.addKindEdge(l.from, l.to)
    const nodes = new Table<TopologyNode>({
      name: `${this.name}-nodes`,
      primary: defineIndex({ name: 'locator', key: (n: TopologyNode) => n.locator, unique: true }),
      indexes: [
        defineIndex({ name: 'source', key: (n: TopologyNode) => n.source }),
        defineIndex({ name: 'owner', keys: (n: TopologyNode) => (n.owner ? [n.owner] : []) }),
        defineIndex({ name: 'kind', key: (n: TopologyNode) => n.kind }),
      ],
    })
    const links = new Table<StoredLink>({
      name: `${this.name}-links`,
      primary: defineIndex({ name: 'id', key: (l: StoredLink) => l.id, unique: true }),
      indexes: [
        defineIndex({ name: 'parent', key: (l: StoredLink) => l.parent }),
        defineIndex({ name: 'child', key: (l: StoredLink) => l.child }),
        defineIndex({ name: 'via', key: (l: StoredLink) => l.via }),
        defineIndex({ name: 'source', key: (l: StoredLink) => l.source }),
      ],
    })
    const declarations = new Table<Declaration>({
      name: `${this.name}-declarations`,
      primary: defineIndex({ name: 'id', key: (d: Declaration) => d.id, unique: true }),
      indexes: [
        defineIndex({ name: 'target', key: (d: Declaration) => d.target }),
        defineIndex({ name: 'source', key: (d: Declaration) => d.source }),
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
    this.tables = { nodes, links, declarations, attachments }
    this.db.register(nodes, links, declarations, attachments)
  }

  /** The graph at a snapshot (default: now). */
  view(txn: ReadTxn = this.db.readTxn()): TopologyView {
    return new TopologyView(this.def, this.tables, txn, this.kindsMayCycle())
  }

  private addKindEdge(from: string, to: string): void {
    let tos = this.kindEdges.get(from)
    if (!tos) this.kindEdges.set(from, (tos = new Set()))
    if (!tos.has(to)) {
      tos.add(to)
      this.kindEdgeCount++
    }
  }

  /** Whether the kinds' graph has a cycle (recounted only when it grew): without one, no node cycle can exist. */
  private kindsMayCycle(): boolean {
    if (this.def.allowLoops) return false
    if (this.kindCycle?.edges === this.kindEdgeCount) return this.kindCycle.cyclic
    const state = new Map<string, 1 | 2>() // 1: on the stack, 2: done
    const visit = (k: string): boolean => {
      const st = state.get(k)
      if (st) return st === 1
      state.set(k, 1)
      for (const to of this.kindEdges.get(k) ?? []) if (visit(to)) return true
      state.set(k, 2)
      return false
    }
    let cyclic = false
    for (const k of this.kindEdges.keys()) if (visit(k)) cyclic = true
    this.kindCycle = { edges: this.kindEdgeCount, cyclic }
    return cyclic
  }

  /** Input tables (their changes are what sync() applies). */
  inputs(): Table<any>[] {
    return this.kinds.map((k) => k.table)
  }

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
      const { nodes, links, declarations, attachments } = this.tables
      await this.db.write([nodes, links, declarations, attachments], (w) => {
        for (const x of work) this.process(w, x.kind, x.key, x.obj, now)
      })
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

  private q<T>(w: WriteTxn, table: Table<T>, index: string, key: string): T[] {
    return table.list(w, table.indexNamed(index)!.query(key as never)).toArray()
  }

  /** The nodes a declared locator stands for, of a kind: the node, or the object's sections of that kind. */
  private resolveKey(w: WriteTxn, key: string, kind: string): TopologyNode[] {
    const { nodes } = this.tables
    const n = nodes.get(w, nodes.primary.query(key as never))
    if (n && n.kind === kind) return [n]
    return this.q(w, nodes, 'owner', key).filter((x) => x.kind === kind)
  }

  /** Replaces the links of one declaration by its resolution now. */
  private resolve(w: WriteTxn, d: Declaration, errors: string[]): void {
    const { nodes, links } = this.tables
    for (const l of this.q(w, links, 'via', d.id)) links.delete(w, l)
    const def = this.def.links[d.link]!
    const self = nodes.get(w, nodes.primary.query(d.node as never))
    if (!self) return
    for (const other of this.resolveKey(w, d.target, d.side === 'parents' ? def.from : def.to)) {
      const [parent, child] = d.side === 'parents' ? [other, self] : [self, other]
      let ok = true
      if (def.accepts) {
        try {
          ok = def.accepts(parent, child)
        } catch (err) {
          errors.push(
            `link ${def.from} -> ${def.to} (accepts ${parent.locator} -> ${child.locator}): ${(err as Error)?.message ?? String(err)}`,
          )
          ok = false
        }
      }
      if (ok)
        links.insert(w, {
          id: `${d.id}\u0000${parent.locator}\u0000${child.locator}`,
          link: d.link,
          parent: parent.locator,
          child: child.locator,
          source: d.source,
          via: d.id,
        })
    }
  }

  private process(w: WriteTxn, kind: number, key: unknown, obj: unknown, now: number): void {
    const { nodes, links, declarations, attachments } = this.tables
    const entry = this.kinds[kind]!
    const source = `${entry.table.name}/${str(key)}`
    const oldNodes = this.q(w, nodes, 'source', source)
    for (const n of oldNodes) nodes.delete(w, n)
    for (const l of this.q(w, links, 'source', source)) links.delete(w, l)
    for (const d of this.q(w, declarations, 'source', source)) declarations.delete(w, d)
    for (const a of this.q(w, attachments, 'source', source)) attachments.delete(w, a)
    const errors: string[] = []
    const guard = <T>(what: string, fn: () => T, fallback: T): T => {
      try {
        return fn()
      } catch (err) {
        errors.push(`${what}: ${(err as Error)?.message ?? String(err)}`)
        return fallback
      }
    }
    const made: TopologyNode[] = []
    if (obj !== undefined) {
      const o = obj as { apiVersion?: string; metadata?: { name?: string; namespace?: string } }
      const group = entry.def.group ?? groupOfApiVersion(o.apiVersion)
      const ns = o.metadata?.namespace
      const name = o.metadata?.name ?? str(key)
      const main: TopologyNode = {
        locator: locator({ kind: entry.def.kind, group, name, ...(ns ? { namespace: ns } : {}) }),
        kind: entry.def.kind,
        group,
        name,
        ...(ns ? { namespace: ns } : {}),
        object: obj,
        role: entry.role,
        policy: entry.role === 'policy',
        source,
      }
      made.push(main)
      if (entry.role === 'policy') {
        const def = entry.def as PolicyKind
        const targets = guard('targetRefs', () => (def.targetRefs ? def.targetRefs(obj) : targetRefLocators(obj as never)), [] as string[])
        made[0] = { ...main, targets }
        for (const t of new Set(targets))
          attachments.insert(w, { id: `${main.locator}\u0000${t}`, policy: main.locator, target: t, source })
      } else {
        const def = entry.def as TargetableKind
        const sections = def.sections ? guard('sections', () => def.sections!(obj), [] as Section[]) : []
        const seen = new Map<string, string>()
        for (const s of sections) {
          // policy-machinery's locator: the object's, then #section (so one name per object)
          const other = seen.get(s.name)
          if (other !== undefined) {
            errors.push(`sections: two sections are named "${s.name}" (kinds ${other} and ${s.kind}); the second is left out`)
            continue
          }
          seen.set(s.name, s.kind)
          this.addKindEdge(entry.def.kind, s.kind)
          made.push({
            locator: `${main.locator}#${s.name}`,
            kind: s.kind,
            group: s.group ?? group,
            name,
            ...(ns ? { namespace: ns } : {}),
            section: s.name,
            object: s.object,
            owner: main.locator,
            role: entry.role,
            policy: false,
            source,
          })
        }
      }
      for (const n of made) nodes.insert(w, n)
      const declare = (link: number, side: 'parents' | 'children', node: string, target: string) => {
        const d: Declaration = { id: `${source}\u0000${link}\u0000${side}\u0000${node}\u0000${target}`, link, side, node, target, source }
        declarations.insert(w, d)
        this.resolve(w, d, errors)
      }
      for (const n of made) {
        if (n.owner)
          links.insert(w, { id: `\u0000${n.owner}\u0000${n.locator}`, link: -1, parent: n.owner, child: n.locator, source, via: '' })
        this.def.links.forEach((l: LinkDefinition, i) => {
          if (l.to === n.kind && l.parents)
            for (const p of guard(`link ${l.from} -> ${l.to} (parents of ${n.locator})`, () => l.parents!(n), []))
              declare(i, 'parents', n.locator, p)
          if (l.from === n.kind && l.children)
            for (const c of guard(`link ${l.from} -> ${l.to} (children of ${n.locator})`, () => l.children!(n), []))
              declare(i, 'children', n.locator, c)
        })
      }
    }
    // declarations of other objects that name a node of this one (or the object) resolve again
    const names = new Set<string>()
    for (const n of [...oldNodes, ...made]) names.add(n.locator)
    for (const name of names) for (const d of this.q(w, declarations, 'target', name)) if (d.source !== source) this.resolve(w, d, errors)
    if (obj === undefined) {
      this.errs.delete(source)
      return
    }
    if (errors.length === 0) {
      this.errs.delete(source)
      return
    }
    const prev = this.errs.get(source)
    const attempts = (prev?.attempts ?? 0) + 1
    const delay = backoffDelay(attempts, this.retry)
    this.errs.set(source, { source, object: made[0]!.locator, error: errors.join('; '), attempts, retryAt: now + delay, kind, key })
  }
}
