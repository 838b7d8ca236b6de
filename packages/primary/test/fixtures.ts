// Fixtures of the PrimaryController tests: in-memory primaries and an in-memory secondary target
// whose observed table is written as the target changes (as a reflector would).
import { DB, Table, defineIndex, setValidation } from '@statewright/statedb'
import {
  PrimaryController,
  ownerKeyLabelValue,
  ownerStampKeys,
  type EventSink,
  type OwnerStamps,
  type PrimaryControllerOptions,
  type SecondaryTarget,
  type SecondaryWriteResult,
} from '@statewright/primary'

setValidation(true)

export interface Prim {
  key: string
  revision: number
  value: { spec: { n: number }; status?: unknown }
}
export interface Obj {
  kind: string
  name: string
  version: number
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }
  data: unknown
}

export const primTable = () =>
  new Table<Prim>({ name: 'prims', primary: defineIndex<Prim, string>({ name: 'key', key: (p) => p.key, unique: true }) })
export const objTable = () =>
  new Table<Obj>({ name: 'objs', primary: defineIndex<Obj, string>({ name: 'name', key: (o) => o.name, unique: true }) })

/** A target keeping objects in a Map and mirroring them into an observed table (a reflector's view). */
export class MemTarget implements SecondaryTarget<Obj> {
  readonly store = new Map<string, Obj>()
  private version = 0
  writes = 0
  constructor(
    private db: DB,
    private observed: Table<Obj>,
  ) {}
  kindOf(s: Obj) {
    return s.kind
  }
  id(s: Obj) {
    return s.name
  }
  describe(s: Obj) {
    return `default/${s.name}`
  }
  stampsOf(s: Obj) {
    return s.metadata
  }
  versionOf(s: Obj) {
    return String(s.version)
  }
  withStamps(s: Obj, st: OwnerStamps): Obj {
    return {
      ...s,
      metadata: { labels: { ...s.metadata.labels, ...st.labels }, annotations: { ...s.metadata.annotations, ...st.annotations } },
    }
  }
  async set(o: Obj): Promise<Obj> {
    const v = { ...o, version: ++this.version }
    this.store.set(o.name, v)
    await this.db.write(this.observed, (t) => this.observed.insert(t, v))
    return v
  }
  async drop(name: string): Promise<void> {
    const cur = this.store.get(name)
    if (!cur) return
    this.store.delete(name)
    await this.db.write(this.observed, (t) => this.observed.delete(t, cur))
  }
  async apply(s: Obj, owned: (e: Obj) => boolean): Promise<{ result: SecondaryWriteResult; version?: string }> {
    const cur = this.store.get(s.name)
    if (cur && !owned(cur)) return { result: 'foreign' }
    if (cur && JSON.stringify({ ...cur, version: 0 }) === JSON.stringify({ ...s, version: 0 }))
      return { result: 'unchanged', version: String(cur.version) }
    this.writes++
    const v = await this.set(s)
    return { result: cur ? 'updated' : 'created', version: String(v.version) }
  }
  async delete(s: Obj, owned: (e: Obj) => boolean): Promise<boolean> {
    const cur = this.store.get(s.name)
    if (!cur || !owned(cur)) return false
    await this.drop(s.name)
    return true
  }
}

export class Events implements EventSink {
  readonly list: Array<{ type: string; name: string | undefined; namespace: string | undefined; reason: string; message: string }> = []
  normal(o: any, reason: string, message: string) {
    this.list.push({ type: 'Normal', name: o.metadata?.name, namespace: o.metadata?.namespace, reason, message })
  }
  warning(o: any, reason: string, message: string) {
    this.list.push({ type: 'Warning', name: o.metadata?.name, namespace: o.metadata?.namespace, reason, message })
  }
}

export function setup(over: Partial<PrimaryControllerOptions<Prim>> = {}) {
  const prims = primTable()
  const observed = objTable()
  const db = new DB({ tables: [prims, observed] })
  const target = new MemTarget(db, observed)
  const events = new Events()
  const statuses = new Map<string, unknown>()
  const calls: string[] = []
  const c = new PrimaryController<Prim>({
    name: 'test',
    kind: 'App',
    db,
    primaries: prims,
    events,
    eventNamespace: 'apps',
    secondaries: [{ kinds: ['Thing'], target, observed }],
    status: {
      writeStatus: async (p, status) => {
        statuses.set(p.key, status)
        // a status write changes the primary (as KvStatusWriter does), not its spec
        await db.write(prims, (t) => {
          const cur = prims.get(t, prims.primary.query(p.key))
          if (cur) prims.insert(t, { ...cur, revision: cur.revision + 1, value: { ...cur.value, status } })
        })
      },
    },
    sync: (p) => {
      calls.push(p.key)
      return {
        secondaries: [
          { kind: 'Thing', name: `thing-${ownerKeyLabelValue(p.key).toLowerCase()}`, version: 0, metadata: {}, data: p.value.spec },
        ],
        status: { seen: p.value.spec.n },
      }
    },
    retry: { minMs: 20, maxMs: 200 },
    ...over,
  })
  // both tables start uninitialized, as a reflector's do until its first list
  const t0 = db.tryWriteTxn([prims, observed])!
  const done = [prims.registerInitializer(t0, 'x'), observed.registerInitializer(t0, 'y')]
  t0.commit()
  const initialize = () =>
    db.write([prims, observed], (t) => {
      for (const d of done) d(t)
    })
  const put = (key: string, n: number) =>
    db.write(prims, (t) => {
      const cur = prims.get(t, prims.primary.query(key))
      prims.insert(t, { key, revision: (cur?.revision ?? 0) + 1, value: { spec: { n }, status: cur?.value.status } })
    })
  const del = (key: string) =>
    db.write(prims, (t) => {
      const cur = prims.get(t, prims.primary.query(key))
      if (cur) prims.delete(t, cur)
    })
  return { c, db, prims, observed, target, events, statuses, calls, initialize, put, del }
}

export const idle = async (c: PrimaryController<any>) => {
  await c.settled(AbortSignal.timeout(5000))
  return c.health().errors
}
